package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/datadir"
)

var update = flag.Bool("update", false, "rewrite docs/bench.md")

type result struct {
	stdout, stderr string
	code           int
}

// run runs the program the way main does, on buffers, with the scratch
// directories under dir.
func run(t *testing.T, m Main, dir string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m.Stdout, m.Stderr = &stdout, &stderr
	m.Getenv = func(string) string { return "" }
	m.HomeDir = func() (string, error) { return "", errors.New("tests name the data directory") }
	code := m.Run(t.Context(), append([]string{"--data", dir}, args...))
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// benchSmall are the size flags of a store suite that runs in seconds.
var benchSmall = []string{"--records", "40", "--read-records", "20", "--journals", "2", "--writers", "2", "--payload", "16"}

// TestBenchReport: the command prints one report, the host once and a
// section per suite, as text and as one JSON document.
func TestBenchReport(t *testing.T) {
	dir := t.TempDir()
	r := run(t, Main{}, dir, benchSmall...)
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	text := r.stdout
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

	r = run(t, Main{}, dir, append(benchSmall, "--json")...)
	if r.code != exitOK {
		t.Fatalf("--json: exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	js := r.stdout
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
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the data directory holds %d entries after the runs, want none (the scratch directory removed)", len(left))
	}
}

func TestBenchSuiteFlag(t *testing.T) {
	r := run(t, Main{}, t.TempDir(), "--suite", "everything")
	if r.code != exitUsage || !strings.Contains(r.stderr, `--suite "everything" (want one of: store, read, api, fleet, hosts, all)`) {
		t.Errorf("--suite everything: exit %d, stderr %q; want a usage error naming the suites", r.code, r.stderr)
	}
	r = run(t, Main{}, t.TempDir(), "--suite", "store", "extra")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unexpected argument "extra"`) {
		t.Errorf("an argument: exit %d, stderr %q; want a usage error naming it", r.code, r.stderr)
	}
	for arg, want := range map[string]string{
		"lots":  `--daemon-cpu "lots" (want auto, 0, or a number of CPUs such as 0.1)`,
		"-1":    "DaemonCPU -1 is out of range (want 0.01 to 64 CPUs",
		"0.001": "DaemonCPU 0.001 is too small to schedule",
	} {
		r := run(t, Main{}, t.TempDir(), "--suite", "fleet", "--daemon-cpu", arg)
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("--daemon-cpu %s: exit %d, stderr %q; want a usage error with %q", arg, r.code, r.stderr, want)
		}
	}
}

// TestSuiteFailure: a suite that fails ends the run; the reports of the
// suites measured before it are printed, and the failing suite's too when
// it measured everything and only stopping failed; the error follows once,
// with exit status 1.
func TestSuiteFailure(t *testing.T) {
	measured := func(name string) benchkit.Report {
		return benchkit.Report{Suite: name, Title: name + " title", Host: benchkit.Here(),
			Results: []benchkit.Result{{Name: name + "/op", Count: 10, Rate: 100, RateUnit: "ops/s", Method: "one op"}}}
	}
	errStop := errors.New("apibench: stop the stack: context deadline exceeded")
	tests := []struct {
		name string
		// api is what the api suite returns.
		api         benchkit.Report
		apiErr      error
		wantSuites  []string
		wantStderr  string
		wantCode    int
		wantStarted []string
	}{
		{name: "every suite measured", api: measured("api"),
			wantSuites: suiteNames, wantCode: exitOK, wantStarted: suiteNames},
		{name: "the api stack fails to stop", api: measured("api"), apiErr: errStop,
			wantSuites: []string{"store", "read", "api"}, wantCode: exitError, wantStarted: []string{"store", "read", "api"},
			wantStderr: "agentjournal-bench: api suite: apibench: stop the stack: context deadline exceeded\n"},
		{name: "the api suite measures nothing", apiErr: errors.New("apibench: start the stack: no agent"),
			wantSuites: []string{"store", "read"}, wantCode: exitError, wantStarted: []string{"store", "read", "api"},
			wantStderr: "agentjournal-bench: api suite: apibench: start the stack: no agent\n"},
	}
	for _, tt := range tests {
		for _, asJSON := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "", true: ", JSON"}[asJSON], func(t *testing.T) {
				var started []string
				m := Main{runSuite: func(ctx context.Context, name string, cfg suiteConfig) (benchkit.Report, error) {
					started = append(started, name)
					if cfg.scratch == "" || cfg.store.Dir != cfg.scratch || cfg.fleet.Dir != cfg.scratch {
						t.Errorf("suite %s: scratch %q, store Dir %q, fleet Dir %q; want one scratch directory for all", name, cfg.scratch, cfg.store.Dir, cfg.fleet.Dir)
					}
					if name == "api" {
						return tt.api, tt.apiErr
					}
					return measured(name), nil
				}}
				args := []string{"--suite", "all", "--daemon-cpu", "0"}
				if asJSON {
					args = append(args, "--json")
				}
				r := run(t, m, t.TempDir(), args...)
				if r.code != tt.wantCode || r.stderr != tt.wantStderr {
					t.Errorf("exit %d, stderr %q; want %d, %q", r.code, r.stderr, tt.wantCode, tt.wantStderr)
				}
				if diff := cmp.Diff(tt.wantStarted, started); diff != "" {
					t.Errorf("suites run (-want +got):\n%s", diff)
				}
				var got []string
				if asJSON {
					reps, err := benchkit.ReadJSON(strings.NewReader(r.stdout))
					if err != nil {
						t.Fatalf("the report is not one JSON document: %v\n%s", err, r.stdout)
					}
					for _, rep := range reps {
						got = append(got, rep.Suite)
					}
				} else {
					for _, name := range suiteNames {
						if strings.Contains(r.stdout, "\n["+name+"] "+name+" title") {
							got = append(got, name)
						}
					}
				}
				if diff := cmp.Diff(tt.wantSuites, got); diff != "" {
					t.Errorf("suites printed (-want +got):\n%s\nstdout:\n%s", diff, r.stdout)
				}
			})
		}
	}
}

func TestHelp(t *testing.T) {
	r := run(t, Main{}, t.TempDir(), "--help")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	for _, want := range []string{"Usage:\n  agentjournal-bench [--data DIR]", "--suite read measures", "--suite api measures",
		"--suite fleet measures", "--suite hosts measures", "--suite all runs the five", "-daemon-cpu CPUS", "-suite store", "\nExample:\n  agentjournal-bench "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestBenchDoc keeps the head of docs/bench.md, up to the end of its
// first code block, equal to the help the binary prints; what follows, the
// figures of runs, is written by hand and kept as it is by -update.
func TestBenchDoc(t *testing.T) {
	r := run(t, Main{}, t.TempDir(), "-h")
	if r.code != exitOK {
		t.Fatalf("-h: exit %d: %s", r.code, r.stderr)
	}
	got := "# agentjournal-bench\n\nGenerated from `agentjournal-bench -h` (`go test ./cmd/agentjournal-bench -run TestBenchDoc -update`), " +
		"up to the end of the usage; the sections after it are written by hand. " +
		"`go tool task bench` runs every suite, then the Go benchmarks of the parsers, markers, workspace snapshots and fork replay.\n\n```\n" +
		strings.TrimRight(r.stdout, "\n") + "\n```\n"
	const path = "../../docs/bench.md"
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/agentjournal-bench -run TestBenchDoc -update)", err)
	}
	head, tail := generatedHead(string(file))
	if *update {
		if err := os.WriteFile(path, []byte(got+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		head = got
	}
	if diff := cmp.Diff(head, got); diff != "" {
		t.Fatalf("docs/bench.md is stale; run go test ./cmd/agentjournal-bench -run TestBenchDoc -update (-file +help):\n%s", diff)
	}
}

// generatedHead splits doc after the line that closes its first code
// block: the part generated from the help, and what follows it.
func generatedHead(doc string) (head, tail string) {
	fences := 0
	for i := 0; i < len(doc); {
		line, _, _ := strings.Cut(doc[i:], "\n")
		i += len(line) + 1
		if line == "```" {
			if fences++; fences == 2 {
				return doc[:min(i, len(doc))], doc[min(i, len(doc)):]
			}
		}
	}
	return doc, ""
}

// TestScratchInDefaultDataDir: without --data the scratch directory is
// made in $AGENTJOURNAL_DATA, and removed.
func TestScratchInDefaultDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	var scratch string
	m := Main{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(k string) string { return map[string]string{datadir.Env: data}[k] },
		runSuite: func(_ context.Context, _ string, cfg suiteConfig) (benchkit.Report, error) {
			scratch = cfg.scratch
			return benchkit.Report{}, nil
		}}
	if code := m.Run(t.Context(), []string{"--suite", "store"}); code != exitOK || filepath.Dir(scratch) != data {
		t.Errorf("exit %d, scratch %q; want 0 and a directory in %s", code, scratch, data)
	}
	if left, _ := os.ReadDir(data); len(left) != 0 {
		t.Errorf("%s holds %d entries after the run, want none", data, len(left))
	}
}
