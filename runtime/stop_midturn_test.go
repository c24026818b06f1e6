package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime"
)

// TestStopMidTurnCancels: an operator's stop while a turn is under way
// (the agent at work, or waiting on a permission request) cancels the
// execution, though the agent exits cleanly once its input closes; a stop
// between turns completes it (TestClaudeConversationWaitsAndStopsGracefully).
func TestStopMidTurnCancels(t *testing.T) {
	permission := `{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"make"}}}`
	tests := []struct {
		name  string
		lines []string
		ready func(*execution.State) bool
	}{
		{name: "at work", lines: []string{claudeInit, claudeText},
			ready: func(st *execution.State) bool {
				return st.Lifecycle == eventstore.LifecycleRunning && len(st.Timeline) > 0
			}},
		{name: "waiting on a permission", lines: []string{claudeInit, permission},
			ready: func(st *execution.State) bool { return st.LastInputRequest.RequestID == "req-1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 5*time.Second)
			ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
				Agent: "claude-code", Prompt: "go", Command: []string{r.agent, "replay:" + capture(t, tt.lines...), "wait"}})
			if err != nil {
				t.Fatal(err)
			}
			r.waitState(t, ref, "the turn under way", tt.ready)
			if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
				t.Fatal(err)
			}
			st := r.wait(t, ref)
			if st.Lifecycle != eventstore.LifecycleCancelled || !strings.Contains(st.LifecycleReason, "during a turn") {
				t.Fatalf("after stop: %s (%s), want cancelled during a turn", st.Lifecycle, st.LifecycleReason)
			}
		})
	}
}
