package fleetbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Defaults for the zero fields of Config. On a 2-CPU machine the whole run
// takes under a minute and a half and each round a few seconds: appends
// without a policy go about ten times as fast as decisions, hence the
// larger RawAppends.
const (
	DefaultPartitions   = 12
	DefaultWriters      = 64
	DefaultJournals     = 120
	DefaultObservations = 6000
	DefaultRawAppends   = 30000
	// DefaultRoundTimeout bounds one round, starting and stopping its
	// cluster included: a group that never settles or a decision that
	// never comes fails the run instead of stalling it.
	DefaultRoundTimeout = 3 * time.Minute
)

// AutoDaemonCPU is the CPU budget the bench command gives each daemon
// where control groups can be made: little enough that three daemons'
// deciding, not the servers sharing this machine, is what runs out.
const AutoDaemonCPU = 0.1

// MaxDaemonCPU is the largest Config.DaemonCPU: a daemon's budget is a
// part of a machine's CPUs, and this is a machine's worth.
const MaxDaemonCPU = 64

// Nodes is the size of every round's cluster, and the most daemons a round
// runs: one daemon per node, as a fleet deploys them.
const Nodes = 3

// Config says how much work each round does. The zero value of every field
// except Dir means its default, so Config{Dir: dir} is complete.
type Config struct {
	// Dir is a scratch directory. Each round keeps its cluster in a fresh
	// subdirectory of it and removes that when done. Required.
	Dir string `bench:"-"`
	// Partitions is how many partitions the journals are hashed into for
	// the policy's group, at least Nodes so that every daemon has a share.
	// A multiple of 6 gives 1, 2 and 3 daemons equal shares. Zero means
	// DefaultPartitions.
	Partitions int
	// Writers is the number of concurrent appending goroutines of every
	// round. Zero means DefaultWriters.
	Writers int
	// Journals is the number of journals appended to; journal j is
	// written through node j mod Nodes. Zero means DefaultJournals.
	Journals int
	// Observations is the number of observations appended, and decided,
	// in each policy round. Zero means DefaultObservations.
	Observations int
	// RawAppends is the number of observations appended in raw/append.
	// Zero means DefaultRawAppends.
	RawAppends int
	// RoundTimeout bounds each round. Zero means DefaultRoundTimeout.
	RoundTimeout time.Duration
	// DaemonCPU, when above 0, runs each policy subscriber as a process of
	// its own, connected to its node over loopback and limited to this
	// many CPUs (a Linux cpu control group): each daemon then has a CPU
	// budget of its own, as on a small machine of its own, and the
	// nodes and writers share what is left. The program running the
	// rounds must hand MemberCommand to MemberMain, and may need to be
	// root to make control groups. Zero runs the subscribers in this
	// process, sharing every CPU.
	DaemonCPU float64
	// Progress, when set, receives one line per round as it finishes.
	Progress io.Writer
	// Logger receives the policy subscribers' logs; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default spelled out; callers
// set Dir.
func DefaultConfig() Config {
	return Config{
		Partitions:   DefaultPartitions,
		Writers:      DefaultWriters,
		Journals:     DefaultJournals,
		Observations: DefaultObservations,
		RawAppends:   DefaultRawAppends,
		RoundTimeout: DefaultRoundTimeout,
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	p := benchkit.NewProblems("fleetbench")
	if c.Dir == "" {
		p.Addf("no Dir (want a scratch directory for the benchmark's clusters)")
	}
	p.NotNegative("Partitions", c.Partitions, DefaultPartitions)
	if c.Partitions > 0 && c.Partitions < Nodes || c.Partitions > eventstore.MaxPartitions {
		p.Addf("Partitions %d is out of range (want %d to %d, so that each of up to %d daemons has a share)",
			c.Partitions, Nodes, eventstore.MaxPartitions, Nodes)
	}
	p.NotNegative("Writers", c.Writers, DefaultWriters)
	p.NotNegative("Journals", c.Journals, DefaultJournals)
	p.NotNegative("Observations", c.Observations, DefaultObservations)
	p.NotNegative("RawAppends", c.RawAppends, DefaultRawAppends)
	if c.RoundTimeout < 0 {
		p.Addf("RoundTimeout %s is negative (want a positive duration, or 0 for %s)", c.RoundTimeout, DefaultRoundTimeout)
	}
	if c.DaemonCPU < 0 || c.DaemonCPU > MaxDaemonCPU || math.IsNaN(c.DaemonCPU) {
		p.Addf("DaemonCPU %v is out of range (want 0.01 to %v CPUs, or 0 for subscribers in this process)", c.DaemonCPU, MaxDaemonCPU)
	} else if c.DaemonCPU > 0 && c.DaemonCPU < 0.01 {
		p.Addf("DaemonCPU %v is too small to schedule (want 0.01 to %v CPUs, or 0 for subscribers in this process)", c.DaemonCPU, MaxDaemonCPU)
	}
	return p.Err()
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	return benchkit.Defaults(c, DefaultConfig())
}

// Names of the results.
const (
	nameRawAppend = "raw/append"
	nameOneDaemon = "policy/1-daemon"
	nameWholeLog  = "policy/whole-log"
)

// policyName is the name of the round with k daemons.
func policyName(k int) string {
	if k == 1 {
		return nameOneDaemon
	}
	return fmt.Sprintf("policy/%d-daemons", k)
}

// round is what one round measured; report turns the rounds into the
// suite's report.
type round struct {
	// Name says what was measured, e.g. "policy/2-daemons".
	Name string
	// Daemons is the number of policy subscribers, 0 for raw/append.
	Daemons int
	// Partitions is the number of partitions the subscribers share, 0
	// for raw/append and for policy/whole-log, whose one subscriber
	// reads the whole log.
	Partitions int
	// Count is the number of observations appended; in a policy round,
	// every one of them was decided.
	Count int
	// Decided is the number of observations the Decided hooks heard a
	// decision on, each counted once; 0 for raw/append.
	Decided int
	// Writers and Journals are the concurrency of the appends.
	Writers  int
	Journals int
	// Elapsed is the timed span: from the first append to the last
	// append's acknowledgement (raw/append), or to the last decision heard
	// (policy rounds).
	Elapsed time.Duration
	// PerSecond is Count over Elapsed: appends per second for raw/append,
	// decisions per second for a policy round.
	PerSecond float64
	// AppendP50 and AppendP99 are percentiles of one append's latency.
	AppendP50 time.Duration
	AppendP99 time.Duration
	// DecisionP50 and DecisionP99 are percentiles of the time from an
	// observation's append starting to its decision heard; 0 for
	// raw/append.
	DecisionP50 time.Duration
	DecisionP99 time.Duration
	// BacklogElapsed is the time the subscribers took to decide on a
	// backlog of as many observations again, appended while their
	// handlers were held back, from letting them go to the last decision
	// heard; BacklogPerSecond is Count over it: how fast the daemons
	// decide when decisions are the bottleneck, not the writers.
	BacklogElapsed   time.Duration
	BacklogPerSecond float64
	// BacklogVsOneDaemon is BacklogPerSecond over policy/1-daemon's.
	BacklogVsOneDaemon float64
	// VsOneDaemon is PerSecond over policy/1-daemon's, VsRaw PerSecond
	// over raw/append's; 0 where there is nothing to compare.
	VsOneDaemon float64
	VsRaw       float64
	// Retries counts appends sent again after an error (a cluster moving a
	// leader); the record's id makes a retry append nothing twice.
	Retries int
	// Moves counts the partition changes the subscribers heard after the
	// group had settled, while the round was timed: a member that missed
	// its heartbeats under load loses its partitions for a while.
	Moves int
	// Restarts counts the subscribers started again after stopping on an
	// error, at any time in the round.
	Restarts int
	// Startup is the time taken to open the round's cluster and create its
	// journals; Settle the time the group took to share its partitions
	// evenly, from starting the subscribers.
	Startup time.Duration
	Settle  time.Duration
	// DaemonCPUTime is the CPU time the round's member processes used,
	// from their start to their stop, with Config.DaemonCPU set; 0
	// otherwise.
	DaemonCPUTime time.Duration
	// Method says in words what was timed.
	Method string
}

// Run measures raw/append, the policy reading the whole log, and then the
// policy with 1, 2 and 3 daemons sharing its partitions, each
// on a cluster of its own that it removes afterwards. It fails when a
// cluster cannot start, an append keeps failing, a subscriber stops, the
// group does not settle or a decision does not come within the round's
// timeout.
func Run(ctx context.Context, cfg Config) (benchkit.Report, error) {
	if err := cfg.Validate(); err != nil {
		return benchkit.Report{}, err
	}
	cfg = cfg.withDefaults()
	if cfg.DaemonCPU > 0 {
		if err := CanLimitCPU(); err != nil {
			return benchkit.Report{}, fmt.Errorf("fleetbench: DaemonCPU %v: %w", cfg.DaemonCPU, err)
		}
	}
	started, host := time.Now(), benchkit.Here()
	r := &runner{cfg: cfg, summary: benchkit.Filler(textBytes)}
	steps := []func(context.Context) (round, error){r.rawAppend,
		func(ctx context.Context) (round, error) { return r.policy(ctx, 1, false) }}
	for k := 1; k <= Nodes; k++ {
		steps = append(steps, func(ctx context.Context) (round, error) { return r.policy(ctx, k, true) })
	}
	var rounds []round
	for _, step := range steps {
		rctx, cancel := context.WithTimeout(ctx, cfg.RoundTimeout)
		res, err := step(rctx)
		cancel()
		if err != nil {
			return benchkit.Report{}, err
		}
		// raw/append and policy/1-daemon come first, so each round's
		// ratios are known when its progress line is written.
		rounds = append(rounds, res)
		compare(rounds)
		benchkit.WriteProgress(cfg.Progress, rounds[len(rounds)-1].result(cfg))
	}
	return report(cfg, host, started, rounds), nil
}

// compare sets each policy round's ratios to raw/append and to
// policy/1-daemon.
func compare(rounds []round) {
	var raw, one round
	for _, res := range rounds {
		switch res.Name {
		case nameRawAppend:
			raw = res
		case nameOneDaemon:
			one = res
		}
	}
	for i, res := range rounds {
		if res.Daemons == 0 {
			continue
		}
		if raw.PerSecond > 0 {
			rounds[i].VsRaw = res.PerSecond / raw.PerSecond
		}
		if one.PerSecond > 0 {
			rounds[i].VsOneDaemon = res.PerSecond / one.PerSecond
		}
		if one.BacklogPerSecond > 0 {
			rounds[i].BacklogVsOneDaemon = res.BacklogPerSecond / one.BacklogPerSecond
		}
	}
}
