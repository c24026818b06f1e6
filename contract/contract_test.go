package contract

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

func plan(id string, items ...eventstore.PlanItem) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(&eventstore.PlanSignal{Items: items})}
}

func ask(id string, ni *eventstore.NeedsInputSignal) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(ni)}
}

func answer(id string, src eventstore.MessageSource, req, text string) *eventstore.MessageAccepted {
	p, _ := json.Marshal(map[string]string{"requestId": req, "text": text})
	return &eventstore.MessageAccepted{MessageID: id, Source: src, MessageType: "answer", Payload: p, MutatesContext: true}
}

// journal writes recs through a real file store and reads them back, so
// the functions see records as the store gives them (sequences, times).
func journal(t *testing.T, recs ...eventstore.Record) []eventstore.Record {
	t.Helper()
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := storetest.Ref(eventstore.OwnerTask, "t1", "exec-1")
	h := storetest.Header("agent-x")
	h.SessionID = "sess-1"
	h.ProtocolDescriptor.Messages = append(h.ProtocolDescriptor.Messages, eventstore.MessageDescriptor{
		Type: "answer", Label: "Answer", Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent})
	if ref, err = s.EnsureJournal(ctx, ref, h); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := s.Append(ctx, ref, r); err != nil {
			t.Fatalf("append %T: %v", r, err)
		}
	}
	return fixtures.ReadJournal(t, s, ref)
}

func TestTodosKeepStatusHistoryAcrossPlanUpdates(t *testing.T) {
	recs := journal(t,
		plan("p1", eventstore.PlanItem{ID: "1", Text: "read code", Status: eventstore.PlanItemInProgress},
			eventstore.PlanItem{ID: "2", Text: "write tests", Status: eventstore.PlanItemOpen}),
		plan("p2", eventstore.PlanItem{ID: "1", Text: "read code", Status: eventstore.PlanItemDone},
			eventstore.PlanItem{ID: "2", Text: "write tests", Status: eventstore.PlanItemOpen}),
		plan("p3", eventstore.PlanItem{ID: "1", Text: "read code", Status: eventstore.PlanItemDone},
			eventstore.PlanItem{ID: "2", Text: "write tests", Status: eventstore.PlanItemDropped}),
	)
	todos := Todos(recs)
	if len(todos) != 2 {
		t.Fatalf("todos = %+v", todos)
	}
	a, b := todos[0], todos[1]
	if a.TodoID != "1" || a.SessionID != "sess-1" || a.Status != eventstore.PlanItemDone || len(a.History) != 2 ||
		a.History[0].Status != eventstore.PlanItemInProgress || a.History[1].Status != eventstore.PlanItemDone {
		t.Fatalf("todo 1 = %+v", a)
	}
	if a.History[0].Sequence == 0 || a.History[1].Sequence <= a.History[0].Sequence || a.History[1].RecordID == "" {
		t.Fatalf("history names no records: %+v", a.History)
	}
	if b.Status != eventstore.PlanItemDropped || len(b.History) != 2 || !b.UpdatedAt.After(b.CreatedAt) && !b.UpdatedAt.Equal(b.CreatedAt) {
		t.Fatalf("todo 2 = %+v", b)
	}
	if b.History[1].Sequence != recs[3].RecordBase().Sequence {
		t.Fatalf("todo 2 changed at %d, want the third plan's %d", b.History[1].Sequence, recs[3].RecordBase().Sequence)
	}
}

func TestApprovalsAnsweredPendingDeniedAndClosed(t *testing.T) {
	recs := journal(t,
		ask("o1", &eventstore.NeedsInputSignal{RequestID: "q1", Question: "which?", Choices: []string{"a", "b"}}),
		answer("m1", eventstore.SourceOperator, "q1", "a"),
		ask("o2", &eventstore.NeedsInputSignal{RequestID: "p1", Question: "run rm?", Kind: "permission", Tool: &eventstore.ToolUse{Name: "Bash"}}),
		answer("m2", eventstore.SourceOwner, "p1", "deny"),
		ask("o3", &eventstore.NeedsInputSignal{RequestID: "q2", Question: "still there?"}),
	)
	got := Approvals(recs)
	if len(got) != 3 {
		t.Fatalf("approvals = %+v", got)
	}
	q1, p1, q2 := got[0], got[1], got[2]
	if q1.Status != ApprovalAnswered || q1.Answer != "a" || q1.ResolvedBy != "operator" || q1.ResolvedAt == nil || q1.ResolvedSequence == 0 {
		t.Fatalf("q1 = %+v", q1)
	}
	if q1.RunID != "exec-1" || q1.SessionID != "sess-1" || q1.AgentID != "agent-x" {
		t.Fatalf("q1 carries no run context: %+v", q1)
	}
	if p1.Status != ApprovalDenied || p1.Tool != "Bash" || p1.ResolvedBy != "owner" {
		t.Fatalf("p1 = %+v", p1)
	}
	if q2.Status != ApprovalPending || q2.ResolvedAt != nil {
		t.Fatalf("q2 = %+v", q2)
	}

	ended := append(recs, &eventstore.StateChanged{Base: eventstore.Base{AgentExecutionID: "exec-1", Sequence: 99}, Lifecycle: eventstore.LifecycleCompleted})
	if a := Approvals(ended)[2]; a.Status != ApprovalClosed || a.ResolvedSequence != 99 {
		t.Fatalf("q2 after run end = %+v", a)
	}
}
