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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	terms := terminal.NewRegistry(nil)
	defer terms.Close()
	var mu sync.Mutex
	var screen strings.Builder
	seen := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(screen.String(), s)
	}
	question := `signal:{"type":"needs_input","payload":{"requestId":"q1","question":"Which branch?","choices":["main","dev"]}}`
	tm, err := terms.Open(ctx, terminal.OpenOptions{Command: agentjournalBinary(t),
		Args: []string{"--data", t.TempDir(), "run", "--", fixtures.AgentBinary(t), question, "echo:1"},
		OnOutput: func(data []byte) {
			mu.Lock()
			screen.Write(data)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	for !seen("Your answer") {
		if ctx.Err() != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("run never asked at its terminal; it showed:\n%s", screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !seen("Which branch?") || !seen("2. dev") {
		t.Errorf("the question or its choices are missing from the terminal")
	}
	if err := tm.Input([]byte("2\r")); err != nil {
		t.Fatal(err)
	}
	code, err := tm.Wait(ctx)
	mu.Lock()
	out := screen.String()
	mu.Unlock()
	if err != nil || code != 0 {
		t.Fatalf("run ended %d (%v); it showed:\n%s", code, err, out)
	}
	// The fixture agent echoes the line it read: the answer, delivered as
	// the generic agent reads answers.
	if strings.Contains(out, `\n`) || !strings.Contains(out, "\n  2. dev") {
		t.Errorf("the question is not laid out in lines; run showed:\n%s", out)
	}
	if !strings.Contains(out, "echo: ") || !strings.Contains(out, "dev") {
		t.Errorf("the agent did not get the answer dev; run showed:\n%s", out)
	}
}
