package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// An agent that fails leaves its plain output where logs and show find it,
// beside the exit status; markers are not part of it, and a line that
// would rewrite the terminal is printed escaped.
func TestLogsAndShowOfAFailedAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	id := launched(t, dir, "--owner", "Task/t-logs", "--", agent,
		"say:building the project",
		`signal:{"type":"status","payload":{"summary":"a marker, journaled"}}`,
		"err:\x1b]0;pwned\x07\x1b[2Jerror: config.yaml: no such file",
		"err:giving up", "exit:3")
	awaitState(t, dir, id, "the failure", func(st execution.State) bool { return st.Lifecycle == "failed" })

	out := mustRun(t, dir, "logs", id)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("logs printed %d lines, want 3:\n%s", len(lines), out)
	}
	// A line is "TIME STREAM LINE". The order is the agent's within a
	// stream, the daemon's reading order between them.
	var got []string
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, " ")
		got = append(got, strings.Join(strings.Fields(rest), " "))
	}
	stderrFirst := `stderr \x1b]0;pwned\a\x1b[2Jerror: config.yaml: no such file`
	if i, j := slices.Index(got, stderrFirst), slices.Index(got, "stderr giving up"); i < 0 || j < i || !slices.Contains(got, "stdout building the project") {
		t.Errorf("logs printed %q, want the stdout line and the two stderr lines in order, the escape sequence escaped", got)
	}
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "a marker") {
		t.Errorf("logs printed a raw escape or the marker: %q", out)
	}
	if got := mustRun(t, dir, "logs", id, "--stream", "stderr", "-n", "1"); strings.Count(got, "\n") != 1 || !strings.Contains(got, "stderr giving up") {
		t.Errorf("logs --stream stderr -n 1 printed %q, want the last stderr line", got)
	}
	if r := run(t, dir, "logs", id, "--stream", "both"); r.code != exitUsage || !strings.Contains(r.stderr, "stdout or stderr") {
		t.Errorf("logs --stream both: exit %d %q, want 2 naming the streams", r.code, r.stderr)
	}

	// show: the output right under the failure.
	show := mustRun(t, dir, "show", id)
	at := strings.Index(show, "failed (exit status 3)")
	if at < 0 {
		t.Fatalf("show: %q, want the failure", show)
	}
	after := show[at:]
	next := strings.SplitN(after, "\n", 6)
	if len(next) < 5 || !strings.Contains(next[1], "output (last 3 lines)") || !strings.Contains(strings.Join(next[2:5], "\n"), "stderr giving up") {
		t.Errorf("show prints after the failure:\n%s\nwant the last output lines there", after)
	}
	if strings.ContainsAny(show, "\x1b\x07") {
		t.Errorf("show printed a raw escape: %q", show)
	}
}

// logs -f prints the lines there are, then each line as the agent prints
// it, and ends with the execution.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	id := launched(t, dir, "--", agent, "say:before the message", "echo:1", "err:after the message", "exit:3")

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		done <- m.Run(ctx, []string{"--data", dir, "logs", "-f", id})
	}()
	// The agent waits for the message, so that the lines after it are
	// printed while logs -f follows.
	for !strings.Contains(stdout.String(), "before the message") {
		select {
		case <-ctx.Done():
			t.Fatalf("logs -f never printed the first line; stdout %q, stderr %q", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	mustRun(t, dir, "send", id, "go on")
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("logs -f: exit %d: %s", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("logs -f did not end with the execution")
	}
	out := stdout.String()
	for _, want := range []string{"stdout before the message", "stdout echo: go on", "stderr after the message"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("logs -f printed:\n%s\nwant %q", out, want)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Errorf("logs -f printed %d lines, want 3:\n%s", strings.Count(out, "\n"), out)
	}
}
