package api

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

func decision(execution, observation, id string) eventstore.Decided {
	d := &eventstore.Decision{DecisionID: id, ObservationID: observation}
	d.AgentExecutionID = execution
	return eventstore.Decided{Decision: d, Through: 9}
}

// A decision reaches every wait for its observation of its execution, and
// no other; a released wait is gone from the registry.
func TestDecisionWaiters(t *testing.T) {
	var w Decisions
	a1, releaseA1 := w.wait("exec-a", "obs-1")
	a1again, releaseA1again := w.wait("exec-a", "obs-1")
	b1, releaseB1 := w.wait("exec-b", "obs-1")
	if !w.Waits("exec-a", "obs-1") || w.Waits("exec-a", "obs-2") || w.Waits("exec-c", "obs-1") {
		t.Errorf("Waits: exec-a/obs-1 %v (want true), exec-a/obs-2 %v and exec-c/obs-1 %v (want false)",
			w.Waits("exec-a", "obs-1"), w.Waits("exec-a", "obs-2"), w.Waits("exec-c", "obs-1"))
	}

	w.Deliver(decision("exec-a", "obs-2", "d-other"))
	w.Deliver(decision("exec-a", "obs-1", "d-1"))
	w.Deliver(decision("exec-a", "obs-1", "d-1")) // delivered twice: a redelivered record

	for name, ch := range map[string]<-chan eventstore.Decided{"first wait": a1, "second wait": a1again} {
		select {
		case d := <-ch:
			if d.Decision.DecisionID != "d-1" || d.Through != 9 {
				t.Errorf("%s got decision %s through offset %d, want d-1 through 9", name, d.Decision.DecisionID, d.Through)
			}
		default:
			t.Errorf("%s got no decision", name)
		}
	}
	select {
	case d := <-b1:
		t.Errorf("a wait of another execution got decision %s", d.Decision.DecisionID)
	default:
	}

	releaseA1()
	releaseA1again()
	releaseB1()
	if w.Waits("exec-a", "obs-1") {
		t.Error("Waits reports a released wait")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.waiting) != 0 {
		t.Errorf("%d keys left after every wait was released", len(w.waiting))
	}
}
