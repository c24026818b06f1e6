package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/policy/fleetbench"
)

// benchSmall are the size flags of a store suite that runs in seconds.
var benchSmall = []string{"bench", "--records", "40", "--read-records", "20", "--journals", "2", "--writers", "2", "--payload", "16"}

// TestBenchReport: the bench command prints one report, the host once and
// a section per suite, as text and as one JSON document.
func TestBenchReport(t *testing.T) {
	dir := t.TempDir()
	text := mustRun(t, dir, benchSmall...)
	if got := strings.Count(text, "host: "); got != 1 || !strings.HasPrefix(text, "host: ") {
		t.Errorf("text report has %d host lines, want 1 at the top:\n%s", got, text)
	}
	for _, want := range []string{"\n[store] journal store vs raw JetStream; the run took ",
		"config: records=40 readRecords=20 journals=2 writers=2 payloadBytes=16 rounds=5 recordBytes=",
		"\nNAME ", " RATIO ", " RAW REC/S ", " PEER REC/S ", " RESULT\n", "append/2-journals/2-writers ",
		"\ntargets:\n", "ratio to sqlite peer", "\nwhat was timed:\n", "\nnotes:\n  sqlite peer: SQLite"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	for _, absent := range []string{" P50 ", " P99 "} {
		if strings.Contains(text, absent) {
			t.Errorf("text report has the column %q, which no store result has:\n%s", absent, text)
		}
	}

	js := mustRun(t, dir, append(benchSmall, "--json")...)
	reps, err := benchkit.ReadJSON(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Suite != "store" || len(reps[0].Results) != 5 || reps[0].Host.NATSServer == "" {
		t.Fatalf("JSON report: %d suites, want one store suite of 5 results with its host:\n%s", len(reps), js)
	}
	if res, ok := reps[0].Result("read/journal-20"); !ok || res.Rate <= 0 || res.Baseline != "raw" || res.Verdict() == "" {
		t.Errorf("read/journal-20 = %+v (found %t), want a judged rate against raw", res, ok)
	}
	if strings.Count(js, `"host"`) != 1 || strings.Count(js, `"suites"`) != 1 {
		t.Errorf("JSON report is not one document with the host once:\n%s", js)
	}
}

func TestBenchSuiteFlag(t *testing.T) {
	r := run(t, t.TempDir(), "bench", "--suite", "everything")
	if r.code == exitOK || !strings.Contains(r.stderr, `--suite "everything" (want one of: store, read, api, fleet, all)`) {
		t.Errorf("bench --suite everything: exit %d, stderr %q; want a usage error naming the suites", r.code, r.stderr)
	}
}

// TestBenchFleetReport: the fleet suite's rounds print in the common form,
// with every figure its own report shows.
func TestBenchFleetReport(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	fleet := fleetbench.Report{
		Config:    fleetbench.DefaultConfig(),
		TextBytes: 64,
		Host:      benchkit.Here(),
		Elapsed:   time.Minute,
		Results: []fleetbench.Result{
			{Name: "raw/append", Count: 3000, Writers: 64, Journals: 120, Elapsed: time.Second, PerSecond: 3000,
				AppendP50: ms(2), AppendP99: ms(9), Retries: 1, Startup: time.Second, Method: "appends"},
			{Name: "policy/2-daemons", Daemons: 2, Partitions: 12, Count: 600, Decided: 600, Writers: 64, Journals: 120,
				Elapsed: 2 * time.Second, PerSecond: 300, AppendP50: ms(3), AppendP99: ms(12), DecisionP50: ms(20), DecisionP99: ms(80),
				BacklogElapsed: time.Second, BacklogPerSecond: 600, BacklogVsOneDaemon: 1.5, VsOneDaemon: 1.4, VsRaw: 0.1,
				Moves: 2, Restarts: 0, Startup: time.Second, Settle: ms(500), Method: "decisions"},
		},
	}
	var b strings.Builder
	if err := benchkit.WriteText(&b, fleetReport(fleet)); err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "policy/2-daemons ") {
			row = strings.Join(strings.Fields(line), " ")
			break
		}
	}
	want := "policy/2-daemons 600 2s 300 decisions/s 3ms 12ms 0.10x raw/append 2 12 600 64 120 20ms 80ms 1.40x 600 1s 1.50x 0 2 0 1s 500ms"
	if row != want {
		t.Errorf("row %q, want %q:\n%s", row, want, b.String())
	}
	for _, head := range []string{"DAEMONS", "RETRIES", "DECISION P99", "X ONE DAEMON", "BACKLOG/S", "BACKLOG X ONE DAEMON", "MOVES", "RESTARTS"} {
		if !strings.Contains(b.String(), head) {
			t.Errorf("no column %s:\n%s", head, b.String())
		}
	}
}
