package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentjournal/agentjournal/api/apibench"
	"github.com/agentjournal/agentjournal/daemon/hostbench"
	"github.com/agentjournal/agentjournal/eventstore/storebench"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/datadir"
	"github.com/agentjournal/agentjournal/policy/fleetbench"
	"github.com/agentjournal/agentjournal/projections/projbench"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// suiteNames are the suites in the order --suite all runs them.
var suiteNames = []string{"store", "read", "api", "fleet", "hosts"}

const synopsis = "agentjournal-bench [--data DIR] [--suite store|read|api|fleet|hosts|all] [--records N] [--read-records N] [--journals N] [--writers N] [--payload BYTES] [--daemon-cpu auto|CPUS] [--json]"

const summary = `Measure the journal store against raw JetStream in one process and one run:
acknowledged single-writer appends (sync always and sync interval) against raw
publishes of the same bytes, appends across many journals from many writers,
reading one journal against a raw ordered consumer, and a scan of the whole log.
Each line gives records/s for the store and for the raw baseline measured right
beside it, their ratio and the target ratio where there is one. The two durable
append lines also race an SQLite peer (WAL, synchronous=FULL, one row per
record) in the same rounds, with the store's ratio to it and the raw
baseline's (RAW/PEER, the floor of the store's ratio). disk/sync-per-record
measures the file system beneath both: a record appended to a file and synced,
as a JetStream block grows, against one written over bytes the file holds and
synced, as SQLite's log is once grown. Each figure is the median of several
rounds. The servers run in scratch directories under the data directory
(--data, else $AGENTJOURNAL_DATA, $XDG_DATA_HOME/agentjournal or
~/.local/share/agentjournal: the file system the daemon writes its log to) and
are removed afterwards; the data directory's own journals are not touched.

--suite read measures the read side instead: projection catch-up over 1,000,000
records in 1,000 journals against a raw ordered-consumer read and raw batched
bbolt puts, peak RSS, append-to-visible latency at 1,000 records/s, the replay
fold rate and policy decision latency. --suite api measures the HTTP API with
200 concurrent clients against raw appends (recordObservation and the raw
appends in three alternating rounds, each shown by its median round), and SSE
fan-out to 100 subscribers.
--suite fleet measures whether more daemons decide faster: on a fresh cluster of
three embedded NATS servers (stream at 3 replicas) per round, one subscriber
reading the whole log, then 1, 2 and 3 policy subscribers sharing the journals'
partitions, decide while 64 writers append 6,000 observations, timed until every
one is decided, and then decide a backlog of as many, appended while they were
held back; against raw appends to the same cluster set-up. With --daemon-cpu
CPUS each policy subscriber runs as a process of its own held to that many CPUs
by a Linux cpu control group (root, or a delegated cgroup, needed), as a daemon
on a machine of its own is held to that machine's: adding daemons then adds
CPU, while the servers and writers share the rest. The default, auto, uses 0.1
CPU where control groups can be made, and otherwise runs the subscribers in
this process, sharing every CPU; 0 always does.
--suite hosts measures what forwarding between the daemons of a fleet costs:
two daemons on one log in this process, the second joined to the first's NATS
by URL, take messages to an agent running on the first through it and through
the second, which forwards them (routed-message p50 and p99, and its p99 as a
ratio to the local one's, target at most 2x), and launches through the first
placed on it and on the second (launch-to-running p50 and p99 of each, what
forwarding adds at p50, target under 50 ms, and placed launches per second);
one request at a time, local and forwarded in turns.
--suite all runs the five. The size flags apply to the store suite.

Every suite prints the same report, and --suite all prints one report for the
five: a "host:" line (Go version, OS/arch, CPUs, GOMAXPROCS, nats-server), then
a section per suite. A section starts with "[suite] title; the run took T",
its set-up lines and a "config:" line of name=value settings, then a table with
a row per result: NAME, COUNT, ELAPSED, RATE and its UNIT, P50, P99, RATIO
(to the named baseline, e.g. "0.62x raw"), the suite's own figures (RAW REC/S,
PEER REC/S, CONCURRENCY, MISSING, P99 RATIO...) and RESULT (PASS, or BELOW
when a target is missed); a column no row has a value in is left out, and
"-" marks a value a row lacks. Then "targets:" (result, metric, value, bound,
verdict), "what was timed:" (each result's method) and "notes:".

--json prints one JSON document instead:
  {"host": {"goVersion", "os", "arch", "cpus", "gomaxprocs", "natsServer"},
   "suites": [{"suite", "title", "setup": [lines], "started",
     "elapsedSeconds", "config": [{"name", "value"}],
     "results": [{"name", "count", "elapsedSeconds", "rate", "rateUnit",
       "p50Seconds", "p99Seconds", "baseline", "ratio",
       "checks": [{"metric", "value", "target", "unit", "max", "verdict"}],
       "figures": [{"name", "value", "unit"}], "method"}],
     "notes": [lines]}]}
Durations are seconds. A field a result does not have is left out; "max"
marks a target that is an upper bound; a figure's unit is "s" for seconds,
"x" for a ratio, or a word such as "MiB".

A suite that fails stops the run: the report of the suites measured before
it is printed, and so is the failing suite's when it measured everything and
only stopping its servers and agents failed; then the error, and the exit
status is 1 (2 for a bad command line).`

