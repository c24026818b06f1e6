package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestTodosAndApprovals: a run's answered and unanswered questions and a
// Claude Code run's TodoWrite plan, printed by approvals and todos through
// the daemon, and the same on the data directory once it has stopped.
func TestTodosAndApprovals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	asked := launched(t, dir, "--", agent, "ask:q1:Which branch?",
		`signal:{"type":"needs_input","payload":{"requestId":"q2","question":"Ship it?","choices":["yes","no"]}}`)
	// The request is open once the policy has decided on it, which may
	// come after the signal shows.
	awaitState(t, dir, asked, "q1", func(st execution.State) bool { return st.CurrentInputRequestID == "q1" })
	mustRun(t, dir, "send", asked, "--answer", "q1", "main")
	awaitFinal(t, dir, asked)

	capture := todoCapture(t)
	planned := launched(t, dir, "--agent", "claude-code", "--shape", "one-shot", "--prompt", "do it", "--", agent, "replay:"+capture)
	awaitFinal(t, dir, planned)

	viaDaemon := mustRun(t, dir, "approvals", asked, "--json")
	var got struct {
		Approvals []contract.AgentApprovalCheckpoint
	}
	if err := json.Unmarshal([]byte(viaDaemon), &got); err != nil {
		t.Fatalf("approvals --json: %v\n%s", err, viaDaemon)
	}
	if len(got.Approvals) != 2 || got.Approvals[0].Status != contract.ApprovalAnswered || got.Approvals[0].ResolvedBy != "operator" ||
		got.Approvals[0].Answer != "main" || got.Approvals[0].RunID != asked || got.Approvals[1].Status != contract.ApprovalClosed {
		t.Fatalf("approvals = %s", viaDaemon)
	}
	table := mustRun(t, dir, "approvals", asked)
	if !strings.Contains(table, "q1") || !strings.Contains(table, "answered") || !strings.Contains(table, "operator") || !strings.Contains(table, "closed-by-run-end") {
		t.Fatalf("approvals table:\n%s", table)
	}
	todosViaDaemon := mustRun(t, dir, "todos", planned)
	if !strings.Contains(todosViaDaemon, "Write the file") || !strings.Contains(todosViaDaemon, "in-progress@") || !strings.Contains(todosViaDaemon, "done@") {
		t.Fatalf("todos table:\n%s", todosViaDaemon)
	}

	if r := stop(); r.code != exitOK {
		t.Fatalf("serve exited %d: %s", r.code, r.stderr)
	}
	if onDisk := mustRun(t, dir, "approvals", asked, "--json"); onDisk != viaDaemon {
		t.Errorf("on the data directory:\n%s\nthrough the daemon:\n%s", onDisk, viaDaemon)
	}
	if onDisk := mustRun(t, dir, "todos", planned); onDisk != todosViaDaemon {
		t.Errorf("todos on the data directory:\n%s\nthrough the daemon:\n%s", onDisk, todosViaDaemon)
	}
	if r := run(t, dir, "todos", "ae-000000000000000000000000"); r.code != exitError || !strings.Contains(r.stderr, "no journal") {
		t.Errorf("todos of an unknown id: exit %d, %q", r.code, r.stderr)
	}
}
