package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

// A decision announced by one process on the log reaches another's
// subscriber, and nothing of it is stored in the journal stream.
func TestDecisionNoticeReachesAnotherProcess(t *testing.T) {
	b := fixtures.StartNATS(t)
	s1 := fixtures.OpenStore(t, b)
	s2, nc := fixtures.OpenOtherStore(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan eventstore.Decided, 2)
	var asked []string
	wants := func(execution, observation string) bool {
		asked = append(asked, execution+"/"+observation)
		return observation == "o-1"
	}
	if err := s2.SubscribeDecided(ctx, wants, func(d eventstore.Decided) { got <- d }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	before, err := s1.LastOffset(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ref := storetest.Ref(eventstore.OwnerTask, "t", "notice")
	ref, err = s1.EnsureJournal(ctx, ref, storetest.Header("a"))
	if err != nil {
		t.Fatal(err)
	}
	before, err = s1.LastOffset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := &eventstore.Decision{DecisionID: "d-1", ObservationID: "o-1", Action: eventstore.DecisionAction("record-only")}
	d.JournalID, d.AgentExecutionID, d.Sequence, d.OccurredAt = ref.JournalID, ref.AgentExecutionID, 7, time.Now().UTC()
	d.Scope, d.OwnerID = ref.OwnerEntity, ref.OwnerID
	d.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindDecision, "d-1")
	// A notice no one waits for is refused by wants and never handed on;
	// the one after it is.
	unwanted := *d
	unwanted.DecisionID, unwanted.ObservationID = "d-0", "o-0"
	if err := s1.PublishDecided(eventstore.Decided{Decision: &unwanted, Through: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s1.PublishDecided(eventstore.Decided{Decision: d, Through: 42}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Decision.DecisionID != "d-1" || n.Decision.ObservationID != "o-1" || n.Decision.AgentExecutionID != ref.AgentExecutionID || n.Through != 42 {
			t.Errorf("notice carries %+v through %d, want decision d-1 on o-1 of %s through 42", n.Decision, n.Through, ref.AgentExecutionID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the notice never arrived")
	}
	want := []string{ref.AgentExecutionID + "/o-0", ref.AgentExecutionID + "/o-1"}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("wants was asked (-want +got):\n%s", diff)
	}
	select {
	case n := <-got:
		t.Errorf("a notice wants refused was handed on: %+v", n.Decision)
	default:
	}
	if after, err := s1.LastOffset(ctx); err != nil || after != before {
		t.Errorf("the log's last offset went from %d to %d (%v): a notice was stored", before, after, err)
	}
}
