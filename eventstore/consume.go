package eventstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerConfig configures a durable reader of the whole log.
type ConsumerConfig struct {
	// Name is the durable consumer's name; readers sharing a name share
	// one position in the log. Required; [A-Za-z0-9_-] only.
	Name string
	// Exclusive makes the readers of one name take turns: one is active and
	// receives every record in order, the others stand by and take over
	// when the active one stops pulling for PinnedTTL.
	Exclusive bool
	// AckWait is how long a delivered, unacknowledged record waits before
	// it is delivered again (to whichever reader is active); 30s when 0.
	AckWait time.Duration
	// PinnedTTL is how long an exclusive reader may stay silent before a
	// standby takes over; 10s when 0.
	PinnedTTL time.Duration
	// RetryDelay is how long a record the handler failed on waits before
	// it is handed to the handler again; 1s when 0.
	RetryDelay time.Duration
	// MaxAckPending is how many records may be delivered and not yet
	// acknowledged; 1 when 0. Above 1, records of different journals are
	// handled concurrently, each journal's one at a time in log order.
	MaxAckPending int
	// Skipped, when set, hears of records that cannot be decoded; they are
	// passed over so that one bad record does not stop the reader.
	Skipped func(offset uint64, err error)
	// Retrying, when set, hears of a pull that failed and is set up again.
	Retrying func(err error)
	// Regrouped, when set, hears that starting this reader changed how the
	// readers of its name share the log: a partitioned group's count
	// changed, or the group gave way to a reader of the whole log. It
	// says what changed and from which offset the log is read again.
	Regrouped func(change string)
}

// priorityGroup is the one priority group exclusive readers join.
const priorityGroup = "active"

