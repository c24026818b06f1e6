package eventstore

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Decoding is most of what reading the log costs, so the readers that go
// through many records (scan, Follow) fetch messages in chunks and decode
// the chunks on every core while the next ones arrive, handing them on in
// log order.

// scanBatchSize trades hand-off cost against how long the first record of a
// read waits for its batch.
const scanBatchSize = 64

// scanBatch is a run of messages decoded together by one worker.
type scanBatch struct {
	offsets []uint64
	// subjects name each message's journal, for a reader of several that
	// must place a record even when it does not decode.
	subjects []string
	data     [][]byte
	records  []Record
	errs     []error
	err      error // the read ended after this batch
	// flush ends a batch of Follow: it filled one, or caught up.
	flush bool
	done  chan struct{}
}

func (b *scanBatch) decode() {
	b.records = make([]Record, len(b.data))
	b.errs = make([]error, len(b.data))
	for i, d := range b.data {
		r, err := Decode(d)
		if err != nil {
			err = &OffsetError{Offset: b.offsets[i], Err: err}
		}
		b.records[i], b.errs[i] = r, err
	}
	close(b.done)
}

// chunkReader reads through an ordered consumer in decoded chunks.
type chunkReader struct {
	ctx     context.Context
	cancel  context.CancelFunc
	msgs    jetstream.MessagesContext
	stop    func() bool
	wg      sync.WaitGroup
	ordered chan *scanBatch
}

// readChunks starts reading subjects from offset start, pulling pull
// messages at a time; what names the reading in errors, and mark, told of
// every message's offset and how many messages follow it, says whether it
// ends its chunk (flush, which also flags the chunk) and whether reading is
// done after it.
func (s *JetStreamStore) readChunks(ctx context.Context, subjects []string, start uint64, pull int, what string,
	mark func(offset, pending uint64) (flush, done bool)) (*chunkReader, error) {
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: subjects,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    start,
	})
	if err != nil {
		return nil, fmt.Errorf("%s from %d: %w", what, start, err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(pull))
	if err != nil {
		return nil, fmt.Errorf("%s from %d: %w", what, start, err)
	}
	r := &chunkReader{msgs: msgs}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.stop = context.AfterFunc(r.ctx, msgs.Stop)
	workers := max(1, runtime.GOMAXPROCS(0))
	jobs := make(chan *scanBatch, workers)
	r.ordered = make(chan *scanBatch, 2*workers)
	for range workers {
		r.wg.Go(func() {
			for b := range jobs {
				b.decode()
			}
		})
	}
	r.wg.Go(func() { fetchChunks(r.ctx, msgs, what, jobs, r.ordered, mark) })
	return r, nil
}

// next returns the next chunk, decoded; false once reading has ended (the
// last chunk carries the error that ended it) or ctx has.
func (r *chunkReader) next() (*scanBatch, bool) {
	b, ok := <-r.ordered
	if !ok {
		return nil, false
	}
	select {
	case <-b.done:
		return b, true
	case <-r.ctx.Done():
		return nil, false
	}
}

// close stops reading and waits for the fetcher and the decoders.
func (r *chunkReader) close() {
	r.cancel()
	r.msgs.Stop()
	r.wg.Wait()
	r.stop()
}

// fetchChunks reads msgs in chunks of at most scanBatchSize messages, each
// sent to ordered (in log order) and to jobs (to be decoded), until reading
// fails, ctx ends or mark says it is done; what names the reading in
// errors. mark hears of every message: flush ends its chunk and flags it,
// done ends the reading after it.
func fetchChunks(ctx context.Context, msgs jetstream.MessagesContext, what string, jobs, ordered chan<- *scanBatch,
	mark func(offset, pending uint64) (flush, done bool)) {
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
			offset, pending, ok := ackPosition(m.Reply())
			if !ok {
				meta, err := m.Metadata()
				if err != nil {
					b.err = fmt.Errorf("%s: %w", what, err)
					done = true
					break
				}
				offset, pending = meta.Sequence.Stream, meta.NumPending
			}
			b.offsets = append(b.offsets, offset)
			b.subjects = append(b.subjects, m.Subject())
			b.data = append(b.data, m.Data())
			if b.flush, done = mark(offset, pending); b.flush || done {
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

// ackPosition reads a message's stream sequence and the number of messages
// pending after it from its reply subject, as Msg.Metadata does but without
// allocating, which a read of the whole log does a million times. The
// subject is $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.
// <consumer seq>.<time>.<pending>, or, from newer servers, the same with
// <domain>.<account hash> before <stream> and one or more tokens after
// <pending>. ok is false for any other shape, which Metadata then reports.
func ackPosition(reply string) (offset, pending uint64, ok bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return 0, 0, false
	}
	var tokens [10]string
	n := 0
	for ; n < len(tokens); n++ {
		var more bool
		tokens[n], rest, more = strings.Cut(rest, ".")
		if !more {
			n++
			break
		}
	}
	var seq, left string
	switch {
	case n == 7:
		seq, left = tokens[3], tokens[6]
	case n >= 9:
		seq, left = tokens[5], tokens[8]
	default:
		return 0, 0, false
	}
	offset, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || offset == 0 {
		return 0, 0, false
	}
	pending, err = strconv.ParseUint(left, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return offset, pending, true
}
