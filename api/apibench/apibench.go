package apibench

import (
	"cmp"
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
	DefaultClients     = 200
	DefaultRequests    = 10000
	DefaultSubscribers = 100
	DefaultEvents      = 2000
)

// DefaultAgent is the agent program launched when Config.Agent is empty: a
// shell that stays alive reading its standard input, and drops it, until
// the input is closed.
var DefaultAgent = []string{"sh", "-c", "exec cat >/dev/null"}

// Config says how much work each measurement does. The zero value of every
// field except Dir means its default, so Config{Dir: dir} is complete.
type Config struct {
	// Dir is a scratch directory. The run keeps its server and projection
	// file in a fresh subdirectory of it and removes that when done.
	// Required.
	Dir string `bench:"-"`
	// Clients is the number of concurrent HTTP clients of each API
	// measurement, and of goroutines appending in raw/append. Zero means
	// DefaultClients.
	Clients int
	// Requests is the number of requests of each API measurement, and of
	// appends in raw/append. Zero means DefaultRequests.
	Requests int
	// Subscribers is the number of concurrent event streams of
	// sse/fan-out. Zero means DefaultSubscribers.
	Subscribers int
	// Events is the number of records appended while the streams are open.
	// Zero means DefaultEvents.
	Events int
	// Agents is the number of agents launched. Each client, and each
	// goroutine of raw/append, keeps to one agent (or journal): client c
	// to agent c mod Agents. Zero means one agent per client, as when each
	// agent reports on itself. With fewer, several clients write to one
	// journal at once and the policy's decisions queue behind their
	// appends to it: with 200 clients on 4 agents, decisions took longer
	// than the API waits for them (api.DefaultDecisionWait) and
	// recordObservation answered 504.
	Agents int
	// Agent is the command of every agent launched (the generic adapter
	// runs it): a program that stays alive reading its standard input until
	// that is closed, so that every message is delivered. Empty means
	// DefaultAgent.
	Agent []string
	// Progress, when set, receives one line per measurement as it
	// finishes. The ratios are in the report only: the baseline is
	// measured last.
	Progress io.Writer

	// stopTimeout bounds the stop of one agent, and closing the runtime;
	// zero means the package's stopTimeout. Tests shorten it to see a
	// stack that cannot stop.
	stopTimeout time.Duration
}