const example = `agentjournal-bench --data /tmp/bench
agentjournal-bench --records 20000 --json
agentjournal-bench --data /tmp/bench --suite all`

// Main is the program: it reads the flags, runs the suites and turns their
// outcome into a report and an exit code. Its fields are the process's
// surroundings, so tests run the same code on buffers.
type Main struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
	// HomeDir returns the user's home directory; os.UserHomeDir when nil.
	HomeDir func() (string, error)

	// runSuite runs one suite; nil means measure, the suites themselves.
	// Tests set it to hold a suite's outcome still while they check what
	// the command does with it.
	runSuite func(ctx context.Context, name string, cfg suiteConfig) (benchkit.Report, error)
}

// suiteConfig is what the flags say for each suite.
type suiteConfig struct {
	store    storebench.Config
	fleet    fleetbench.Config
	scratch  string
	progress io.Writer
}

// Run runs the command line args (without the program name) and returns
// the exit code: 0 on success, 1 on failure, 2 on bad usage.
func (m Main) Run(ctx context.Context, args []string) int {
	fs, o, err := parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(m.Stdout, help(fs))
		return exitOK
	case err != nil:
		fmt.Fprintf(m.Stderr, "agentjournal-bench: %v\n\n%s", err, help(fs))
		return exitUsage
	}
	err = m.run(ctx, o)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintln(m.Stderr, "agentjournal-bench: interrupted")
		return exitError
	}
	fmt.Fprintf(m.Stderr, "agentjournal-bench: %v\n", err)
	return exitError
}

// options is a command line that can be run.
type options struct {
	// data is --data, empty for the default.
	data   string
	suites []string
	asJSON bool
	// store and fleet are the suites' configurations but for their Dir,
	// the scratch directory, which is made only to run them.
	store storebench.Config
	fleet fleetbench.Config
}

