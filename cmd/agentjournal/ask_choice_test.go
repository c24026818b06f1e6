//go:build unix

package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/terminal"
)

// TestRunAsksPermissionByNumber: a permission request at run's terminal
// shows its choices numbered in the one order (allow, allow-always, deny);
// 2 typed there answers allow-always, and the journal records the answer
// as the operator's, who typed it.
func TestRunAsksPermissionByNumber(t *testing.T) {
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
	dir := t.TempDir()
	tm, err := terms.Open(ctx, terminal.OpenOptions{Command: agentjournalBinary(t),
		Args: []string{"--data", dir, "run", "--dir", t.TempDir(), "--agent", "acp", "--prompt", "ask c1", "--", fixtures.ACPAgentBinary(t)},
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
	if !seen("rm -rf build") || !seen("1. allow\r\n  2. allow-always\r\n  3. deny") {
		mu.Lock()
		t.Errorf("the request's command or its choices in order are missing from the terminal:\n%s", screen.String())
		mu.Unlock()
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
	if !strings.Contains(out, "permission: always") {
		t.Errorf("the agent did not get allow-always; run showed:\n%s", out)
	}
	m := runningAny.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run named no execution; it showed:\n%s", out)
	}
	if got, want := answersOf(journalOf(t, dir, m[1])), []string{"operator: allow-always"}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}
