package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/terminal"
)

// TestRunAsksAtTheTerminal: a plain `run` whose agent asks a question
// shows it, with its choices, at run's controlling terminal (a real PTY
// here), and what is typed there reaches the agent through the journal.
func TestRunAsksAtTheTerminal(t *testing.T) {
	t.Parallel()
	question := `signal:{"type":"needs_input","payload":{"requestId":"q1","question":"Which branch?","choices":["main","dev"]}}`
	ctx, tm, seen, screen := runAtTerminal(t, "--data", t.TempDir(), "run", "--", fixtures.AgentBinary(t), question, "echo:1")
	if !seen("Which branch?") || !seen("2. dev") {
		t.Errorf("the question or its choices are missing from the terminal")
	}
	out := answerAtTerminal(ctx, t, tm, screen, "2")
	// The fixture agent echoes the line it read: the answer, delivered as
	// the generic agent reads answers.
	if strings.Contains(out, `\n`) || !strings.Contains(out, "\n  2. dev") {
		t.Errorf("the question is not laid out in lines; run showed:\n%s", out)
	}
	if !strings.Contains(out, "echo: ") || !strings.Contains(out, "dev") {
		t.Errorf("the agent did not get the answer dev; run showed:\n%s", out)
	}
}

// runAtTerminal runs agentjournal with args on a real PTY, as run's
// controlling terminal, until it has asked for an answer there ("Your
// answer"). It returns the context bounding the run, the terminal, whether
// the terminal has shown a text, and what it has shown.
func runAtTerminal(t *testing.T, args ...string) (context.Context, *terminal.Terminal, func(string) bool, func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	terms := terminal.NewRegistry(nil)
	t.Cleanup(func() { terms.Close() })
	var mu sync.Mutex
	var out strings.Builder
	screen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	seen := func(s string) bool { return strings.Contains(screen(), s) }
	tm, err := terms.Open(ctx, terminal.OpenOptions{Command: agentjournalBinary(t), Args: args,
		OnOutput: func(data []byte) {
			mu.Lock()
			out.Write(data)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	for !seen("Your answer") {
		if ctx.Err() != nil {
			t.Fatalf("run never asked at its terminal; it showed:\n%s", screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ctx, tm, seen, screen
}

// answerAtTerminal types answer and Enter at run's terminal, waits for run
// to end, which it must do with status 0, and returns what it showed.
func answerAtTerminal(ctx context.Context, t *testing.T, tm *terminal.Terminal, screen func() string, answer string) string {
	t.Helper()
	if err := tm.Input([]byte(answer + "\r")); err != nil {
		t.Fatal(err)
	}
	code, err := tm.Wait(ctx)
	out := screen()
	if err != nil || code != 0 {
		t.Fatalf("run ended %d (%v); it showed:\n%s", code, err, out)
	}
	return out
}
