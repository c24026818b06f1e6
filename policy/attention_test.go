package policy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// decided appends an input and the outcome of deciding on it, as a journal
// holds them.
func decided(t *testing.T, prior []eventstore.Record, in eventstore.Record) []eventstore.Record {
	t.Helper()
	st := stateWith(t, prior...)
	var out Outcome
	switch r := in.(type) {
	case *eventstore.Observation:
		out = Decide(st, r)
	case *eventstore.MessageAccepted:
		var ok bool
		if out, ok = DecideMessage(st, r); !ok {
			return append(prior, in)
		}
	}
	return append(append(append(prior, in), out.Decision), out.Records...)
}

// TestDecideByTheAttentionTable: the policy's decisions move the attention
// as the table says, from where the execution stands.
func TestDecideByTheAttentionTable(t *testing.T) {
	auth, low := eventstore.ConfidenceAuthoritative, eventstore.ConfidenceLow
	prompt := func(id string) *eventstore.MessageAccepted {
		return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt", Payload: json.RawMessage(`{"text":"go on"}`)}
	}
	answer := func(id, req string) *eventstore.MessageAccepted {
		return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "answer",
			Payload: json.RawMessage(fmt.Sprintf(`{"requestId":%q,"text":"deny"}`, req))}
	}
	// Where the execution stands before the input.
	blocked := []eventstore.Record{observe("b", auth, &eventstore.BlockedSignal{Reason: "no creds", Needs: "a token"})}
	asking := []eventstore.Record{observe("q", auth, &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "?", Choices: []string{"yes", "no"}})}
	claimed := []eventstore.Record{observe("c", auth, &eventstore.ReadyForVerificationSignal{Summary: "ready"})}
	cases := []struct {
		name      string
		before    []eventstore.Record
		in        eventstore.Record
		action    eventstore.DecisionAction // "": no decision
		attention eventstore.Attention
		request   string
	}{
		{"progress ends blocked", blocked, observe("o", auth, &eventstore.ProgressSignal{Summary: "found it"}),
			eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"weak progress leaves blocked", blocked, observe("o", low, &eventstore.ProgressSignal{Summary: "hm"}),
			eventstore.ActionRecordOnly, eventstore.AttentionBlocked, ""},
		{"status without a new phase ends blocked", blocked, observe("o", auth, &eventstore.StatusSignal{Summary: "idle", Phase: "idle"}),
			eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"plan ends blocked", blocked, observe("o", eventstore.ConfidenceHigh, &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "a", Status: eventstore.PlanItemOpen}}}),
			eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"a message from the agent leaves blocked", blocked, observe("o", auth, &eventstore.MessageSignal{Text: "still stuck"}),
			eventstore.ActionEmitMessage, eventstore.AttentionBlocked, ""},
		{"an operator's message ends blocked", blocked, prompt("m"), eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"an answer to no open request ends blocked", blocked, answer("m", "req-0"), eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"a question replaces blocked", blocked, observe("o", auth, &eventstore.NeedsInputSignal{RequestID: "req-2", Question: "?"}),
			eventstore.ActionUpdateState, eventstore.AttentionAwaitingOperator, "req-2"},
		{"a claim replaces blocked", blocked, observe("o", auth, &eventstore.CompletedClaimSignal{Summary: "done"}),
			eventstore.ActionRouteOwnerEffect, eventstore.AttentionAwaitingSystem, ""},
		{"blocked again", blocked, observe("o", auth, &eventstore.BlockedSignal{Reason: "still no creds"}),
			eventstore.ActionUpdateState, eventstore.AttentionBlocked, ""},

		{"progress leaves a request open", asking, observe("o", auth, &eventstore.ProgressSignal{Summary: "waiting"}),
			eventstore.ActionRecordOnly, eventstore.AttentionAwaitingOperator, "req-1"},
		{"blocked leaves a request open", asking, observe("o", auth, &eventstore.BlockedSignal{Reason: "x"}),
			eventstore.ActionRecordOnly, eventstore.AttentionAwaitingOperator, "req-1"},
		{"a claim leaves a request open", asking, observe("o", auth, &eventstore.CompletedClaimSignal{Summary: "done"}),
			eventstore.ActionRouteOwnerEffect, eventstore.AttentionAwaitingOperator, "req-1"},
		{"a prompt leaves a request open", asking, prompt("m"), "", eventstore.AttentionAwaitingOperator, "req-1"},
		{"an answer to another request leaves it open", asking, answer("m", "req-0"),
			eventstore.ActionRecordOnly, eventstore.AttentionAwaitingOperator, "req-1"},
		{"a denial answers a request", asking, answer("m", "req-1"), eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"a new question replaces the open one", asking, observe("o", auth, &eventstore.NeedsInputSignal{RequestID: "req-2", Question: "?"}),
			eventstore.ActionUpdateState, eventstore.AttentionAwaitingOperator, "req-2"},

		{"progress leaves a claim waiting", claimed, observe("o", auth, &eventstore.ProgressSignal{Summary: "tidying"}),
			eventstore.ActionRecordOnly, eventstore.AttentionAwaitingSystem, ""},
		{"a message ends the wait for the owner", claimed, prompt("m"), eventstore.ActionUpdateState, eventstore.AttentionAutonomous, ""},
		{"blocked after a claim", claimed, observe("o", auth, &eventstore.BlockedSignal{Reason: "x"}),
			eventstore.ActionUpdateState, eventstore.AttentionBlocked, ""},

		{"a prompt to an autonomous agent is not decided", nil, prompt("m"), "", eventstore.AttentionAutonomous, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := []eventstore.Record{running()}
			for _, r := range c.before {
				before = decided(t, before, r)
			}
			all := decided(t, before, c.in)
			st := stateWith(t, all...)
			var key string
			switch r := c.in.(type) {
			case *eventstore.Observation:
				key = r.ObservationID
			case *eventstore.MessageAccepted:
				key = r.MessageID
			}
			d, ok := st.Decisions[key]
			switch {
			case c.action == "" && ok:
				t.Fatalf("decision %+v, want none", d)
			case c.action != "" && (!ok || d.Action != c.action):
				t.Fatalf("decision %+v, want %s", d, c.action)
			}
			if st.Attention != c.attention || st.CurrentInputRequestID != c.request {
				t.Fatalf("attention %s, request %q; want %s, %q", st.Attention, st.CurrentInputRequestID, c.attention, c.request)
			}
			if want := st.Attention == eventstore.AttentionBlocked; (st.Blocked != nil) != want {
				t.Fatalf("blocked %+v while the attention is %s", st.Blocked, st.Attention)
			}
			// The move is the table's.
			prior := stateWith(t, before...)
			mv := execution.NextAttention(prior, event(c.in, prior))
			if mv.Moves && mv.To != st.Attention {
				t.Fatalf("the table moves to %s, the policy to %s", mv.To, st.Attention)
			}
		})
	}
}

// event is the table's row for an input, as the policy sees it.
func event(in eventstore.Record, st *execution.State) execution.AttentionEvent {
	switch r := in.(type) {
	case *eventstore.MessageAccepted:
		if req, _ := r.RequestID(); req != "" && req == st.CurrentInputRequestID {
			return execution.OnAnswer
		}
		return execution.OnMessage
	case *eventstore.Observation:
		switch r.Signal.Payload.(type) {
		case *eventstore.BlockedSignal:
			return execution.OnBlocked
		case *eventstore.NeedsInputSignal:
			return execution.OnNeedsInput
		case *eventstore.CompletedClaimSignal, *eventstore.FailedClaimSignal, *eventstore.ReadyForVerificationSignal:
			return execution.OnClaim
		case *eventstore.ProgressSignal, *eventstore.StatusSignal, *eventstore.PlanSignal:
			if execution.MovesState(r.Confidence) {
				return execution.OnWorking
			}
		}
	}
	return execution.OnTurnResult // moves nothing
}
