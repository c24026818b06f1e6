//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/transcript"
)

// TestRunTranscriptOfCaptures: run replays captured output of the known
// CLIs (the fixture agent prints a capture as the CLI would) and prints
// its transcript instead of the JSON; the transcript is held to a golden
// file; --raw prints the JSON as the CLI printed it; logs says that the
// output is all in the journal instead of printing nothing.
func TestRunTranscriptOfCaptures(t *testing.T) {
	t.Parallel()
	agent := fixtures.AgentBinary(t)
	for _, tc := range []struct{ name, agent, capture string }{
		{"claude-gleam", "claude-code", "../../runtime/claude/testdata/gleam/basic_query.ndjson"},
		{"claude-toolfail", "claude-code", "../../runtime/claude/testdata/real/toolfail.jsonl"},
		{"claude-todo", "claude-code", "../../runtime/claude/testdata/real/todo.jsonl"},
		{"codex-agentcmd", "codex", "../../runtime/codex/testdata/agentcmd/stream-output-1.jsonl"},
		{"codex-toolfail", "codex", "../../runtime/codex/testdata/real/toolfail.jsonl"},
		{"copilot-minions", "copilot", "../../runtime/copilot/testdata/minions/copilot-output-sample-claude.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			capture, err := filepath.Abs(tc.capture)
			if err != nil {
				t.Fatal(err)
			}
			command := []string{agent, "replay:" + capture}
			if tc.agent == "claude-code" {
				// Claude Code reads its prompt on stdin: the stand-in
				// reads stdin until the result closes it, so that the
				// prompt is delivered.
				command = []string{agent, "replay:" + capture, "wait:"}
			}
			dir := t.TempDir()
			r := run(t, dir, append([]string{"run", "--agent", tc.agent, "--prompt", "Do the task", "--"}, command...)...)
			m := runningAny.FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("run did not launch (exit %d):\n%s", r.code, r.stderr)
			}
			id := m[1]
			for _, line := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "{") {
					t.Fatalf("run printed the CLI's JSON %q:\n%s", line, r.stdout)
				}
			}
			var text bytes.Buffer
			if err := transcript.Render(&text, transcript.Entries(journalOf(t, dir, id)), transcript.Options{}); err != nil {
				t.Fatal(err)
			}
			if missing := linesInOrder(r.stdout, text.String()); missing != "" {
				t.Fatalf("run's output does not hold the journal's transcript from %q on:\n%s\nwant, within it:\n%s", missing, r.stdout, text.String())
			}
			got := normalizeTranscript(text.String(), id, dir)
			checkGolden(t, filepath.Join("testdata", "transcripts", "capture-"+tc.name+".txt"), got)

			rawRun := run(t, t.TempDir(), append([]string{"run", "--raw", "--agent", tc.agent, "--prompt", "Do the task", "--"}, command...)...)
			first, _, _ := strings.Cut(mustReadFile(t, capture), "\n")
			if !strings.Contains(rawRun.stdout, strings.TrimSpace(first)+"\n") || strings.Contains(rawRun.stdout, "▶ operator") {
				t.Errorf("run --raw printed:\n%s\nwant the capture's lines, from %q, and no transcript", rawRun.stdout, first)
			}

			logs := run(t, dir, "logs", id)
			if logs.code != exitOK || logs.stdout != "" || !strings.Contains(logs.stderr, "parsed into journal records") ||
				!strings.Contains(logs.stderr, "show "+id+" --transcript") {
				t.Errorf("logs: exit %d, stdout %q, stderr %q; want nothing printed and why said, pointing to the transcript", logs.code, logs.stdout, logs.stderr)
			}
		})
	}
}

