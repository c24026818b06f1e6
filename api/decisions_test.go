package api

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

func decision(execution, observation, id string) *eventstore.Decision {
	d := &eventstore.Decision{DecisionID: id, ObservationID: observation}
	d.AgentExecutionID = execution
	return d
}

// A decision reaches every wait for its observation of its execution, and
// no other; a released wait is gone from the registry.
func TestDecisionWaiters(t *testing.T) {
	var w Decisions
	a1, releaseA1 := w.wait("exec-a", "obs-1")
	a1again, releaseA1again := w.wait("exec-a", "obs-1")
	b1, releaseB1 := w.wait("exec-b", "obs-1")

	w.Deliver(decision("exec-a", "obs-2", "d-other"))
	w.Deliver(decision("exec-a", "obs-1", "d-1"))
	w.Deliver(decision("exec-a", "obs-1", "d-1")) // delivered twice: a redelivered record

	for name, ch := range map[string]<-chan *eventstore.Decision{"first wait": a1, "second wait": a1again} {
		select {
		case d := <-ch:
			if d.DecisionID != "d-1" {
				t.Errorf("%s got decision %s, want d-1", name, d.DecisionID)
			}
		default:
			t.Errorf("%s got no decision", name)
		}
	}
	select {
	case d := <-b1:
		t.Errorf("a wait of another execution got decision %s", d.DecisionID)
	default:
	}

	releaseA1()
	releaseA1again()
	releaseB1()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.waiting) != 0 {
		t.Errorf("%d keys left after every wait was released", len(w.waiting))
	}
}
