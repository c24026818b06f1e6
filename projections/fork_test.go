package projections_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

func forkMsg(id, text string) *eventstore.MessageAccepted {
	return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: []byte(fmt.Sprintf(`{"text":%q}`, text)), MutatesContext: true}
}

func forkPlan(id, text string) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(&eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: text, Status: eventstore.PlanItemStatuses[0]}}})}
}

// ensureFork writes the header of id, forked after sequence seq of parent.
func ensureFork(t *testing.T, s *eventstore.JetStreamStore, id string, parent eventstore.Reference, seq uint64) eventstore.Reference {
	t.Helper()
	ctx := context.Background()
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
	if err != nil {
		t.Fatal(err)
	}
	h := &eventstore.Header{AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
	if parent.JournalID != "" {
		for e, err := range s.ReadJournal(ctx, parent, seq) {
			if err != nil {
				t.Fatal(err)
			}
			eid, err := eventstore.EventID(e.Record)
			if err != nil {
				t.Fatal(err)
			}
			h.ForkedFrom = &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: seq, EventID: eid}
			break
		}
	}
	if _, err := s.EnsureJournal(ctx, ref, h); err != nil {
		t.Fatal(err)
	}
	return ref
}

// A fork's projected state is its lineage replay: the parent's prefix folded
// in at the header, the fork's own records after; a fresh build of the
// projection from the log gives the same.
func TestProjectedForkIsItsLineage(t *testing.T) {
	ctx := context.Background()
	_, s := startLog(t)
	parent := ensureFork(t, s, "parent", eventstore.Reference{}, 0)
	appendRecord(t, s, parent, forkMsg("p1", "one"))
	appendRecord(t, s, parent, forkPlan("pp", "the parent's plan"))
	fork := ensureFork(t, s, "fork", parent, 3)
	appendRecord(t, s, parent, forkPlan("pp2", "a later plan the fork does not see"))
	appendRecord(t, s, fork, forkMsg("f1", "fork one"))
	grand := ensureFork(t, s, "grand", fork, 2)
	appendRecord(t, s, grand, forkMsg("g1", "grand one"))
	all := []eventstore.Reference{parent, fork, grand}

	db := openDB(t, projections.DefaultConfig(dbPath(t, "live")))
	catchUp(t, db, s)
	for _, ref := range all {
		want, err := execution.ReplayLineage(ctx, s, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.Execution(ref.AgentExecutionID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(withoutTimeline(want), withoutTimeline(got)); diff != "" {
			t.Fatalf("Execution(%s) differs from ReplayLineage (-lineage +projection):\n%s", ref.AgentExecutionID, diff)
		}
		var own []execution.TimelineItem
		for _, it := range want.Timeline {
			if !it.Inherited {
				own = append(own, it)
			}
		}
		if diff := cmp.Diff(reversed(own), fullTimeline(t, db, ref.AgentExecutionID, 10)); diff != "" {
			t.Fatalf("Timeline(%s) differs from the lineage's own items (-lineage +projection):\n%s", ref.AgentExecutionID, diff)
		}
	}
	g, _ := db.Execution("grand")
	if len(g.Plan) != 1 || g.Plan[0].Text != "the parent's plan" || fmt.Sprint(g.Lineage) != "[fork parent]" {
		t.Fatalf("projected grand: plan %+v lineage %v, want the parent's plan at the fork and [fork parent]", g.Plan, g.Lineage)
	}
	fresh := openDB(t, projections.DefaultConfig(dbPath(t, "fresh")))
	catchUp(t, fresh, s)
	checkSameAs(t, fresh, db, all)
}