// parse reads the command line. The error is flag.ErrHelp for -h, or says
// what is wrong with the command line.
func parse(args []string) (*flag.FlagSet, options, error) {
	fs := flag.NewFlagSet("agentjournal-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := storebench.DefaultConfig()
	var o options
	fs.StringVar(&o.data, "data", "", "`DIR` to make the scratch directories in (default: the daemon's data directory, $"+datadir.Env+" or the like)")
	records := fs.Int("records", d.Records, "records per append measurement `N`")
	readRecords := fs.Int("read-records", d.ReadRecords, "records in the journal read back `N`")
	journals := fs.Int("journals", d.Journals, "journals in the many-writer measurement `N`")
	writers := fs.Int("writers", d.Writers, "concurrent writers `N`")
	payload := fs.Int("payload", d.PayloadBytes, "approximate record payload `BYTES`")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	suite := fs.String("suite", "store", "which measurements: `store`, read, api, fleet, hosts or all")
	daemonCPU := fs.String("daemon-cpu", "auto", "fleet suite: each daemon's CPU budget, `CPUS` (0.01 to 64), 0 for none, or auto")
	if err := fs.Parse(args); err != nil {
		return fs, o, err
	}
	if fs.NArg() > 0 {
		return fs, o, fmt.Errorf("unexpected argument %q (agentjournal-bench takes only flags)", fs.Arg(0))
	}
	o.suites = suiteNames
	if *suite != "all" {
		if !slices.Contains(suiteNames, *suite) {
			return fs, o, fmt.Errorf("--suite %q (want one of: %s, all)", *suite, strings.Join(suiteNames, ", "))
		}
		o.suites = []string{*suite}
	}
	// Dir is checked only for being set: the scratch directory comes later.
	const scratch = "scratch"
	o.fleet = fleetbench.DefaultConfig()
	o.fleet.Dir = scratch
	if *daemonCPU == "auto" {
		o.fleet.DaemonCPU = fleetbench.AutoDaemonCPU
	} else if v, err := strconv.ParseFloat(*daemonCPU, 64); err != nil {
		return fs, o, fmt.Errorf("--daemon-cpu %q (want auto, 0, or a number of CPUs such as 0.1)", *daemonCPU)
	} else {
		o.fleet.DaemonCPU = v
	}
	if err := o.fleet.Validate(); err != nil {
		return fs, o, fmt.Errorf("--daemon-cpu: %w", err)
	}
	o.store = storebench.Config{Dir: scratch, Records: *records, ReadRecords: *readRecords, Journals: *journals,
		Writers: *writers, PayloadBytes: *payload}
	return fs, o, o.store.Validate()
}

// run makes a scratch directory in the data directory, runs the suites in
// it and prints their reports.
func (m Main) run(ctx context.Context, o options) (err error) {
	getenv, home := m.Getenv, m.HomeDir
	if getenv == nil {
		getenv = os.Getenv
	}
	if home == nil {
		home = os.UserHomeDir
	}
	dir := o.data
	if dir == "" {
		if dir, err = datadir.Default(getenv, home); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := suiteConfig{store: o.store, fleet: o.fleet, progress: m.Stderr}
	if cfg.scratch, err = os.MkdirTemp(dir, "bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(cfg.scratch)
	cfg.store.Dir, cfg.store.Progress = cfg.scratch, m.Stderr
	cfg.fleet.Dir, cfg.fleet.Progress = cfg.scratch, m.Stderr
	if cfg.fleet.DaemonCPU == fleetbench.AutoDaemonCPU && slices.Contains(o.suites, "fleet") {
		if err := fleetbench.CanLimitCPU(); err != nil {
			cfg.fleet.DaemonCPU = 0
			fmt.Fprintf(m.Stderr, "agentjournal-bench: the fleet suite's daemons share every CPU: %v\n", err)
		}
	}

	runSuite := m.runSuite
	if runSuite == nil {
		runSuite = measure
	}
	var reports []benchkit.Report
	for _, name := range o.suites {
		rep, err := runSuite(ctx, name, cfg)
		// A suite that measured everything and then failed to stop its
		// servers or agents still has figures worth printing.
		if len(rep.Results) > 0 {
			reports = append(reports, rep)
		}
		if err != nil {
			return errors.Join(m.write(reports, o.asJSON), fmt.Errorf("%s suite: %w", name, err))
		}
	}
	return m.write(reports, o.asJSON)
}

// write prints the reports as one, if there are any.
func (m Main) write(reports []benchkit.Report, asJSON bool) error {
	switch {
	case len(reports) == 0:
		return nil
	case asJSON:
		return benchkit.WriteJSON(m.Stdout, reports...)
	}
	return benchkit.WriteText(m.Stdout, reports...)
}

// measure runs the suite called name. It may return a report with the
// error: what the suite measured before it failed to stop.
func measure(ctx context.Context, name string, cfg suiteConfig) (benchkit.Report, error) {
	switch name {
	case "store":
		return storebench.Run(ctx, cfg.store)
	case "read":
		rcfg := projbench.DefaultConfig()
		rcfg.Dir, rcfg.Progress = cfg.scratch, cfg.progress
		return projbench.Run(ctx, rcfg)
	case "api":
		acfg := apibench.DefaultConfig()
		acfg.Dir, acfg.Progress = cfg.scratch, cfg.progress
		return apibench.Run(ctx, acfg)
	case "fleet":
		return fleetbench.Run(ctx, cfg.fleet)
	case "hosts":
		hcfg := hostbench.DefaultConfig()
		hcfg.Dir, hcfg.Progress = cfg.scratch, cfg.progress
		return hostbench.Run(ctx, hcfg)
	}
	return benchkit.Report{}, fmt.Errorf("unknown suite %q (want one of: %s)", name, strings.Join(suiteNames, ", "))
}

// help is the text -h prints: synopsis, description, flags and example.
func help(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s\n\n%s\n\nFlags (with one dash or two):\n", synopsis, summary)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	b.WriteString("\nExample:\n")
	for line := range strings.Lines(example) {
		fmt.Fprintf(&b, "  %s", line)
	}
	b.WriteString("\n")
	return b.String()
}
