package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/internal/benchkit"
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
		"\nNAME ", " RATIO ", " RAW REC/S ", " PEER REC/S ", " RESULT\n", "append/2-journals/2-writers ", "disk/sync-per-record ", " OVERWRITE REC/S ",
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
	if len(reps) != 1 || reps[0].Suite != "store" || len(reps[0].Results) != 6 || reps[0].Host.NATSServer == "" {
		t.Fatalf("JSON report: %d suites, want one store suite of 6 results with its host:\n%s", len(reps), js)
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
	for arg, want := range map[string]string{
		"lots":  `--daemon-cpu "lots" (want auto, 0, or a number of CPUs such as 0.1)`,
		"-1":    "DaemonCPU -1 is out of range (want 0.01 to 64 CPUs",
		"0.001": "DaemonCPU 0.001 is too small to schedule",
	} {
		r := run(t, t.TempDir(), "bench", "--suite", "fleet", "--daemon-cpu", arg)
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("bench --daemon-cpu %s: exit %d, stderr %q; want a usage error with %q", arg, r.code, r.stderr, want)
		}
	}
}
