package eventstore

import (
	"context"
	"fmt"
	"iter"

	"github.com/nats-io/nats.go/jetstream"
)

// Follow yields the log from fromOffset (1 = the start) in batches, and
// keeps yielding as records are appended, until ctx ends or the caller
// stops. A batch holds at most maxBatch entries and ends early when the
// reader has caught up with the log, so a follower applies what exists at
// once instead of waiting for a full batch. The slice is the caller's.
func (s *JetStreamStore) Follow(ctx context.Context, fromOffset uint64, maxBatch int) iter.Seq2[[]Entry, error] {
	return func(yield func([]Entry, error) bool) {
		if s.closed.Load() {
			yield(nil, ErrClosed)
			return
		}
		if fromOffset == 0 {
			fromOffset = 1
		}
		if maxBatch <= 0 {
			maxBatch = 1000
		}
		cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{s.cfg.SubjectPrefix + ".>"},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    fromOffset,
		})
		if err != nil {
			yield(nil, fmt.Errorf("follow log from %d: %w", fromOffset, err))
			return
		}
		msgs, err := cons.Messages(jetstream.PullMaxMessages(maxBatch))
		if err != nil {
			yield(nil, fmt.Errorf("follow log from %d: %w", fromOffset, err))
			return
		}
		defer msgs.Stop()
		stop := context.AfterFunc(ctx, msgs.Stop)
		defer stop()
		batch := make([]Entry, 0, maxBatch)
		for {
			m, err := msgs.Next()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				yield(nil, fmt.Errorf("follow log: %w", err))
				return
			}
			meta, err := m.Metadata()
			if err != nil {
				yield(nil, fmt.Errorf("follow log: %w", err))
				return
			}
			r, err := Decode(m.Data())
			if err != nil {
				if !yield(nil, fmt.Errorf("record at offset %d: %w", meta.Sequence.Stream, err)) {
					return
				}
				continue
			}
			batch = append(batch, Entry{Offset: meta.Sequence.Stream, Record: r})
			if len(batch) >= maxBatch || meta.NumPending == 0 {
				if !yield(batch, nil) {
					return
				}
				batch = make([]Entry, 0, maxBatch)
			}
		}
	}
}
