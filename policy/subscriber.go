package policy

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Log is what the subscriber needs from the journal store.
type Log interface {
	Consume(ctx context.Context, cfg eventstore.ConsumerConfig, fn func(context.Context, eventstore.Entry) error) error
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
}

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Consumer is the durable consumer's name; every daemon on one log uses
	// the same name so that exactly one decides at a time. "policy" when empty.
	Consumer string
	// AckWait and PinnedTTL bound how long a dead subscriber's records wait
	// before a standby takes them over (see eventstore.ConsumerConfig).
	AckWait   time.Duration
	PinnedTTL time.Duration
	// CacheSize bounds the replayed states kept between records; 1024 when 0.
	CacheSize int
	Logger    *slog.Logger
}

// Subscriber reads the log, decides on every observation and every answering
// message, and appends the decision and its records. Several subscribers on
// one log take turns: one is active, the others stand by.
type Subscriber struct {
	log Log
	cfg SubscriberConfig

	// handling serializes Handle: a journal's cached state is folded by one
	// caller at a time.
	handling sync.Mutex

	mu     sync.Mutex
	states map[string]*cached
	tick   uint64
}

type cached struct {
	state *execution.State
	used  uint64
}

// NewSubscriber returns a subscriber over log.
func NewSubscriber(log Log, cfg SubscriberConfig) *Subscriber {
	if cfg.Consumer == "" {
		cfg.Consumer = "policy"
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Subscriber{log: log, cfg: cfg, states: map[string]*cached{}}
}

// Run decides until ctx ends.
func (s *Subscriber) Run(ctx context.Context) error {
	err := s.log.Consume(ctx, eventstore.ConsumerConfig{
		Name: s.cfg.Consumer, Exclusive: true, AckWait: s.cfg.AckWait, PinnedTTL: s.cfg.PinnedTTL,
		Skipped: func(off uint64, err error) {
			s.cfg.Logger.Error("policy skipped an undecodable record", "offset", off, "err", err)
		},
	}, s.Handle)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Handle decides on one log entry. It is idempotent: an entry decided
// before, by this subscriber or another, appends nothing new, and a decision
// whose records were cut short by a crash gets them completed.
func (s *Subscriber) Handle(ctx context.Context, e eventstore.Entry) error {
	s.handling.Lock()
	defer s.handling.Unlock()
	var decide func(*execution.State) (Outcome, bool)
	switch r := e.Record.(type) {
	case *eventstore.Observation:
		decide = func(st *execution.State) (Outcome, bool) { return Decide(st, r), true }
	case *eventstore.MessageAccepted:
		decide = func(st *execution.State) (Outcome, bool) { return DecideMessage(st, r) }
	default:
		return nil
	}
	b := e.Record.RecordBase()
	ref := eventstore.Reference{JournalID: b.JournalID, OwnerEntity: b.Scope, OwnerID: b.OwnerID, AgentExecutionID: b.AgentExecutionID}
	st, err := s.state(ctx, ref)
	if err != nil {
		return err
	}
	out, ok := decide(st)
	if !ok {
		return nil
	}
	if out.Duplicate {
		return s.complete(ctx, ref, out.Decision.Sequence, decide)
	}
	for _, r := range append([]eventstore.Record{out.Decision}, out.Records...) {
		entry, err := s.log.Append(ctx, ref, r)
		if err != nil {
			s.forget(ref.JournalID)
			return fmt.Errorf("policy: append %s for %s: %w", r.Kind(), b.RecordID, err)
		}
		if err := s.apply(ref.JournalID, entry.Record); err != nil {
			return err
		}
	}
	return nil
}

// state returns the execution's state replayed up to the journal's head.
func (s *Subscriber) state(ctx context.Context, ref eventstore.Reference) (*execution.State, error) {
	s.mu.Lock()
	c, ok := s.states[ref.JournalID]
	if !ok {
		c = &cached{state: &execution.State{}}
		s.states[ref.JournalID] = c
		s.evict()
	}
	s.tick++
	c.used = s.tick
	st := c.state
	s.mu.Unlock()

	for e, err := range s.log.ReadJournal(ctx, ref, st.Journal.LastSequence+1) {
		if err != nil {
			s.forget(ref.JournalID)
			return nil, fmt.Errorf("policy: replay %s: %w", ref, err)
		}
		if _, err := st.Apply(e.Record); err != nil {
			s.forget(ref.JournalID)
			return nil, fmt.Errorf("policy: replay %s: %w", ref, err)
		}
	}
	return st, nil
}

func (s *Subscriber) apply(journalID string, r eventstore.Record) error {
	s.mu.Lock()
	c := s.states[journalID]
	s.mu.Unlock()
	if c == nil || r.RecordBase().Sequence <= c.state.Journal.LastSequence {
		return nil // a duplicate append handed back a record already applied
	}
	if r.RecordBase().Sequence != c.state.Journal.LastSequence+1 {
		// Someone else appended in between; the next read catches up.
		return nil
	}
	if _, err := c.state.Apply(r); err != nil {
		s.forget(journalID)
		return fmt.Errorf("policy: apply %s: %w", r.Kind(), err)
	}
	return nil
}

func (s *Subscriber) forget(journalID string) {
	s.mu.Lock()
	delete(s.states, journalID)
	s.mu.Unlock()
}

// evict drops the least recently used state once the cache is full.
func (s *Subscriber) evict() {
	if len(s.states) <= s.cfg.CacheSize {
		return
	}
	var oldest string
	var min uint64
	for id, c := range s.states {
		if oldest == "" || c.used < min {
			oldest, min = id, c.used
		}
	}
	delete(s.states, oldest)
}

// complete re-derives the outcome of a decision that is already in the
// journal from the records before it, and appends any of its records that
// are missing: a subscriber killed between the decision and its records
// leaves them to the next one.
func (s *Subscriber) complete(ctx context.Context, ref eventstore.Reference, decisionSeq uint64, decide func(*execution.State) (Outcome, bool)) error {
	prefix := &execution.State{}
	have := map[string]bool{}
	for e, err := range s.log.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return fmt.Errorf("policy: reread %s: %w", ref, err)
		}
		b := e.Record.RecordBase()
		if b.Sequence < decisionSeq {
			if _, err := prefix.Apply(e.Record); err != nil {
				return fmt.Errorf("policy: reread %s: %w", ref, err)
			}
			continue
		}
		have[b.RecordID] = true
	}
	out, ok := decide(prefix)
	if !ok || out.Duplicate {
		return nil
	}
	for _, r := range out.Records {
		id := r.RecordBase().RecordID
		if id == "" {
			id = eventstore.RecordID(ref.JournalID, r.Kind(), eventstore.NaturalKey(r))
		}
		if have[id] {
			continue
		}
		if _, err := s.log.Append(ctx, ref, r); err != nil {
			return fmt.Errorf("policy: complete decision in %s: %w", ref, err)
		}
	}
	s.forget(ref.JournalID)
	return nil
}
