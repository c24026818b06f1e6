package claude

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// run reads one process's lines through a driver set up by setup, as the
// runtime does, flush included, and checks every event.
func run(t *testing.T, setup func(*Driver), lines ...[]byte) []agent.Event {
	t.Helper()
	d := Agent{}.NewDriver(nil, eventstore.ShapeConversation).(*Driver)
	if setup != nil {
		setup(d)
	}
	evs := agenttest.Process(t, d, agenttest.Prefix, lines)
	agenttest.CheckEvents(t, evs)
	return evs
}

// TestClaudeSubagentModelUsage: before model_usage_since_last_result, a
// result's modelUsage counts the subagent's requests, which result.usage
// leaves out; a second result adds what modelUsage grew by.
func TestClaudeSubagentModelUsage(t *testing.T) {
	evs := run(t, nil, agenttest.CapturesByName(t)["written/subagent-modelusage.jsonl"]...)
	want := []string{"in=1123590 out=24407 total=1147997", "in=1124290 out=24412 total=1148702"}
	if diff := cmp.Diff(want, agenttest.UsageTrail(evs)); diff != "" {
		t.Errorf("running totals after each usage observation (-want +got):\n%s", diff)
	}
}

// TestClaudeModelUsageOfAContinuedSession: a resumed process's first
// modelUsage counts the session's earlier processes too, which the runs
// before it counted; a fork's share of it is not known, so its first
// result counts the query's own usage.
func TestClaudeModelUsageOfAContinuedSession(t *testing.T) {
	result := agenttest.Lines(`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-1",` +
		`"usage":{"input_tokens":500,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15},` +
		`"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":1500,"outputTokens":45,"cacheReadInputTokens":0,"cacheCreationInputTokens":0}}}`)
	for _, tc := range []struct {
		name  string
		setup func(*Driver)
		want  string
	}{
		{"new session", nil, "in=1500 out=45 total=1545"},
		{"resumed", func(d *Driver) {
			_ = d.Continue(agent.Continuation{Session: "s-1"})
			d.CountedBefore(agent.Tokens{Input: 900, Output: 25})
		}, "in=600 out=20 total=620"},
		{"resumed, nothing counted before", func(d *Driver) { _ = d.Continue(agent.Continuation{Session: "s-1"}) }, "in=1500 out=45 total=1545"},
		{"forked", func(d *Driver) { _ = d.Continue(agent.Continuation{Session: "s-1", Fork: true}) }, "in=500 out=15 total=515"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agenttest.FinalUsage(run(t, tc.setup, result...)).String(); got != tc.want {
				t.Errorf("totals %s, want %s", got, tc.want)
			}
		})
	}
}

// TestClaudeUsageWithoutResult: a process whose output ends without a
// result counts what its assistant lines said, once per message, and ends
// the call left open.
func TestClaudeUsageWithoutResult(t *testing.T) {
	evs := run(t, nil, agenttest.CapturesByName(t)["written/no-result.jsonl"]...)
	if got := agenttest.FinalUsage(evs).String(); got != "in=300 out=22 total=322" {
		t.Errorf("totals %s, want in=300 out=22 total=322 (msg_02A 100/10 once, msg_02C 200/12)", got)
	}
	ends := agenttest.ToolEnds(evs)
	if len(ends) != 2 || ends[0].Status != eventstore.ToolCallSucceeded || ends[1].ID != "toolu_02D" ||
		ends[1].Status != eventstore.ToolCallFailed || !strings.Contains(ends[1].Error, "ended before") {
		t.Fatalf("tool call ends %+v, want toolu_02B succeeded, then toolu_02D failed as the output ended", ends)
	}
}

// TestClaudeTaskFailed: a background subagent that fails is recorded, with
// its error, and the call it had open ends failed with it.
func TestClaudeTaskFailed(t *testing.T) {
	evs := run(t, nil, agenttest.CapturesByName(t)["written/task-failed.jsonl"]...)
	var phases []string
	for _, s := range agenttest.Payloads[*eventstore.StatusSignal](evs) {
		phases = append(phases, s.Phase+": "+s.Summary)
	}
	want := []string{
		PhaseTaskStarted + ": Claude Code started a subagent general-purpose: run the suite",
		PhaseTaskFailed + ": Claude Code's subagent general-purpose a3c5e7f9b1d3e5f70 failed: Agent terminated early due to an API error: You've hit your session limit",
	}
	if diff := cmp.Diff(want, phases); diff != "" {
		t.Errorf("status observations (-want +got):\n%s", diff)
	}
	ends := agenttest.ToolEnds(evs)
	if len(ends) != 2 || ends[1].ID != "toolu_03B" || ends[1].Status != eventstore.ToolCallFailed ||
		!strings.Contains(ends[1].Error, "session limit") {
		t.Fatalf("tool call ends %+v, want the Agent call's, then the subagent's Bash call failed with its error", ends)
	}
	if got := agenttest.FinalUsage(evs).String(); got != "in=1000 out=30 total=1030" {
		t.Errorf("totals %s, want in=1000 out=30 total=1030", got)
	}
}

// TestClaudeCompletedShellTaskSaysNothing: a shell command the CLI follows
// as a task while its call waits is the call's own business.
func TestClaudeCompletedShellTaskSaysNothing(t *testing.T) {
	evs := run(t, nil, agenttest.Lines(
		`{"type":"system","subtype":"task_started","task_id":"b1","tool_use_id":"toolu_1","description":"wait","is_backgrounded":false,"task_type":"local_bash","session_id":"s","uuid":"u1"}`,
		`{"type":"system","subtype":"task_notification","task_id":"b1","tool_use_id":"toolu_1","status":"completed","summary":"wait","session_id":"s","uuid":"u2"}`)...)
	if got := agenttest.Payloads[*eventstore.StatusSignal](evs); len(got) != 0 {
		t.Errorf("status observations %+v, want none", got)
	}
}
