package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/supervisor"
)

// result is what one run of the program left behind.
type result struct {
	stdout, stderr string
	code           int
}

// TestMain lets the test binary be the supervisor the daemons it runs in
// process start, as the agentjournal binary is for a real daemon.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	// A run in this process never asks at the terminal of whoever runs
	// the tests; TestRunAsksAtTheTerminal gives a run a terminal of its own.
	ttyPath = ""
	// Agents of these tests run in this package's directory, inside the
	// product's own repository: only tests that ask snapshot, in their own.
	defaultSnapshots = false
	os.Exit(m.Run())
}

// run runs the program on the data directory dir, the way main does.
func run(t testing.TB, dir string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := Main{
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(string) string { return "" },
		HomeDir: func() (string, error) {
			return "", errors.New("tests name the data directory")
		},
	}
	code := m.Run(t.Context(), append([]string{"--data", dir}, args...))
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// natsSecretFile writes the secret of the servers fixtures.StartNATS
// starts to a 0600 file, for --nats-secret-file.
func natsSecretFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats-secret")
	if err := os.WriteFile(path, []byte(fixtures.NATSSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustRun is run for commands that must succeed; it returns stdout.
func mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return run(t, dir, args...).succeeded(t, args)
}

// succeeded returns the stdout of the command args, which must have
// exited 0.
func (r result) succeeded(t *testing.T, args []string) string {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("agentjournal %s: exit %d, want 0; stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// awaitExitOK waits for the exit code of the command running in the
// background, what, on done: 0 within 30 s.
func awaitExitOK(t *testing.T, done <-chan int, what string, stderr fmt.Stringer) {
	t.Helper()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("%s: exit %d, want 0; stderr:\n%s", what, code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: did not end within 30s", what)
	}
}

// launched launches an agent in the daemon serving dir with the launch
// arguments args and returns its execution id.
func launched(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, dir, append([]string{"launch"}, args...)...))
}

// awaitGoroutines waits until no more goroutines run than before, and
// fails, with their stacks, when some are left after what ran.
func awaitGoroutines(t *testing.T, before int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after %s, %d before:\n%s", runtime.NumGoroutine(), what, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// decodeLines decodes JSON lines with eventstore.Decode.
func decodeLines(t *testing.T, out string) []eventstore.Record {
	t.Helper()
	var records []eventstore.Record
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		r, err := eventstore.Decode([]byte(line))
		if err != nil {
			t.Fatalf("line %d does not decode: %v\n%s", i+1, err, line)
		}
		records = append(records, r)
	}
	return records
}

// demoID runs demo with the seed and returns the execution id it wrote.
func demoID(t *testing.T, dir, seed string) string {
	t.Helper()
	records := decodeLines(t, mustRun(t, dir, "demo", "--seed", seed, "--json"))
	return records[0].RecordBase().AgentExecutionID
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"no command", nil, []string{"no command given", "Usage:"}},
		{"unknown command", []string{"bogus"}, []string{`unknown command "bogus"`, strings.Join(commandNames, ", ")}},
		{"unknown global flag", []string{"--bogus", "log"}, []string{"unknown flag --bogus", "--data, --nats-secret-file, --nats-url, --sync"}},
		{"bad sync", []string{"--sync", "fast", "journal", "ls"}, []string{`"fast"`, "want always or interval"}},
		{"journal without subcommand", []string{"journal"}, []string{"missing subcommand", "ls, cat, export, import"}},
		{"unknown journal subcommand", []string{"journal", "rm"}, []string{`unknown subcommand "rm"`, "ls, cat, export, import"}},
		{"cat without id", []string{"journal", "cat"}, []string{"journal cat: missing ID", "agentExecutionId", "journal ls"}},
		{"todos without id", []string{"todos"}, []string{"todos: missing ID"}},
		{"approvals with two ids", []string{"approvals", "a", "b"}, []string{"approvals:"}},
		{"cat with two ids", []string{"journal", "cat", "a", "b"}, []string{"too many arguments", "want one ID"}},
		{"cat bad flag", []string{"journal", "cat", "x", "--bogus"}, []string{"unknown flag --bogus", "--from-seq, --json"}},
		{"cat bad number", []string{"journal", "cat", "x", "--from-seq", "ten"}, []string{"--from-seq", "Flags:"}},
		{"export without out", []string{"journal", "export", "x"}, []string{"missing --out DIR"}},
		{"export without id", []string{"journal", "export", "--out", "d"}, []string{"missing ID"}},
		{"import without file", []string{"journal", "import"}, []string{"missing FILE", "JSONL"}},
		{"ls with argument", []string{"journal", "ls", "x"}, []string{`unexpected argument "x"`}},
		{"log negative limit", []string{"log", "--limit", "-1"}, []string{"--limit -1 is negative", "0 for all"}},
		{"log missing value", []string{"log", "--limit"}, []string{"needs an argument: --limit"}},
		{"demo bad owner", []string{"demo", "--owner", "Nobody/x"}, []string{`--owner "Nobody/x"`, "Task", "ENTITY/ID"}},
		{"demo owner without id", []string{"demo", "--owner", "Task"}, []string{"want ENTITY/ID"}},
		{"fork without at", []string{"fork", "ae-x"}, []string{"missing --at SEQ", "1 or more"}},
		{"fork without id", []string{"fork", "--at", "3"}, []string{"fork: missing ID"}},
		{"fork bad workspace", []string{"fork", "ae-x", "--at", "3", "--workspace", "copy"}, []string{`--workspace "copy"`, "keep, snapshot, discard"}},
		{"resume without id", []string{"resume"}, []string{"resume: missing ID"}},
		{"graph without subcommand", []string{"graph"}, []string{"graph: missing subcommand", "want one of: export"}},
		{"unknown graph subcommand", []string{"graph", "draw"}, []string{`unknown subcommand "draw"`, "export"}},
		{"graph bad format", []string{"graph", "export", "--format", "svg"}, []string{`--format "svg"`, "json, dot"}},
		{"lineage without id", []string{"lineage"}, []string{"lineage: missing ID"}},
		{"lineage two ids", []string{"lineage", "a", "b"}, []string{"too many arguments", "want one ID"}},
		{"lineage bad at", []string{"lineage", "a", "--at", "noon"}, []string{`--at "noon"`, "RFC 3339"}},
		{"lineage bad event", []string{"lineage", "--event", "sha1:x"}, []string{"--event", "want sha256: and 64 lowercase hex digits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runWithoutData(t, tc.args, exitUsage, "a usage error")
			if !strings.HasPrefix(r.stderr, "agentjournal: ") {
				t.Errorf("stderr %q does not start with \"agentjournal: \"", r.stderr)
			}
			mentions(t, "stderr", r.stderr, tc.want)
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout
	}{
		{"help", []string{"help"}, []string{"journal cat ID", "journal import FILE", "log", "demo", "--data DIR", "--sync MODE", "Example:"}},
		{"-h", []string{"-h"}, []string{"Commands:", "Example:"}},
		{"--help", []string{"--help"}, []string{"Commands:", "Example:"}},
		{"demo -h", []string{"demo", "-h"}, []string{"--owner ENTITY/ID", "--seed S", "--json", "Example:\n  agentjournal demo"}},
		{"journal -h", []string{"journal", "-h"}, []string{"ls", "cat", "export", "import"}},
		{"journal ls -h", []string{"journal", "ls", "--help"}, []string{"--json", "Example:"}},
		{"journal cat -h", []string{"journal", "cat", "-h"}, []string{"--from-seq N", "--json", "Example:"}},
		{"journal export -h", []string{"journal", "export", "-h"}, []string{"--out DIR", "agent-journals/", "Example:"}},
		{"journal import -h", []string{"journal", "import", "-h"}, []string{"FILE", "nothing", "Example:"}},
		{"log -h", []string{"log", "-h"}, []string{"--from-offset N", "--limit N", "--json", "Example:"}},
		{"help journal cat", []string{"help", "journal", "cat"}, []string{"--from-seq N"}},
		{"help log", []string{"help", "log"}, []string{"--from-offset N"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runWithoutData(t, tc.args, exitOK, "help")
			mentions(t, "help", r.stdout, tc.want)
		})
	}
}

// runWithoutData runs args on a data directory that does not exist and
// checks the exit code, and that the command, being what (help, a usage
// error), left the directory uncreated.
func runWithoutData(t *testing.T, args []string, wantCode int, what string) result {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, args...)
	if r.code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, wantCode, r.stderr)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s touched the data directory (stat: %v)", what, err)
	}
	return r
}

