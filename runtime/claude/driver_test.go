package claude

import (
	"encoding/json"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestControlRequestAnsweredFromTheParse: the parse that makes a control
// request's needs-input observation also keeps the request, so the answer
// goes back as its control response; a request the output never made is
// answered as a user message that names it.
func TestControlRequestAnsweredFromTheParse(t *testing.T) {
	d := agenttest.NewReader(t, Agent{})
	evs := d.Parse([]byte(`{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"make test"},"permission_suggestions":[{"type":"addRules"}]}}`))
	if got := agenttest.DescribeAll(evs); len(got) != 1 || got[0] != "needs permission: Allow Bash: make test? [allow allow-always deny]" {
		t.Fatalf("events %v, want one permission request", got)
	}
	answer := func(id, text string) map[string]any {
		t.Helper()
		payload, _ := json.Marshal(map[string]string{"text": text, "requestId": id})
		data, ok, err := d.Encode(&eventstore.MessageAccepted{MessageID: "m-" + id, MessageType: "answer", Payload: payload})
		if err != nil || !ok {
			t.Fatalf("Encode answer to %s = %v, %v", id, ok, err)
		}
		var line map[string]any
		if err := json.Unmarshal(data, &line); err != nil {
			t.Fatalf("Encode wrote %q, not JSON: %v", data, err)
		}
		return line
	}
	got := answer("req-1", "allow-always")
	resp, _ := got["response"].(map[string]any)
	decision, _ := resp["response"].(map[string]any)
	if got["type"] != "control_response" || resp["request_id"] != "req-1" || decision["behavior"] != "allow" || decision["updatedPermissions"] == nil {
		t.Errorf("answer to req-1 = %v, want a control_response allowing it with the suggested rules", got)
	}
	// Answered once: the same id again, and an id never asked, are user
	// messages.
	for _, id := range []string{"req-1", "req-2"} {
		if got := answer(id, "allow"); got["type"] != "user" {
			t.Errorf("answer to %s = %v, want a user message", id, got)
		}
	}
}
