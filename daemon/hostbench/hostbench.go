package hostbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Defaults for the zero fields of Config.
const (
	DefaultMessages = 2000
	DefaultLaunches = 500
)

// DefaultAgent is the agent messages are sent to when Config.Agent is
// empty: a shell that stays alive reading its standard input, and drops
// it, until the input is closed.
var DefaultAgent = []string{"sh", "-c", "exec cat >/dev/null"}

// DefaultLaunchAgent is the agent each placed launch starts when
// Config.LaunchAgent is empty: a program that exits at once, so that the
// launches do not fill the hosts.
var DefaultLaunchAgent = []string{"true"}

// Config says how much work each measurement does. The zero value of every
// field except Dir means its default, so Config{Dir: dir} is complete.
type Config struct {
	// Dir is a scratch directory. The run keeps both daemons' data
	// directories in a fresh subdirectory of it and removes that when
	// done. Required.
	Dir string `bench:"-"`
	// Messages is the number of messages sent through each host: as many
	// through the host running the agent as through the other. Zero means
	// DefaultMessages.
	Messages int
	// Launches is the number of launches placed on each host. Zero means
	// DefaultLaunches.
	Launches int
	// Agent is the command of the agent the messages go to (the generic
	// adapter runs it): a program that stays alive reading its standard
	// input until that is closed, so that every message is delivered.
	// Empty means DefaultAgent.
	Agent []string
	// LaunchAgent is the command each placed launch starts: a program that
	// ends by itself soon after it starts. Empty means DefaultLaunchAgent.
	LaunchAgent []string
	// Progress, when set, receives one line per result once its
	// measurement is done.
	Progress io.Writer
}

