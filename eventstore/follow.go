package eventstore

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Follow yields the log from fromOffset (1 = the start) in batches, and
// keeps yielding as records are appended, until ctx ends or the caller
// stops. A batch holds at most maxBatch entries and ends early when the
// reader has caught up with the log, so a follower applies what exists at
// once instead of waiting for a full batch. The slice is the caller's.
//
// A record that does not decode is yielded as an *OffsetError, after the
// batch of the records before it; following goes on after it.
//
// Decoding is most of what reading costs, so messages are decoded in
// chunks on every core while the next ones arrive, as scan does: a
// projection catching up with a long log spends its time applying records,
// not waiting for them.
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
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			msgs.Stop()
			wg.Wait()
		}()
		stop := context.AfterFunc(ctx, msgs.Stop)
		defer stop()

		workers := max(1, runtime.GOMAXPROCS(0))
		jobs := make(chan *scanBatch, workers)
		ordered := make(chan *scanBatch, 2*workers)
		for range workers {
			wg.Go(func() {
				for b := range jobs {
					b.decode()
				}
			})
		}
		// A chunk that completes a batch of maxBatch messages, or finds the
		// log caught up, ends the batch: a caught-up follower gets each
		// record as soon as it arrives.
		inBatch := 0
		wg.Go(func() {
			fetchChunks(ctx, msgs, "follow log", jobs, ordered, func(meta *jetstream.MsgMetadata) (bool, bool) {
				if inBatch++; inBatch >= maxBatch || meta.NumPending == 0 {
					inBatch = 0
					return true, false
				}
				return false, false
			})
		})

		batch := make([]Entry, 0, maxBatch)
		for b := range ordered {
			select {
			case <-b.done:
			case <-ctx.Done():
				return
			}
			for i, off := range b.offsets {
				if b.errs[i] != nil {
					// The records before it come first, in log order.
					if len(batch) > 0 {
						if !yield(batch, nil) {
							return
						}
						batch = make([]Entry, 0, maxBatch)
					}
					if !yield(nil, b.errs[i]) {
						return
					}
					continue
				}
				batch = append(batch, Entry{Offset: off, Record: b.records[i]})
			}
			if b.flush && len(batch) > 0 {
				if !yield(batch, nil) {
					return
				}
				batch = make([]Entry, 0, maxBatch)
			}
			if b.err != nil {
				if len(batch) > 0 && !yield(batch, nil) {
					return
				}
				if ctx.Err() == nil {
					yield(nil, b.err)
				}
				return
			}
		}
	}
}

// fetchChunks reads msgs in chunks of at most scanBatchSize messages, each
// sent to ordered (in log order) and to jobs (to be decoded), until reading
// fails, ctx ends or mark says it is done; what names the reading in
// errors. mark hears of every message: flush ends its chunk and flags it,
// done ends the reading after it.
func fetchChunks(ctx context.Context, msgs jetstream.MessagesContext, what string, jobs, ordered chan<- *scanBatch,
	mark func(meta *jetstream.MsgMetadata) (flush, done bool)) {
	defer close(ordered)
	defer close(jobs)
	for done := false; !done; {
		b := &scanBatch{done: make(chan struct{})}
		for len(b.offsets) < scanBatchSize {
			m, err := msgs.Next()
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				b.err = fmt.Errorf("%s: %w", what, err)
				done = true
				break
			}
			meta, err := m.Metadata()
			if err != nil {
				b.err = fmt.Errorf("%s: %w", what, err)
				done = true
				break
			}
			b.offsets = append(b.offsets, meta.Sequence.Stream)
			b.data = append(b.data, m.Data())
			if b.flush, done = mark(meta); b.flush || done {
				break
			}
		}
		select {
		case ordered <- b:
		case <-ctx.Done():
			return
		}
		select {
		case jobs <- b:
		case <-ctx.Done():
			return
		}
	}
}
