package eventstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
)

// Decided is a decision the policy carried out: the decision, appended with
// its state changes and durable.
type Decided struct {
	Decision *Decision
	// Through is the log offset of the last record appended for the
	// decision, so that a reader can wait for a projection to hold them
	// all without asking the log where it ends; 0 when not known (a
	// notice from a daemon of an earlier version).
	Through uint64
}

// Headers of a decision notice: whom it concerns, so that a process reads
// the notices it waits for and drops the rest undecoded, and the offset of
// the decision's last record.
const (
	noticeExecution   = "Agentjournal-Execution"
	noticeObservation = "Agentjournal-Observation"
	noticeThrough     = "Agentjournal-Through"
)

// noticeSubject is the subject decision notices travel on: beside the
// journal stream's subjects, not under them, so that they are never stored.
func (s *JetStreamStore) noticeSubject() string { return "_" + s.cfg.SubjectPrefix + ".decided" }

// PublishDecided tells the other processes on the log that a decision and
// its state changes are appended, so that a request waiting for it
// elsewhere (one that recorded the observation through another daemon than
// the one whose policy decided) answers at once. A notice is not stored and
// may be lost: one that does not arrive leaves the waiter to find the
// decision in the journal.
func (s *JetStreamStore) PublishDecided(d Decided) error {
	data, err := Encode(d.Decision)
	if err != nil {
		return err
	}
	m := &nats.Msg{Subject: s.noticeSubject(), Data: data, Header: nats.Header{}}
	m.Header.Set(noticeExecution, d.Decision.AgentExecutionID)
	m.Header.Set(noticeObservation, d.Decision.ObservationID)
	if d.Through > 0 {
		m.Header.Set(noticeThrough, strconv.FormatUint(d.Through, 10))
	}
	return s.js.Conn().PublishMsg(m)
}

// SubscribeDecided hands fn the decisions that processes on the log
// announce with PublishDecided, this one's included, until ctx ends. wants,
// when not nil, is asked first whether anyone here waits for the decision
// on an execution's observation; a notice it refuses is dropped without
// being decoded, since every daemon hears every decision. fn is called
// from one goroutine, in the order the notices arrive.
func (s *JetStreamStore) SubscribeDecided(ctx context.Context, wants func(execution, observation string) bool, fn func(Decided)) error {
	sub, err := s.js.Conn().Subscribe(s.noticeSubject(), func(m *nats.Msg) {
		exec, obs := m.Header.Get(noticeExecution), m.Header.Get(noticeObservation)
		if wants != nil && exec != "" && !wants(exec, obs) {
			return
		}
		r, err := Decode(m.Data)
		if err != nil {
			return
		}
		d, ok := r.(*Decision)
		if !ok {
			return
		}
		through, _ := strconv.ParseUint(m.Header.Get(noticeThrough), 10, 64)
		fn(Decided{Decision: d, Through: through})
	})
	if err != nil {
		return fmt.Errorf("subscribe to decision notices: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return nil
}