// mentions checks that text, named name in failures, holds each of want.
func mentions(t *testing.T, name, text string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not mention %q:\n%s", name, w, text)
		}
	}
}

func TestLockedDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixtures.StartNATSAt(t, dir)
	for _, args := range [][]string{{"journal", "ls"}, {"demo"}, {"log"}} {
		r := run(t, dir, args...)
		if r.code != exitError {
			t.Errorf("%s on a locked data directory: exit %d, want %d", args, r.code, exitError)
		}
		want := fmt.Sprintf("agentjournal: data directory %s is in use by process %d", dir, os.Getpid())
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%s on a locked data directory: stderr = %q, want it to start with %q", args, r.stderr, want)
		}
	}
}

func TestDataDirCreated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new", "data")
	out := mustRun(t, dir, "journal", "ls")
	if !strings.Contains(out, "No journals") || !strings.Contains(out, "agentjournal --data "+dir+" demo") {
		t.Errorf("journal ls on an empty store = %q, want a line saying there are none and how to make one", out)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Errorf("data directory mode = %o, want 700", got)
	}
}

func TestSyncIntervalWarns(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), "--sync", "interval", "journal", "ls")
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "power loss") {
		t.Errorf("stderr = %q, want one warning line about power loss", r.stderr)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Parallel()
	home := func() (string, error) { return "/home/ada", nil }
	noHome := func() (string, error) { return "", errors.New("$HOME is not defined") }
	for _, tc := range []struct {
		name    string
		env     map[string]string
		home    func() (string, error)
		want    string
		wantErr string
	}{
		{name: "AGENTJOURNAL_DATA", env: map[string]string{"AGENTJOURNAL_DATA": "/srv/aj", "XDG_DATA_HOME": "/xdg"}, home: home, want: "/srv/aj"},
		{name: "XDG_DATA_HOME", env: map[string]string{"XDG_DATA_HOME": "/xdg"}, home: home, want: "/xdg/agentjournal"},
		{name: "home", home: home, want: "/home/ada/.local/share/agentjournal"},
		{name: "no home", home: noHome, wantErr: "set --data or $AGENTJOURNAL_DATA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultDataDir(func(k string) string { return tc.env[k] }, tc.home)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("defaultDataDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestNoGoroutineLeak runs every command and checks that none leaves a
// goroutine behind. It does not run in parallel, so other tests' servers do
// not count.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	id := demoID(t, dir, "leak")
	out := t.TempDir()
	for _, args := range [][]string{
		{"journal", "ls"},
		{"journal", "cat", id},
		{"journal", "cat", id, "--from-seq", "5", "--json"},
		{"log", "--limit", "3"},
		{"journal", "export", id, "--out", out},
		{"journal", "import", filepath.Join(out, "agent-journals", id+".interaction.jsonl")},
	} {
		mustRun(t, dir, args...)
	}
	awaitGoroutines(t, before, "the commands")
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr bytes.Buffer
	code := Main{Stdout: &stdout, Stderr: &stderr}.Run(ctx, []string{"--data", t.TempDir(), "log"})
	if code != exitError || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("log with a cancelled context: exit %d, stderr %q; want 1 and \"interrupted\"", code, stderr.String())
	}
}
