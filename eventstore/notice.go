package eventstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// noticeSubject is the subject decision notices travel on: beside the
// journal stream's subjects, not under them, so that they are never stored.
func (s *JetStreamStore) noticeSubject() string { return "_" + s.cfg.SubjectPrefix + ".decided" }

// PublishDecided tells the other processes on the log that d and its state
// changes are appended, so that a request waiting for it elsewhere (one
// that recorded the observation through another daemon than the one whose
// policy decided) answers at once. A notice is not stored and may be lost:
// one that does not arrive leaves the waiter to find the decision in the
// journal.
func (s *JetStreamStore) PublishDecided(d *Decision) error {
	data, err := Encode(d)
	if err != nil {
		return err
	}
	return s.js.Conn().Publish(s.noticeSubject(), data)
}

// SubscribeDecided hands fn the decisions that processes on the log
// announce with PublishDecided, this one's included, until ctx ends. fn is
// called from one goroutine, in the order the notices arrive.
func (s *JetStreamStore) SubscribeDecided(ctx context.Context, fn func(*Decision)) error {
	sub, err := s.js.Conn().Subscribe(s.noticeSubject(), func(m *nats.Msg) {
		if r, err := Decode(m.Data); err == nil {
			if d, ok := r.(*Decision); ok {
				fn(d)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe to decision notices: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return nil
}
