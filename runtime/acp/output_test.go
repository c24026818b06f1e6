package acp

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestToolOutput: a tool call's end carries the text of its content, held
// from an earlier update when the end carries none; a diff is told as the
// path it edits; a failed call's content is its error and its output.
func TestToolOutput(t *testing.T) {
	update := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + u + `}}`
	}
	evs := agenttest.Parse(t, Agent{}, agenttest.Lines(
		update(`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run t1","kind":"execute","rawInput":{"command":"echo t1"},"status":"pending"}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"t1"}}]}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`),
		update(`{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Edit a.go","kind":"edit","locations":[{"path":"/w/a.go"}],"status":"pending"}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"t2","status":"completed","content":[{"type":"diff","path":"/w/a.go","oldText":"a","newText":"b"},{"type":"content","content":{"type":"text","text":"1 line changed"}}]}`),
		update(`{"sessionUpdate":"tool_call","toolCallId":"t3","title":"Run t3","kind":"execute","status":"pending"}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"t3","status":"failed","content":[{"type":"content","content":{"type":"text","text":"boom: t3 failed"}}]}`),
	)...)
	ends := agenttest.ToolEnds(evs)
	want := []eventstore.ToolCall{
		{ID: "t1", Name: "Run t1", Status: eventstore.ToolCallSucceeded, Output: "t1"},
		{ID: "t2", Name: "Edit a.go", Status: eventstore.ToolCallSucceeded, Output: "edited /w/a.go\n1 line changed"},
		{ID: "t3", Name: "Run t3", Status: eventstore.ToolCallFailed, Error: "boom: t3 failed", Output: "boom: t3 failed"},
	}
	if len(ends) != len(want) {
		t.Fatalf("%d calls ended (%+v), want %d", len(ends), ends, len(want))
	}
	for i := range want {
		if ends[i] != want[i] {
			t.Errorf("call %d: got %+v, want %+v", i, ends[i], want[i])
		}
	}
}
