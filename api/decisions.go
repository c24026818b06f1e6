package api

import (
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
)

// decisionWaiters wakes the requests that wait for the policy's decision on
// an observation (recordObservation, and the MCP signal tools) when the
// live-events publisher sees it, so that they do not read the journal again
// and again: under a few hundred concurrent clients, those reads were most
// of a request's time.
type decisionWaiters struct {
	mu      sync.Mutex
	waiting map[decisionKey][]chan *eventstore.Decision
}

// decisionKey is an observation of an execution.
type decisionKey struct{ execution, observation string }

// wait registers a wait for the decision on the observation. The channel
// gets the decision if the publisher sees it after the call, so a caller
// that registers before it appends the observation needs no read for a
// decision that came first; release ends the wait.
func (w *decisionWaiters) wait(execution, observation string) (<-chan *eventstore.Decision, func()) {
	k := decisionKey{execution, observation}
	ch := make(chan *eventstore.Decision, 1)
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[decisionKey][]chan *eventstore.Decision{}
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

// deliver hands a decision read from the log to whoever waits for it.
func (w *decisionWaiters) deliver(e eventstore.Entry) {
	d, ok := e.Record.(*eventstore.Decision)
	if !ok {
		return
	}
	k := decisionKey{d.AgentExecutionID, d.ObservationID}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.waiting[k] {
		select {
		case ch <- d:
		default: // already has it
		}
	}
}
