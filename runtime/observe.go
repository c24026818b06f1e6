package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
)

// RecordObservation records a daemon-normalized observation. A repeated
// observation id returns the stored record and appends nothing.
func (rt *Runtime) RecordObservation(ctx context.Context, id string, o *eventstore.Observation) (eventstore.Entry, bool, error) {
	e, dup, err := rt.RecordObservationPending(ctx, id, o)
	if err != nil {
		return e, dup, err
	}
	if err := rt.WaitDurable(ctx); err != nil {
		return e, dup, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
	}
	return e, dup, nil
}

// pendingAppender is a Store that can append without waiting for the disk
// (eventstore.JetStreamStore).
type pendingAppender interface {
	AppendPending(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
	WaitDurable(ctx context.Context) error
}

// WaitDurable returns once every record the store holds is on disk.
func (rt *Runtime) WaitDurable(ctx context.Context) error {
	if s, ok := rt.cfg.Store.(pendingAppender); ok {
		return s.WaitDurable(ctx)
	}
	return nil
}

// RecordObservationPending is RecordObservation without the wait for the
// disk, where the store can append without it: for a caller that answers
// with the policy's decision on the observation, whose being durable
// makes the observation durable too (the log is durable in order). A
// caller that answers without the decision calls WaitDurable first.
func (rt *Runtime) RecordObservationPending(ctx context.Context, id string, o *eventstore.Observation) (eventstore.Entry, bool, error) {
	ref, _, _, err := rt.resolve(ctx, id)
	if err != nil {
		return eventstore.Entry{}, false, err
	}
	if seq, ok, err := rt.processed(ref, true, o.ObservationID); err != nil || ok {
		if err != nil {
			return eventstore.Entry{}, false, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
		}
		e, err := rt.storedObservation(ctx, ref, o.ObservationID, seq)
		return e, true, err
	}
	appendRecord := rt.cfg.Store.Append
	if s, ok := rt.cfg.Store.(pendingAppender); ok {
		appendRecord = s.AppendPending
	}
	e, err := appendRecord(ctx, ref, o)
	if err != nil {
		return e, false, fmt.Errorf("record observation %s: %w", o.ObservationID, err)
	}
	return e, e.Record != eventstore.Record(o), nil
}

// processed asks Config.Processed, when set, whether the journal holds id.
func (rt *Runtime) processed(ref eventstore.Reference, observation bool, id string) (uint64, bool, error) {
	if rt.cfg.Processed == nil || id == "" {
		return 0, false, nil
	}
	return rt.cfg.Processed(ref.AgentExecutionID, observation, id)
}

// storedObservation reads the observation with id that the journal holds at
// seq.
func (rt *Runtime) storedObservation(ctx context.Context, ref eventstore.Reference, id string, seq uint64) (eventstore.Entry, error) {
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, seq) {
		if err != nil {
			return e, fmt.Errorf("record observation %s: read the first one: %w", id, err)
		}
		if o, ok := e.Record.(*eventstore.Observation); ok && o.ObservationID == id {
			return e, nil
		}
		break
	}
	return eventstore.Entry{}, fmt.Errorf("record observation %s: the read model places it at sequence %d of %s, which holds another record", id, seq, ref.AgentExecutionID)
}

// resolve finds an execution's journal, descriptor and live process (nil
// when it has none here).
func (rt *Runtime) resolve(ctx context.Context, id string) (eventstore.Reference, eventstore.ProtocolDescriptor, *process, error) {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if ok {
		return p.ref, p.descriptor, p, nil
	}
	ref, err := rt.cfg.Store.Lookup(ctx, id)
	if err != nil {
		return ref, eventstore.ProtocolDescriptor{}, nil, err
	}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return ref, eventstore.ProtocolDescriptor{}, nil, err
		}
		if h, ok := e.Record.(*eventstore.Header); ok {
			return ref, h.ProtocolDescriptor, nil, nil
		}
		break
	}
	return ref, eventstore.ProtocolDescriptor{}, nil, fmt.Errorf("%s: %w", id, execution.ErrNoHeader)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