// DefaultConfig returns a Config with every default spelled out but Agents,
// whose zero value (one agent per client) follows Clients; callers set Dir.
func DefaultConfig() Config {
	return Config{
		Clients:     DefaultClients,
		Requests:    DefaultRequests,
		Subscribers: DefaultSubscribers,
		Events:      DefaultEvents,
		Agent:       slices.Clone(DefaultAgent),
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	p := benchkit.NewProblems("apibench")
	if c.Dir == "" {
		p.Addf("no Dir (want a scratch directory for the benchmark's server and projection)")
	}
	p.NotNegative("Clients", c.Clients, DefaultClients)
	p.NotNegative("Requests", c.Requests, DefaultRequests)
	p.NotNegative("Subscribers", c.Subscribers, DefaultSubscribers)
	p.NotNegative("Events", c.Events, DefaultEvents)
	if c.Agents < 0 {
		p.Addf("Agents %d is negative (want 1 or more, or 0 for one per client)", c.Agents)
	}
	if len(c.Agent) > 0 && c.Agent[0] == "" {
		p.Addf("Agent[0] is empty (want the agent program, or no Agent for %q)", DefaultAgent)
	}
	return p.Err()
}

// withDefaults fills the zero fields that have a default.
func (c Config) withDefaults() Config {
	c = benchkit.Defaults(c, DefaultConfig())
	if c.Agents == 0 {
		c.Agents = c.Clients
	}
	return c
}

// Targets of api/recordObservation, against raw/append measured in the same
// run: a decision costs an append of its own after the observation's, so
// half the raw rate is what deciding at the pace of the log allows, and a
// p99 of a few appends is what the policy's round trip through the log
// should add.
const (
	// recordObservationRateTarget is the lowest acceptable ratio of
	// recordObservation's operations per second to raw/append's.
	recordObservationRateTarget = 0.5
	// recordObservationP99Target is the highest acceptable ratio of
	// recordObservation's p99 to raw/append's.
	recordObservationP99Target = 3.0
)

// Names of the figures and checks of a result beside the common ones.
const (
	figureConcurrency = "concurrency"
	figureRounds      = "rounds"
	figureP99Ratio    = "p99 ratio"
	figureMissing     = "missing"
	checkRateRatio    = "ops/s ratio"
	checkP99Ratio     = "p99 ratio"
)

// Names of the results.
const (
	nameRawAppend         = "raw/append"
	nameSendMessage       = "api/sendMessage"
	nameRecordObservation = "api/recordObservation"
	nameFanOut            = "sse/fan-out"
)

// Run starts the stack, measures every result in turn and stops the stack.
// It fails when the stack cannot start, a request or append fails, or an
// answer is not the one expected (a message not delivered, a decision
// other than record-only). When only stopping the stack fails, Run returns
// the report of what it measured with that error. Missing event deliveries
// are not an error: they are in the report, and so is a result below its
// target (Report.Below lists them).
func Run(ctx context.Context, cfg Config) (_ benchkit.Report, err error) {
	if err := cfg.Validate(); err != nil {
		return benchkit.Report{}, err
	}
	cfg = cfg.withDefaults()
	rep := benchkit.Report{
		Suite:   "api",
		Title:   "HTTP API vs journal store",
		Host:    benchkit.Here(),
		Started: time.Now(),
	}
	st, err := startStack(ctx, cfg)
	if err != nil {
		return benchkit.Report{}, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	startup := time.Since(rep.Started)
	r := &runner{cfg: cfg, st: st, text: benchkit.Filler(textBytes)}
	// recordObservation and its baseline take turns, rounds times each,
	// so that a slow spell of the machine falls on both alike. raw/append
	// ends each pair: the policy decides on every observation it appends,
	// and the next measurement waits for that.
	steps := []func(context.Context) (benchkit.Result, error){r.sendMessage, r.fanOut}
	for range rounds {
		steps = append(steps, r.recordObservation, r.rawAppend)
	}
	var measured []benchkit.Result
	for _, step := range steps {
		if err := st.settle(ctx); err != nil {
			return benchkit.Report{}, err
		}
		res, err := step(ctx)
		if err != nil {
			return benchkit.Report{}, err
		}
		benchkit.WriteProgress(cfg.Progress, res)
		measured = append(measured, res)
	}
	// The figures stand whether or not the stack stops cleanly.
	stopErr := st.Close()
	results, spreads := medianRounds(measured)
	rep.Results = ordered(results)
	compare(rep.Results)
	rep.Setup = append([]string{
		fmt.Sprintf("%d agents (%s), %d-byte texts; latencies over every operation of a round; %s of the run starting the stack",
			cfg.Agents, strings.Join(cfg.Agent, " "), textBytes, startup.Round(100*time.Millisecond)),
		fmt.Sprintf("%s and %s measured in %d alternating rounds, each shown by its round of median rate; targets against %s of the same run",
			nameRecordObservation, nameRawAppend, rounds, nameRawAppend),
	}, spreads...)
	rep.Config = append(benchkit.SettingsOf(cfg), benchkit.Setting{Name: "textBytes", Value: textBytes},
		benchkit.Setting{Name: "eventIntervalSeconds", Value: eventInterval.Seconds()},
		benchkit.Setting{Name: "startupSeconds", Value: startup.Seconds()})
	rep.Elapsed = time.Since(rep.Started)
	return rep, stopErr
}

// rounds is how many times recordObservation and raw/append are each
// measured. On the shared 2-core machine one round of each put the rate
// ratio anywhere from 0.41 to 0.55 in three runs of the same code.
const rounds = 3

// medianRounds keeps, of the results measured more than once, the round of
// median rate, whose latencies go with it, and says what every round gave.
func medianRounds(measured []benchkit.Result) ([]benchkit.Result, []string) {
	var names []string
	byName := map[string][]benchkit.Result{}
	for _, res := range measured {
		if _, seen := byName[res.Name]; !seen {
			names = append(names, res.Name)
		}
		byName[res.Name] = append(byName[res.Name], res)
	}
	var out []benchkit.Result
	var spreads []string
	for _, name := range names {
		rs := byName[name]
		if len(rs) == 1 {
			out = append(out, rs[0])
			continue
		}
		rates := make([]string, len(rs))
		for i, res := range rs {
			rates[i] = fmt.Sprintf("%.0f", res.Rate)
		}
		spreads = append(spreads, fmt.Sprintf("%s rounds: %s %s", name, strings.Join(rates, ", "), rs[0].RateUnit))
		sorted := slices.Clone(rs)
		slices.SortStableFunc(sorted, func(a, b benchkit.Result) int { return cmp.Compare(a.Rate, b.Rate) })
		med := sorted[(len(sorted)-1)/2]
		med.Figures = append(slices.Clone(med.Figures), benchkit.Figure{Name: figureRounds, Value: float64(len(rs))})
		out = append(out, med)
	}
	return out, spreads
}

// compare gives each result with a baseline its ratios to the baseline's
// rate and p99, and judges api/recordObservation against its targets.
func compare(results []benchkit.Result) {
	rep := benchkit.Report{Results: results}
	for i, res := range results {
		v, ok := rep.Versus(res)
		if !ok {
			continue
		}
		p99Ratio := v.P99Ratio
		results[i].Ratio = v.RateRatio
		results[i].Figures = append(results[i].Figures, benchkit.Figure{Name: figureP99Ratio, Value: p99Ratio, Unit: "x"})
		if res.Name == nameRecordObservation {
			results[i].Checks = []benchkit.Check{
				{Metric: checkRateRatio, Value: results[i].Ratio, Target: recordObservationRateTarget, Unit: "x"},
				{Metric: checkP99Ratio, Value: p99Ratio, Target: recordObservationP99Target, Unit: "x", Max: true},
			}
		}
	}
}

// ordered puts the results in the report's order: the baseline first,
// then the API's, fan-out last.
func ordered(results []benchkit.Result) []benchkit.Result {
	order := []string{nameRawAppend, nameSendMessage, nameRecordObservation, nameFanOut}
	out := slices.Clone(results)
	slices.SortStableFunc(out, func(a, b benchkit.Result) int {
		return cmp.Compare(slices.Index(order, a.Name), slices.Index(order, b.Name))
	})
	return out
}

// latencies summarizes the latencies of one measurement.
func latencies(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return benchkit.Percentile(s, 0.50), benchkit.Percentile(s, 0.99)
}
