package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestCmdCommand: the CLI lists, previews and carries out slash commands
// through the daemon, and a bad one fails with the shape expected.
func TestCmdCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	defer stop()
	agent := fixtures.AgentBinary(t)
	id := launched(t, dir, "--", agent, "wait")
	awaitState(t, dir, id, "running", func(st execution.State) bool { return st.Lifecycle == "running" })

	list := mustRun(t, dir, "cmd", id, "/ch", "--list")
	if !strings.Contains(list, "/checkpoint [title]") || !strings.Contains(list, "mission-native") || strings.Contains(list, "/verify") {
		t.Errorf("cmd --list /ch printed:\n%s", list)
	}
	preview := mustRun(t, dir, "cmd", id, "/checkpoint before review", "--dry-run")
	if !strings.Contains(preview, "entity-command execution.checkpoint, mission-native: would record checkpoint.created") {
		t.Errorf("cmd --dry-run printed %q", preview)
	}
	out := mustRun(t, dir, "cmd", id, "/checkpoint", "before", "review")
	if !strings.Contains(out, "entity-command execution.checkpoint, mission-native: checkpoint cp-") || !strings.Contains(out, "at sequence") {
		t.Errorf("cmd /checkpoint printed %q", out)
	}
	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"cmd", id, "/blocked"}, exitError, "/blocked <reason>"},
		{[]string{"cmd", id, "/frobnicate"}, exitError, "want: one of: /checkpoint"},
		{[]string{"cmd", id, "/doctor", "--focus", "terminal"}, exitError, "no terminal lane"},
		{[]string{"cmd", id, "/verify", "--focus", "pty"}, exitUsage, "prompt, terminal"},
		{[]string{"cmd", id}, exitUsage, "missing the command text"},
	} {
		if r := run(t, dir, bad.args...); r.code != bad.code || !strings.Contains(r.stderr, bad.says) {
			t.Errorf("%v: exit %d %q, want %d saying %q", bad.args, r.code, r.stderr, bad.code, bad.says)
		}
	}
}
