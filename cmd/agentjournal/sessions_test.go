package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestSessionsSessionAndCheckpoint: a Claude Code run (a real capture)
// resumed once is one session of two runs; the operator's checkpoint is
// recorded and shown; bad input is refused with what is accepted.
func TestSessionsSessionAndCheckpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	capture := todoCapture(t)
	first := launched(t, dir, "--agent", "claude-code", "--shape", "one-shot", "--prompt", "write it", "--", agent, "replay:"+capture)
	awaitFinal(t, dir, first)
	second := strings.TrimSpace(mustRun(t, dir, "resume", first, "--prompt", "again"))
	awaitFinal(t, dir, second)

	out := mustRun(t, dir, "checkpoint", second, "--id", "cp-review", "--title", "ready for review")
	if !strings.Contains(out, "checkpoint cp-review of "+second) || !strings.Contains(out, "completed") {
		t.Fatalf("checkpoint printed %q", out)
	}
	var sess client.Session
	if err := json.Unmarshal([]byte(mustRun(t, dir, "session", second, "--json")), &sess); err != nil {
		t.Fatal(err)
	}
	if sess.Session.SessionID != first || len(sess.Runs) != 2 || sess.Runs[1].Resumes != first || sess.Session.Status != contract.SessionCompleted {
		t.Fatalf("session %+v", sess)
	}
	found := false
	for _, cp := range sess.Checkpoints {
		found = found || (cp.CheckpointID == "cp-review" && cp.StateSummary.Title == "ready for review" && cp.Source == string(eventstore.SourceOperator))
	}
	if !found {
		t.Fatalf("checkpoints %+v", sess.Checkpoints)
	}
	text := mustRun(t, dir, "session", first)
	for _, want := range []string{"session " + first + ": completed, resumable yes", "resumes " + first, "cp-review", "turn-1", "todos:"} {
		if !strings.Contains(text, want) {
			t.Errorf("session printed no %q:\n%s", want, text)
		}
	}
	list := mustRun(t, dir, "sessions", "--status", "completed")
	if !strings.Contains(list, first) || strings.Count(list, "\n") != 2 {
		t.Errorf("sessions:\n%s", list)
	}
	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"sessions", "--status", "done"}, exitUsage, "want one of active, paused"},
		{[]string{"session"}, exitUsage, "missing ID"},
		{[]string{"session", "ae-000000000000000000000000"}, exitError, "no session"},
		{[]string{"checkpoint", second, "--id", "a b"}, exitError, "letters, digits"},
		{[]string{"checkpoint", second, "--title", strings.Repeat("x", 201)}, exitError, "at most 200"},
	} {
		if r := run(t, dir, bad.args...); r.code != bad.code || !strings.Contains(r.stderr, bad.says) {
			t.Errorf("%v: exit %d %q, want %d saying %q", bad.args, r.code, r.stderr, bad.code, bad.says)
		}
	}
	stop()
	if r := run(t, dir, "sessions"); r.code != exitError || !strings.Contains(r.stderr, "serve") {
		t.Errorf("sessions without a daemon: exit %d %q, want an error saying to start one", r.code, r.stderr)
	}
}
