package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/agentjournal/agentjournal/api/apibench"
	"github.com/agentjournal/agentjournal/eventstore/storebench"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/policy/fleetbench"
	"github.com/agentjournal/agentjournal/projections/projbench"
)

// BenchCommand runs the benchmark suites and prints their reports as one.
type BenchCommand struct {
	env *Env
}

var benchSpec = cmdSpec{
	Name: "bench",
	Args: "[--suite store|read|api|fleet|all] [--records N] [--read-records N] [--journals N] [--writers N] [--payload BYTES] [--daemon-cpu auto|CPUS] [--json]",
	Summary: `Measure the journal store against raw JetStream in one process and one run:
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
rounds. The servers run in scratch directories under the
data directory and are removed afterwards; the data directory's own journals are
not touched.

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
this process, sharing every CPU; 0 always does. --suite all runs the four.
The size flags apply to the store suite.

Every suite prints the same report, and --suite all prints one report for the
four: a "host:" line (Go version, OS/arch, CPUs, GOMAXPROCS, nats-server), then
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
"x" for a ratio, or a word such as "MiB".`,
	Example: "agentjournal --data /tmp/bench bench\nagentjournal bench --records 20000 --json",
}

// Run implements Command.
func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	fs := benchSpec.newFlagSet()
	d := storebench.DefaultConfig()
	records := fs.Int("records", d.Records, "records per append measurement `N`")
	readRecords := fs.Int("read-records", d.ReadRecords, "records in the journal read back `N`")
	journals := fs.Int("journals", d.Journals, "journals in the many-writer measurement `N`")
	writers := fs.Int("writers", d.Writers, "concurrent writers `N`")
	payload := fs.Int("payload", d.PayloadBytes, "approximate record payload `BYTES`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	suite := fs.String("suite", "store", "which measurements: `store`, read, api, fleet or all")
	daemonCPU := fs.String("daemon-cpu", "auto", "fleet suite: each daemon's CPU budget, `CPUS` (0.01 to 64), 0 for none, or auto")
	pos, err := benchSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return benchSpec.usageErr(fs, "unexpected argument %q (bench takes only flags)", pos[0])
	}
	if !slices.Contains([]string{"store", "read", "api", "fleet", "all"}, *suite) {
		return benchSpec.usageErr(fs, "--suite %q (want one of: store, read, api, fleet, all)", *suite)
	}
	if err := os.MkdirAll(c.env.DataDir, 0o700); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(c.env.DataDir, "bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	fcfg := fleetbench.DefaultConfig()
	fcfg.Dir, fcfg.Progress = scratch, c.env.Stderr
	if *daemonCPU == "auto" {
		fcfg.DaemonCPU = fleetbench.AutoDaemonCPU
		if *suite == "fleet" || *suite == "all" {
			if err := fleetbench.CanLimitCPU(); err != nil {
				fcfg.DaemonCPU = 0
				fmt.Fprintf(c.env.Stderr, "bench: the fleet suite's daemons share every CPU: %v\n", err)
			}
		}
	} else if fcfg.DaemonCPU, err = strconv.ParseFloat(*daemonCPU, 64); err != nil {
		return benchSpec.usageErr(fs, "--daemon-cpu %q (want auto, 0, or a number of CPUs such as 0.1)", *daemonCPU)
	}
	if err := fcfg.Validate(); err != nil {
		return benchSpec.usageErr(fs, "--daemon-cpu: %v", err)
	}
	cfg := storebench.Config{Dir: scratch, Records: *records, ReadRecords: *readRecords, Journals: *journals,
		Writers: *writers, PayloadBytes: *payload, Progress: c.env.Stderr}
	if err := cfg.Validate(); err != nil {
		return benchSpec.usageErr(fs, "%v", err)
	}
	var reports []benchkit.Report
	if *suite == "store" || *suite == "all" {
		rep, err := storebench.Run(ctx, cfg)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		reports = append(reports, rep)
	}
	if *suite == "read" || *suite == "all" {
		rcfg := projbench.DefaultConfig()
		rcfg.Dir, rcfg.Progress = scratch, c.env.Stderr
		rep, err := projbench.Run(ctx, rcfg)
		if err != nil {
			return fmt.Errorf("bench read side: %w", err)
		}
		reports = append(reports, rep)
	}
	if *suite == "api" || *suite == "all" {
		acfg := apibench.DefaultConfig()
		acfg.Dir, acfg.Progress = scratch, c.env.Stderr
		rep, err := apibench.Run(ctx, acfg)
		if err != nil {
			return fmt.Errorf("bench api: %w", err)
		}
		reports = append(reports, rep)
	}
	if *suite == "fleet" || *suite == "all" {
		rep, err := fleetbench.Run(ctx, fcfg)
		if err != nil {
			return fmt.Errorf("bench fleet: %w", err)
		}
		reports = append(reports, rep)
	}
	if *asJSON {
		return benchkit.WriteJSON(c.env.Stdout, reports...)
	}
	return benchkit.WriteText(c.env.Stdout, reports...)
}
