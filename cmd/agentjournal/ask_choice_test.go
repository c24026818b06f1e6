//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/fixtures"
)

// TestRunAsksPermissionByNumber: a permission request at run's terminal
// shows its choices numbered in the one order (allow, allow-always, deny);
// 2 typed there answers allow-always, and the journal records the answer
// as the operator's, who typed it.
func TestRunAsksPermissionByNumber(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, tm, seen, screen := runAtTerminal(t, "--data", dir, "run", "--dir", t.TempDir(), "--agent", "acp", "--prompt", "ask c1", "--", fixtures.ACPAgentBinary(t))
	if !seen("rm -rf build") || !seen("1. allow\r\n  2. allow-always\r\n  3. deny") {
		t.Errorf("the request's command or its choices in order are missing from the terminal:\n%s", screen())
	}
	out := answerAtTerminal(ctx, t, tm, screen, "2")
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