// TestTailTranscripts: tail -f prints the transcripts of every execution
// it follows, each line behind the execution's label, as they go; tail
// without -f prints one execution's; show --transcript ends with it; logs
// of an agent that printed only markers says so.
func TestTailTranscripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServe(t, dir)
	agent := fixtures.AgentBinary(t)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		// From the log's start, so that no launch below is missed.
		done <- m.Run(ctx, []string{"--data", dir, "tail", "-f", "--from-offset", "1"})
	}()
	message := `signal:{"type":"message","payload":{"text":"Found **two** files:\n\n- a.go\n- b.go","format":"markdown"}}`
	// Each agent reads its prompt (echo:1) before it goes on.
	first := launched(t, dir, "--prompt", "list the files", "--", agent, "echo:1", "say:plain output", message)
	second := launched(t, dir, "--prompt", "ask me", "--", agent, "echo:1", `signal:{"type":"plan","payload":{"items":[{"text":"Look","status":"done"},{"text":"Ask","status":"in-progress"}]}}`)
	ended := func(id string) func() bool {
		return func() bool { return strings.Contains(stdout.String(), shortLabel(id)+" ■ completed") }
	}
	awaitOutput(t, "the first execution's end", ended(first))
	awaitOutput(t, "the second execution's end", ended(second))
	cancel()
	awaitExitOK(t, done, "tail -f after Ctrl-C", &stderr)

	want := map[string][]string{
		first:  {"▶ operator: list the files", "Found two files:", "", "• a.go", "• b.go", "■ completed (exit status 0)"},
		second: {"▶ operator: ask me", "☰ plan", "  [x] Look", "  [>] Ask", "■ completed (exit status 0)"},
	}
	for id, lines := range want {
		var got []string
		for l := range strings.Lines(stdout.String()) {
			if rest, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), shortLabel(id)+" "); ok {
				got = append(got, transcriptTimes.ReplaceAllString(rest, "TIME"))
			}
		}
		if len(got) > 0 {
			got[len(got)-1] = strings.TrimSuffix(got[len(got)-1], " (TIME)")
		}
		if diff := cmp.Diff(lines, got); diff != "" {
			t.Errorf("tail -f lines of %s (-want +got):\n%s\nall of it:\n%s", id, diff, stdout.String())
		}
	}

	out := mustRun(t, dir, "tail", "--execution", first)
	for l := range strings.Lines(out) {
		if !strings.HasPrefix(l, shortLabel(first)+" ") {
			t.Errorf("tail --execution %s printed %q, want every line behind its label", first, l)
		}
	}
	if !strings.Contains(out, shortLabel(first)+" • b.go\n") {
		t.Errorf("tail --execution %s:\n%s\nwant its transcript", first, out)
	}

	show := mustRun(t, dir, "show", first, "--transcript")
	if !strings.Contains(show, "transcript:\n▶ operator: list the files\nFound two files:\n") {
		t.Errorf("show --transcript:\n%s\nwant the state, then the transcript", show)
	}
	if r := run(t, dir, "show", first, "--transcript", "--json"); r.code != exitUsage {
		t.Errorf("show --transcript --json: exit %d, want %d", r.code, exitUsage)
	}
	quiet := launched(t, dir, "--", agent, `signal:{"type":"status","payload":{"summary":"working"}}`)
	awaitState(t, dir, quiet, "its end", func(st execution.State) bool { return st.Lifecycle.Final() })
	logs := run(t, dir, "logs", quiet)
	if logs.code != exitOK || logs.stdout != "" || !strings.Contains(logs.stderr, "printed no plain output") {
		t.Errorf("logs of an agent that printed only markers: exit %d, stdout %q, stderr %q; want why it printed nothing", logs.code, logs.stdout, logs.stderr)
	}
	if logs := run(t, dir, "logs", first); !strings.Contains(logs.stdout, "plain output") || logs.stderr != "" {
		t.Errorf("logs of an agent with plain output: stdout %q, stderr %q; want the line and nothing said", logs.stdout, logs.stderr)
	}
}

// awaitOutput polls ok until it holds, within 30 s.
func awaitOutput(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkGolden holds got to the golden file path; -update rewrites it.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("transcript differs from %s (-want +got):\n%s", path, diff)
	}
}

func mustReadFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
