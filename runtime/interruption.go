package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// inFlight is what a run was doing when it was cut short.
type inFlight struct {
	turn           uint64
	messageID      string
	inputRequestID string
}

// inFlightOf reads from a journal what its run was doing: the turn that
// started and did not end, the message accepted without an outcome (being
// delivered) or else the one delivered last while the turn ran, and the
// input request left open. Turns are the runtime's own state changes,
// turn:N:start and turn:N:end; the first turn starts with the launch
// unless the execution waited for its first message.
func inFlightOf(ref eventstore.Reference, records []eventstore.Record) inFlight {
	states := map[string]bool{}
	outcome := map[string]bool{}
	var accepted []string
	var delivered, request string
	for _, r := range records {
		switch r := r.(type) {
		case *eventstore.StateChanged:
			states[r.RecordID] = true
			if r.CurrentInputRequestID.Set {
				request = r.CurrentInputRequestID.ID
			}
		case *eventstore.MessageAccepted:
			accepted = append(accepted, r.MessageID)
		case *eventstore.MessageDelivery:
			outcome[r.MessageID] = true
			if r.Status == eventstore.DeliveryDelivered {
				delivered = r.MessageID
			}
		}
	}
	has := func(key string) bool {
		return states[eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)]
	}
	var started, ended uint64
	if !has("turn:waiting-first") {
		started = 1
	}
	for n := uint64(1); n <= uint64(len(states)); n++ {
		if has(fmt.Sprintf("turn:%d:start", n)) {
			started = n
		}
		if has(fmt.Sprintf("turn:%d:end", n)) {
			ended = n
		}
	}
	var f inFlight
	if started > ended {
		f.turn = started
		f.messageID = delivered
	}
	for _, id := range accepted {
		if !outcome[id] {
			f.messageID = id
		}
	}
	f.inputRequestID = request
	return f
}

// recordInterruption appends the interruption record of a run ending for
// reason, naming what the journal says was in flight. Its id is the
// journal's own (one per journal), so recording it twice, as a recovery
// after a crash between it and the final state change does, is a no-op.
func (rt *Runtime) recordInterruption(ctx context.Context, ref eventstore.Reference, reason eventstore.InterruptionReason, detail string) error {
	return rt.recordInterruptionAs(ctx, ref, "", reason, detail)
}

// recordInterruptionAs is recordInterruption with the record's id derived
// from key, so that writers who may both record one interruption append
// it once; an empty key leaves the id to the store.
func (rt *Runtime) recordInterruptionAs(ctx context.Context, ref eventstore.Reference, key string, reason eventstore.InterruptionReason, detail string) error {
	in, err := rt.interruption(ctx, ref, reason, detail)
	if err == nil {
		if key != "" {
			in.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindInterruption, key)
		}
		_, err = rt.cfg.Store.Append(ctx, ref, in)
	}
	if err != nil {
		return fmt.Errorf("record the interruption of %s: %w", ref.AgentExecutionID, err)
	}
	return nil
}

// interruption is the interruption record of a run ending for reason,
// naming what its journal says was in flight.
func (rt *Runtime) interruption(ctx context.Context, ref eventstore.Reference, reason eventstore.InterruptionReason, detail string) (*eventstore.Interruption, error) {
	var records []eventstore.Record
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, err
		}
		records = append(records, e.Record)
	}
	f := inFlightOf(ref, records)
	return &eventstore.Interruption{Reason: reason, Detail: clipReason(detail), Turn: f.turn, MessageID: f.messageID, InputRequestID: f.inputRequestID}, nil
}

// interrupted records the interruption of a live run that is about to end;
// a failure is logged, and the end is recorded all the same.
func (rt *Runtime) interrupted(p *process, reason eventstore.InterruptionReason, detail string) {
	p.mu.Lock()
	ended := p.ended
	p.mu.Unlock()
	if ended {
		return
	}
	// What is in flight is read from the journal, so it must hold what
	// waits for the log first; given up on, nothing more is recorded.
	if !rt.settled(p, nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := rt.interruption(ctx, p.ref, reason, detail)
	if err == nil {
		err = rt.journal(ctx, p, in)
	}
	if err != nil && !errors.Is(err, errHeld) {
		rt.cfg.Logger.Error("record interruption", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

// interruptionOf says whether a process's end interrupted its run, and why:
// its supervisor lost (system_restart), a stop by its time limit (timeout),
// by the daemon shutting down (shutdown) or by the operator (canceled), or
// a signal nobody here sent (crash). An agent that exits by itself, even
// failing, interrupted nothing.
func interruptionOf(e exit, end ending) (eventstore.InterruptionReason, bool) {
	_, timedOut := end.timedOut()
	signalled := end.stage >= signalled
	switch {
	case e.lost:
		return eventstore.InterruptSystemRestart, true
	case timedOut:
		// Even a clean exit after its input closed: the limit, not the
		// agent, ended the run.
		return eventstore.InterruptTimeout, true
	case signalled && end.cause == byShutdown:
		return eventstore.InterruptShutdown, true
	case signalled, end.stage == inputClosed && end.midTurn:
		// A turn cut short by closing its input is cancelled as much
		// as one cut short by a signal.
		return eventstore.InterruptCanceled, true
	case strings.HasPrefix(e.desc, "signal: "):
		// The runtime signals only through Stop, which records the
		// stage first: any other signal came from outside.
		return eventstore.InterruptCrash, true
	}
	return "", false
}