// Consume delivers the log's records to fn, from the consumer's last
// acknowledged position (the start of the log for a new name), until ctx
// ends; failed pulls are set up again. Each journal's records reach fn one
// at a time, in log order; with MaxAckPending above 1, fn is called
// concurrently for different journals. fn returning nil acknowledges the
// record; an error hands it to fn again after RetryDelay, the journal's
// later records waiting behind it. A record is acknowledged only after fn
// returns, so a reader killed mid-record leaves it to be delivered again:
// handlers must be idempotent.
func (s *JetStreamStore) Consume(ctx context.Context, cfg ConsumerConfig, fn func(context.Context, Entry) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	cc := jetstream.ConsumerConfig{
		Durable:       cfg.Name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: s.cfg.SubjectPrefix + ".>",
		// Records pending beyond the limit wait on the server, in log
		// order; each journal's are handled in order here.
		MaxAckPending: cfg.MaxAckPending,
	}
	var opts []jetstream.PullMessagesOpt
	if cfg.Exclusive {
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PriorityGroups = []string{priorityGroup}
		cc.PinnedTTL = cfg.PinnedTTL
		opts = append(opts, jetstream.PullPriorityGroup(priorityGroup))
		// A reader of the whole log beside a partitioned group of the
		// same name would decide on the group's journals a second time:
		// it is refused while any member is in the group, and takes the
		// group's place, from its lowest progress, once none is.
		if err := s.replaceGroup(ctx, cfg, cc); err != nil {
			return err
		}
	}
	if c, err := s.stream.Consumer(ctx, cfg.Name); err == nil {
		// Where a consumer starts is fixed when it is made: one made to
		// take a group's place keeps its start.
		cc.DeliverPolicy, cc.OptStartSeq = c.CachedInfo().Config.DeliverPolicy, c.CachedInfo().Config.OptStartSeq
	}
	// Pulls are renewed well inside PinnedTTL, so a live reader stays pinned.
	expiry := max(time.Second, min(cfg.PinnedTTL/2, 5*time.Second))
	opts = append(opts, jetstream.PullMaxMessages(cfg.MaxAckPending), jetstream.PullExpiry(expiry))
	// A pull that fails (missed heartbeats on a loaded machine, a server
	// restart, a reconnect) is set up again: a reader stops only when ctx
	// ends, so the log never waits on a reader that gave up.
	// The consumer handle is kept across retries: it remembers the pin the
	// server gave this reader, so a reader that set up its pull again keeps
	// its turn instead of waiting out PinnedTTL behind its own old pin.
	var cons jetstream.Consumer
	for attempt := 0; ; attempt++ {
		var err error
		if cons == nil {
			cons, err = s.stream.CreateOrUpdateConsumer(ctx, cc)
			if err != nil {
				err = fmt.Errorf("consume %s: %w", cfg.Name, err)
			}
		}
		if cons != nil {
			err = s.consumeOnce(ctx, cfg, cons, opts, fn)
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				cons = nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cfg.Retrying != nil {
			cfg.Retrying(err)
		}
		t := time.NewTimer(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// withDefaults checks cfg and fills in its defaults.
func (cfg ConsumerConfig) withDefaults() (ConsumerConfig, error) {
	if esc, err := EscapeID(cfg.Name); err != nil || esc != cfg.Name {
		return cfg, fmt.Errorf("consume: consumer name %q: want 1 to %d of [A-Za-z0-9_-]", cfg.Name, MaxIDLength)
	}
	cfg.AckWait = cmpOr(cfg.AckWait, 30*time.Second)
	cfg.PinnedTTL = cmpOr(cfg.PinnedTTL, 10*time.Second)
	cfg.RetryDelay = cmpOr(cfg.RetryDelay, time.Second)
	cfg.MaxAckPending = max(cfg.MaxAckPending, 1)
	if cfg.Exclusive && cfg.PinnedTTL < 2*time.Second {
		return cfg, fmt.Errorf("consume %s: pinned TTL %s is too short (want 2s or more)", cfg.Name, cfg.PinnedTTL)
	}
	return cfg, nil
}

func (s *JetStreamStore) consumeOnce(ctx context.Context, cfg ConsumerConfig, cons jetstream.Consumer, opts []jetstream.PullMessagesOpt, fn func(context.Context, Entry) error) error {
	msgs, err := cons.Messages(opts...)
	if err != nil {
		return fmt.Errorf("consume %s: %w", cfg.Name, err)
	}
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	l := &lanes{ctx: ctx, cfg: cfg, fn: fn, stopPull: msgs.Stop, queues: map[string][]delivery{}}
	defer func() {
		// The records already taken are handled before the pull is set
		// up again, so that a journal's later records never overtake
		// them; the pull stops first, so that it takes no more.
		msgs.Stop()
		l.wg.Wait()
	}()
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := l.failed(); err != nil {
				return err
			}
			return fmt.Errorf("consume %s: %w", cfg.Name, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("consume %s: %w", cfg.Name, err)
		}
		r, err := Decode(m.Data())
		if err != nil {
			// A record that cannot be decoded will never decode: report it
			// and move on rather than block the log behind it.
			_ = m.Term()
			if cfg.Skipped != nil {
				cfg.Skipped(meta.Sequence.Stream, err)
			}
			continue
		}
		// The heartbeat starts now: a record waiting behind its journal's
		// earlier ones is as taken as the one being handled.
		l.add(m.Subject(), delivery{entry: Entry{Offset: meta.Sequence.Stream, Record: r}, beat: inProgress(m, cfg.AckWait),
			done: func() error { return ackOnce(ctx, m, cfg.AckWait) }})
	}
}

// lanes hands the records of one pull to fn, a journal at a time per
// lane: a journal's records wait in its queue, in log order, while one
// goroutine handles them; a lane ends when its queue is empty.
type lanes struct {
	ctx      context.Context
	cfg      ConsumerConfig
	fn       func(context.Context, Entry) error
	stopPull func()
	wg       sync.WaitGroup

	mu sync.Mutex
	// queues holds, for each journal (its subject) with a lane running,
	// the records not yet acknowledged, the one being handled first.
	queues map[string][]delivery
	err    error
}

// delivery is a record taken from the log and not yet handled.
type delivery struct {
	entry Entry
	// beat, when not nil, tells the server the record is being handled.
	beat *heartbeat
	// done is called once the handler succeeded: it acknowledges the
	// record.
	done func() error
}

// add queues d behind its journal's earlier records, starting the
// journal's lane when none runs.
func (l *lanes) add(journal string, d delivery) {
	l.mu.Lock()
	q, running := l.queues[journal]
	l.queues[journal] = append(q, d)
	l.mu.Unlock()
	if !running {
		l.wg.Go(func() { l.run(journal) })
	}
}

func (l *lanes) run(journal string) {
	for {
		l.mu.Lock()
		q := l.queues[journal]
		if len(q) == 0 {
			delete(l.queues, journal)
			l.mu.Unlock()
			return
		}
		d := q[0]
		l.mu.Unlock()
		l.handle(d)
		l.mu.Lock()
		l.queues[journal] = l.queues[journal][1:]
		l.mu.Unlock()
	}
}

// handle calls fn until it succeeds and acknowledges the record. When ctx
// ends first, the record is left unacknowledged, to be delivered again.
func (l *lanes) handle(d delivery) {
	defer d.beat.stop()
	for {
		if l.ctx.Err() != nil {
			return
		}
		err := l.fn(l.ctx, d.entry)
		if err == nil {
			break
		}
		// Retried here rather than handed back to the server, which
		// could deliver the journal's next record before this one again.
		t := time.NewTimer(l.cfg.RetryDelay)
		select {
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	d.beat.stop()
	if err := d.done(); err != nil && l.ctx.Err() == nil {
		// The record comes again AckWait from now, handled already: the
		// pull is set up again, once the records taken are handled.
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("consume %s: ack offset %d: %w", l.cfg.Name, d.entry.Offset, err)
		}
		l.mu.Unlock()
		l.stopPull()
	}
}

// failed returns the first acknowledgement that failed, if any.
func (l *lanes) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// heartbeat tells the server that a record is still being handled.
type heartbeat struct {
	mu      sync.Mutex
	stopped bool
	t       *time.Timer
}

// inProgress starts telling the server, every third of ackWait, that m is
// still being handled. AckWait is also how long a record delivered to a
// reader that died waits before it is delivered again, so it is kept short,
// and a live handler that takes longer (an append waiting out a leader
// election) must not have its record handed to another reader meanwhile.
// A handler done within a third of ackWait sends nothing.
func inProgress(m jetstream.Msg, ackWait time.Duration) *heartbeat {
	every := max(ackWait/3, 100*time.Millisecond)
	h := &heartbeat{}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = time.AfterFunc(every, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.stopped {
			_ = m.InProgress()
			h.t.Reset(every)
		}
	})
	return h
}

func (h *heartbeat) stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.t.Stop()
}

// ackRetry is how often an ack that failed is sent again.
const ackRetry = 250 * time.Millisecond

// ackOnce acknowledges a handled record, sending the ack again while the
// connection is closed for up to within (while it reconnects, the client
// keeps the ack and sends it once connected).
//
// The ack is not confirmed by the server: a confirmed one is a request,
// whose reply cost every record a round trip and the server a reply, about
// 2% of the CPU of a recordObservation answer and more of its time. An ack
// the server never gets keeps the record pending, taking one of
// MaxAckPending's places, until the server delivers it again AckWait
// later, to a handler that must be idempotent anyway (a reader killed
// mid-record leaves the same).
func ackOnce(ctx context.Context, m jetstream.Msg, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := m.Ack()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(ackRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
