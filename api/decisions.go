package api

import (
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Decisions wakes the requests that wait for the policy's decision on an
// observation (recordObservation, and the MCP signal tools) when a policy
// subscriber in this process has carried it out, so that they do not read
// the journal again and again: under a few hundred concurrent clients,
// those reads were most of a request's time. It is handed the decision
// once its state changes are in the log too (policy.SubscriberConfig's
// Decided), so the answer's read-after-write settle finds them: a client
// that answers the request an observation opened finds it open. The zero
// value is ready to use.
type Decisions struct {
	mu      sync.Mutex
	waiting map[decisionKey][]chan eventstore.Decided
}

// decisionKey is an observation of an execution.
type decisionKey struct{ execution, observation string }

// wait registers a wait for the decision on the observation. The channel
// gets the decision if the publisher sees it after the call, so a caller
// that registers before it appends the observation needs no read for a
// decision that came first; release ends the wait.
func (w *Decisions) wait(execution, observation string) (<-chan eventstore.Decided, func()) {
	k := decisionKey{execution, observation}
	ch := make(chan eventstore.Decided, 1)
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[decisionKey][]chan eventstore.Decided{}
	}
	w.waiting[k] = append(w.waiting[k], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		chs := w.waiting[k]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(w.waiting, k)
		} else {
			w.waiting[k] = chs
		}
	}
}

// Waits reports whether a request waits for the decision on the
// execution's observation: a decision notice no one here waits for need
// not be decoded (eventstore.JetStreamStore.SubscribeDecided).
func (w *Decisions) Waits(execution, observation string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.waiting[decisionKey{execution, observation}]
	return ok
}

// Deliver hands a decision carried out to whoever waits for it.
func (w *Decisions) Deliver(d eventstore.Decided) {
	k := decisionKey{d.Decision.AgentExecutionID, d.Decision.ObservationID}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.waiting[k] {
		select {
		case ch <- d:
		default: // already has it
		}
	}
}
