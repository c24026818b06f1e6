package acpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/acpserver"
	"github.com/agentjournal/agentjournal/eventstore"
)

// shown is what an editor is told of an update: its kind and text.
type shown struct{ Kind, Text string }

func shownOf(t *testing.T, rec eventstore.Record) []shown {
	t.Helper()
	out := []shown{}
	for _, u := range acpserver.Updates(rec) {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var w struct {
			Kind    string `json:"sessionUpdate"`
			Content *struct {
				Text string `json:"text"`
			} `json:"content"`
			ToolCallID string `json:"toolCallId"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		s := shown{Kind: w.Kind, Text: w.ToolCallID}
		if w.Content != nil {
			s.Text = w.Content.Text
		}
		out = append(out, s)
	}
	return out
}

func observed(p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: "obs-1", Source: eventstore.ObservedMCP,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
}

// TestUpdates: the agent's messages and its questions without choices are
// shown as agent messages with the signal's timeline text; what an editor
// has no place for is shown as nothing.
func TestUpdates(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  eventstore.Record
		want []shown
	}{
		{"prompt", &eventstore.MessageAccepted{MessageID: "m-1", Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: json.RawMessage(`{"text":"fix it"}`)}, []shown{{"user_message_chunk", "fix it"}}},
		{"message signal", observed(&eventstore.MessageSignal{Text: "done, see main.go"}),
			[]shown{{"agent_message_chunk", "done, see main.go"}}},
		{"question", observed(&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Which color?"}),
			[]shown{{"agent_message_chunk", "Which color?"}}},
		{"question with choices", observed(&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Which color?", Choices: []string{"red", "blue"}}),
			[]shown{}},
		{"permission", observed(&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Run ls?", Kind: string(eventstore.InputPermission)}),
			[]shown{}},
		{"progress", observed(&eventstore.ProgressSignal{Summary: "reading"}), []shown{}},
		{"tool call", &eventstore.ActivityUpdated{ToolCall: &eventstore.ToolCall{ID: "call-1", Name: "Bash", Status: eventstore.ToolCallStarted}},
			[]shown{{"tool_call", "call-1"}}},
		{"interruption", &eventstore.Interruption{Reason: eventstore.InterruptCrash}, []shown{}},
		{"checkpoint", &eventstore.CheckpointCreated{CheckpointID: "turn-1", StateSummary: eventstore.CheckpointSummary{Title: "x"}}, []shown{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, shownOf(t, tc.rec)); diff != "" {
				t.Errorf("Updates (-want +got):\n%s", diff)
			}
		})
	}
}