// DefaultConfig returns a Config with every default spelled out; callers
// set Dir.
func DefaultConfig() Config {
	return Config{
		Messages:    DefaultMessages,
		Launches:    DefaultLaunches,
		Agent:       slices.Clone(DefaultAgent),
		LaunchAgent: slices.Clone(DefaultLaunchAgent),
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	p := benchkit.NewProblems("hostbench")
	if c.Dir == "" {
		p.Addf("no Dir (want a scratch directory for the two daemons' data directories)")
	}
	p.NotNegative("Messages", c.Messages, DefaultMessages)
	p.NotNegative("Launches", c.Launches, DefaultLaunches)
	if len(c.Agent) > 0 && c.Agent[0] == "" {
		p.Addf("Agent[0] is empty (want the agent program, or no Agent for %q)", DefaultAgent)
	}
	if len(c.LaunchAgent) > 0 && c.LaunchAgent[0] == "" {
		p.Addf("LaunchAgent[0] is empty (want the agent program, or no LaunchAgent for %q)", DefaultLaunchAgent)
	}
	return p.Err()
}

// Targets of the forwarded paths, against the local ones of the same run.
const (
	// routedP99Target is the highest acceptable ratio of a routed
	// message's p99 to a local one's: forwarding is one NATS request and
	// reply more, which should not double the tail of a delivery that
	// itself appends to the log.
	routedP99Target = 2.0
	// forwardAddsTarget is the most forwarding may add to a launch's p50:
	// a request and reply between hosts, far below the agent's own start.
	forwardAddsTarget = 50 * time.Millisecond
)

// Names of the figures and checks of a result beside the common ones.
const (
	figureP99Ratio = "p99 ratio"
	figureAddsP50  = "adds at p50"
	checkP99Ratio  = "p99 ratio"
	checkAddsP50   = "forwarding adds at p50"
)

// Names of the results.
const (
	nameMessageLocal  = "message/local"
	nameMessageRouted = "message/routed"
	nameLaunchLocal   = "launch/local"
	nameLaunchRemote  = "launch/remote"
	nameLaunchPlaced  = "launch/placed"
)

// Run opens the two hosts, measures messages and then launches, and closes
// the hosts. It fails when a host cannot open, a request fails, or an
// answer is not the one expected (a message not delivered, a launch running
// on another host than the one it was placed on). When only closing the
// hosts fails, Run returns the report of what it measured with that error.
// A result below its target is not an error: Report.Below lists them.
func Run(ctx context.Context, cfg Config) (_ benchkit.Report, err error) {
	if err := cfg.Validate(); err != nil {
		return benchkit.Report{}, err
	}
	cfg = benchkit.Defaults(cfg, DefaultConfig())
	rep := benchkit.Report{
		Suite:   "hosts",
		Title:   "two daemons on one log: forwarded vs local",
		Host:    benchkit.Here(),
		Started: time.Now(),
	}
	f, err := openFleet(ctx, cfg.Dir)
	if err != nil {
		return benchkit.Report{}, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	startup := time.Since(rep.Started)

	var results []benchkit.Result
	for _, step := range []func(context.Context, *hosts, Config) ([]benchkit.Result, error){measureMessages, measureLaunches} {
		measured, err := step(ctx, f, cfg)
		if err != nil {
			return benchkit.Report{}, err
		}
		for _, res := range measured {
			benchkit.WriteProgress(cfg.Progress, res)
		}
		results = append(results, measured...)
	}
	// The figures stand whether or not the hosts close cleanly.
	closeErr := f.Close()
	compare(results)
	rep.Results = results
	rep.Setup = []string{
		fmt.Sprintf("hosts %s (embedded NATS listening on loopback) and %s (joined to it by URL), two whole daemons in this process, each with its API on loopback; %s of the run opening them",
			hostAlpha, hostBeta, startup.Round(100*time.Millisecond)),
		fmt.Sprintf("messages to one agent (%s) on %s and launches (%s) taken by %s, each in pairs of one local and one forwarded, the order swapped every pair, so that a slow spell of the machine falls on both",
			strings.Join(cfg.Agent, " "), hostAlpha, strings.Join(cfg.LaunchAgent, " "), hostAlpha),
	}
	rep.Config = append(benchkit.SettingsOf(cfg), benchkit.Setting{Name: "startupSeconds", Value: startup.Seconds()})
	rep.Notes = []string{
		"both hosts share this machine and reach each other over loopback: a fleet of machines adds its network's round trip to every forwarded request",
	}
	rep.Elapsed = time.Since(rep.Started)
	return rep, closeErr
}

// compare gives each result with a baseline its ratio to the baseline's
// rate, its p99 ratio and what it adds at p50, and judges the forwarded
// paths against their targets.
func compare(results []benchkit.Result) {
	rep := benchkit.Report{Results: results}
	for i, res := range results {
		v, ok := rep.Versus(res)
		if !ok {
			continue
		}
		adds := res.P50 - v.Base.P50
		results[i].Ratio = v.RateRatio
		results[i].Figures = append(results[i].Figures,
			benchkit.Figure{Name: figureP99Ratio, Value: v.P99Ratio, Unit: "x"}, benchkit.Seconds(figureAddsP50, adds))
		switch res.Name {
		case nameMessageRouted:
			results[i].Checks = []benchkit.Check{{Metric: checkP99Ratio, Value: v.P99Ratio, Target: routedP99Target, Unit: "x", Max: true}}
		case nameLaunchRemote:
			results[i].Checks = []benchkit.Check{{Metric: checkAddsP50, Value: adds.Seconds(), Target: forwardAddsTarget.Seconds(), Unit: "s", Max: true}}
		}
	}
}

// serial is a result of operations made one at a time: its rate is the
// operations over the time spent in them.
func serial(name, unit string, ds []time.Duration, baseline, method string) benchkit.Result {
	var spent time.Duration
	for _, d := range ds {
		spent += d
	}
	return benchkit.Result{Name: name, Count: len(ds), Elapsed: spent, Rate: benchkit.Rate(len(ds), spent), RateUnit: unit,
		P50: benchkit.Percentile(ds, 0.50), P99: benchkit.Percentile(ds, 0.99), Baseline: baseline, Method: method}
}
