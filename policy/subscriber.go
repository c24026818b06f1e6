package policy

import (
	"cmp"
	"context"
	"errors"
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
	// before a standby takes them over (see eventstore.ConsumerConfig);
	// DefaultAckWait and DefaultPinnedTTL when 0.
	AckWait   time.Duration
	PinnedTTL time.Duration
	// CacheSize bounds the replayed states kept between records; 1024 when 0.
	CacheSize int
	// MaxAckPending is how many records the subscriber takes from the log
	// at once, deciding on different journals' concurrently and on each
	// journal's in log order; DefaultMaxAckPending when 0.
	MaxAckPending int
	// Partitions, 2 or more, shares the deciding among the subscribers
	// on one log: the journals are hashed into that many partitions, each
	// decided by one subscriber at a time, each subscriber deciding its
	// share (eventstore.JetStreamStore.ConsumePartitioned). Every
	// subscriber on a log must give the same count; 0 or 1 has one
	// subscriber decide on the whole log while the others stand by.
	// AckWait and PinnedTTL do not apply to partitions: a dead
	// subscriber's partitions are taken over once their locks lapse
	// (eventstore.MemberTTLBeats heartbeats, 5 s).
	Partitions int
	// Member is this subscriber's name among the partitioned ones, the
	// same across restarts; required with Partitions.
	Member string
	// Owns, when set, hears the partitions this subscriber decides on
	// whenever they change (they are logged too).
	Owns func(partitions []int)
	// Decided, when set, hears of every decision this subscriber carried
	// out, once the decision and its state changes are appended and
	// durable: a process that answers with a decision (the API) learns of
	// it, and of the offset its projection must reach to hold its
	// records, without reading the log.
	Decided func(eventstore.Decided)
	Logger  *slog.Logger
}

// Defaults of SubscriberConfig. The record a subscriber was handling when it
// died is delivered again AckWait after it was delivered, whoever pulls
// next: that bounds a takeover after a kill, and the restart of a daemon on
// its own log, where the record was pending when the server stopped. The
// consumer's defaults (30s, 10s) made policy decisions stall for up to
// 30s after a daemon was killed; a live handler that takes longer keeps its
// record by telling the server it is still at it.
const (
	DefaultAckWait   = 5 * time.Second
	DefaultPinnedTTL = 5 * time.Second
)

// DefaultMaxAckPending is the records a subscriber has in hand by default:
// every record of the log passes through it, its own decisions included,
// and a few hundred agents may each have an observation waiting. An
// observation holds its place until its decision is durable, and each
// brings two records of the subscriber's own after it, so a few hundred
// waiting agents need three places each and more: with 256, 200 clients'
// answers waited for places (bench --suite api, docs/architecture.md).
const DefaultMaxAckPending = 1024

// Subscriber reads the log, decides on every observation and every answering
// message, and appends the decision and its records. Several subscribers on
// one log take turns: one is active, the others stand by.
type Subscriber struct {
	log Log
	cfg SubscriberConfig

	mu     sync.Mutex
	states map[string]*cached
	// turns serializes Handle per journal: a journal's cached state is
	// folded by one caller at a time, different journals' at once.
	turns map[string]*turn
	tick  uint64
}

// turn is a journal's lock, kept while a caller holds or waits for it.
type turn struct {
	mu      sync.Mutex
	holders int
}

// lock waits for the journal's turn and returns the function that ends it.
func (s *Subscriber) lock(journalID string) (unlock func()) {
	s.mu.Lock()
	t := s.turns[journalID]
	if t == nil {
		t = &turn{}
		s.turns[journalID] = t
	}
	t.holders++
	s.mu.Unlock()
	t.mu.Lock()
	return func() {
		t.mu.Unlock()
		s.mu.Lock()
		if t.holders--; t.holders == 0 {
			delete(s.turns, journalID)
		}
		s.mu.Unlock()
	}
}

// cached is a journal as the subscriber knows it: the state folded up to
// the last of its records delivered in order, and the ids every decision in
// it answers, whether read, folded or appended by this subscriber, each
// with the decision's sequence.
type cached struct {
	state   *execution.State
	decided map[string]uint64
	// ahead are the state changes of decisions on records up to the
	// state's last that the log holds after it, in log order: the policy
	// decides on a record as if the decisions on the records before it
	// were carried out at once, so that when it decides late (an agent
	// that signals twice in a row) it still decides in order.
	ahead []aheadChange
	// last is the newest decision folded into the state.
	last lastDecision
	used uint64
}

// aheadChange is a state change beyond the cached state, with the sequence of
// the record whose decision it carries out.
type aheadChange struct {
	change eventstore.Record
	input  uint64
}

// lastDecision is a decision as reading the log beyond a record needs it:
// the state changes that follow it carry it out.
type lastDecision struct {
	id string
	// input is the sequence of the record it answers, 0 when that record
	// is not folded.
	input uint64
}

func newCached() *cached {
	return &cached{state: &execution.State{}, decided: map[string]uint64{}}
}

// decisionState is the state the policy decides on the record at sequence
// seq, the one the cache is folded up to: the state there, with the state
// changes ahead of it that carry out decisions on the records before it.
func (c *cached) decisionState(seq uint64) *execution.State {
	if len(c.ahead) == 0 {
		return c.state
	}
	// A state change touches none of the maps the copy shares.
	st := *c.state
	for _, a := range c.ahead {
		if a.input < seq {
			// The changes ahead are this journal's, above the state's
			// last sequence and in order, so they fold; one that did
			// not would be left out.
			_, _ = st.Apply(a.change)
		}
	}
	st.Journal, st.UpdatedAt = c.state.Journal, c.state.UpdatedAt
	return &st
}

// NewSubscriber returns a subscriber over log.
func NewSubscriber(log Log, cfg SubscriberConfig) *Subscriber {
	cfg.Consumer = cmp.Or(cfg.Consumer, "policy")
	cfg.CacheSize = cmp.Or(cfg.CacheSize, 1024)
	cfg.AckWait = cmp.Or(cfg.AckWait, DefaultAckWait)
	cfg.PinnedTTL = cmp.Or(cfg.PinnedTTL, DefaultPinnedTTL)
	cfg.MaxAckPending = cmp.Or(cfg.MaxAckPending, DefaultMaxAckPending)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Subscriber{log: log, cfg: cfg, states: map[string]*cached{}, turns: map[string]*turn{}}
}

// partitionedLog is a Log that shares its journals among several readers
// (eventstore.JetStreamStore).
type partitionedLog interface {
	ConsumePartitioned(ctx context.Context, cfg eventstore.PartitionConfig, fn func(context.Context, eventstore.Entry) error) error
}

// Run decides until ctx ends.
func (s *Subscriber) Run(ctx context.Context) error {
	cc := eventstore.ConsumerConfig{
		Name: s.cfg.Consumer, Exclusive: true, AckWait: s.cfg.AckWait, PinnedTTL: s.cfg.PinnedTTL,
		MaxAckPending: s.cfg.MaxAckPending,
		Skipped: func(off uint64, err error) {
			s.cfg.Logger.Error("policy skipped an undecodable record", "offset", off, "err", err)
		},
		Retrying: func(err error) {
			s.cfg.Logger.Warn("policy consumer restarting", "err", err)
		},
		Regrouped: func(change string) {
			s.cfg.Logger.Warn("policy deciders regrouped", "change", change)
		},
	}
	var err error
	if s.cfg.Partitions > 1 {
		pl, ok := s.log.(partitionedLog)
		if !ok {
			return fmt.Errorf("policy: %d partitions: this log cannot be partitioned", s.cfg.Partitions)
		}
		err = pl.ConsumePartitioned(ctx, eventstore.PartitionConfig{
			ConsumerConfig: cc, Partitions: s.cfg.Partitions, Member: s.cfg.Member,
			Owns: func(parts []int) {
				s.cfg.Logger.Info("policy decides on partitions", "member", s.cfg.Member, "partitions", parts, "of", s.cfg.Partitions)
				if s.cfg.Owns != nil {
					s.cfg.Owns(parts)
				}
			},
		}, s.Handle)
	} else {
		err = s.log.Consume(ctx, cc, s.Handle)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Handle decides on one log entry. A decision depends only on the journal
// up to the record it answers, so whichever subscriber decides, and however
// far the journal has moved on since (an agent that signals and exits at
// once), the outcome is the same. It is idempotent: an entry decided before,
// by this subscriber or another, appends nothing new, and a decision whose
// records were cut short by a crash gets them completed.
//
// Every other record of a cached journal is folded into its state as it is
// delivered, so that in the steady state, where each record is the next of
// its journal, deciding reads nothing from the log.
//
// Handle may be called concurrently: calls for one journal take turns, and
// must come in log order; calls for different journals run at once.
func (s *Subscriber) Handle(ctx context.Context, e eventstore.Entry) error {
	err := s.handle(ctx, e)
	if errors.Is(err, eventstore.ErrGap) || errors.Is(err, eventstore.ErrDamaged) {
		// A journal with records missing cannot be decided on soundly
		// (nor take the decision: ErrDamaged is the store refusing it),
		// and retrying will not bring them back: the record is left
		// undecided, for a person to restore the journal, and the log
		// goes on for every other journal.
		s.forget(e.Record.RecordBase().JournalID)
		s.cfg.Logger.Error("policy skipped a record of a damaged journal", "offset", e.Offset, "err", err)
		return nil
	}
	return err
}

func (s *Subscriber) handle(ctx context.Context, e eventstore.Entry) error {
	b := e.Record.RecordBase()
	defer s.lock(b.JournalID)()
	ref := eventstore.Reference{JournalID: b.JournalID, OwnerEntity: b.Scope, OwnerID: b.OwnerID, AgentExecutionID: b.AgentExecutionID}
	key, decide := decider(e.Record)
	if decide == nil {
		s.follow(ref, e.Record)
		return nil
	}
	c, behind, err := s.journal(ctx, ref, b.Sequence, key)
	if err != nil {
		return err
	}
	more, err := s.advance(ctx, ref, c, e.Record, key)
	if err != nil {
		return err
	}
	// Records before this one that lack their decision were taken by a
	// subscriber that stopped before deciding them, and come again only
	// AckWait after it took them: they are decided first, so that the
	// journal's decisions stay in its order.
	for _, r := range append(behind, more...) {
		k, d := decider(r)
		if err := s.decidePast(ctx, ref, c, r.RecordBase().Sequence, k, d); err != nil {
			return err
		}
	}
	if c.state.Journal.LastSequence != b.Sequence {
		// The cache is past this record (a redelivery).
		return s.decidePast(ctx, ref, c, b.Sequence, key, decide)
	}
	st := c.decisionState(b.Sequence)
	if at, done := c.decided[key]; done {
		return s.complete(ctx, ref, c, b.Sequence, st, at, decide)
	}
	return s.carryOut(ctx, ref, c, key, b.Sequence, st, decide)
}

// decidePast decides on the record at sequence seq (key), which the cache
// is past, on the journal as it was at the record.
func (s *Subscriber) decidePast(ctx context.Context, ref eventstore.Reference, c *cached, seq uint64, key string, decide func(*execution.State) (Outcome, bool)) error {
	prefix, err := s.prefix(ctx, ref, seq, key)
	if err != nil {
		return err
	}
	if at, done := c.decided[key]; done {
		return s.complete(ctx, ref, c, seq, prefix, at, decide)
	}
	return s.carryOut(ctx, ref, c, key, seq, prefix, decide)
}

// decider returns the id a record is decided under and how to decide on
// it, or a nil decide for a record that is not decided on.
func decider(r eventstore.Record) (string, func(*execution.State) (Outcome, bool)) {
	switch r := r.(type) {
	case *eventstore.Observation:
		return r.ObservationID, func(st *execution.State) (Outcome, bool) { return Decide(st, r), true }
	case *eventstore.MessageAccepted:
		// Whether a message needs a decision depends on the state: one to
		// a blocked agent does, as does every answer.
		return r.MessageID, func(st *execution.State) (Outcome, bool) { return DecideMessage(st, r) }
	}
	return "", nil
}

func (s *Subscriber) carryOut(ctx context.Context, ref eventstore.Reference, c *cached, key string, input uint64, st *execution.State, decide func(*execution.State) (Outcome, bool)) error {
	out, ok := decide(st)
	if !ok || out.Duplicate {
		return nil
	}
	recs := append([]eventstore.Record{out.Decision}, out.Records...)
	entries, err := s.appendAll(ctx, ref, recs)
	for _, e := range entries {
		if e.Record == eventstore.Record(out.Decision) {
			c.decided[key] = e.Record.RecordBase().Sequence
		}
		c.aheadOf(e.Record, input)
	}
	if err != nil {
		s.forget(ref.JournalID)
		what := "the decision's records"
		if len(entries) < len(recs) {
			what = string(recs[len(entries)].Kind())
		}
		return fmt.Errorf("policy: append %s for %s: %w", what, key, err)
	}
	if s.cfg.Decided != nil {
		if d, ok := entries[0].Record.(*eventstore.Decision); ok {
			s.cfg.Decided(eventstore.Decided{Decision: d, Through: entries[len(entries)-1].Offset})
		}
	}
	return nil
}

// allAppender is a Log that appends several records to one journal at
// once, waiting for the disk once (eventstore.JetStreamStore.AppendAll).
type allAppender interface {
	AppendAll(ctx context.Context, ref eventstore.Reference, recs []eventstore.Record) ([]eventstore.Entry, error)
}

// appendAll appends recs in order, with one wait for the disk when the log
// can; the entries are those appended, up to a failure.
func (s *Subscriber) appendAll(ctx context.Context, ref eventstore.Reference, recs []eventstore.Record) ([]eventstore.Entry, error) {
	if l, ok := s.log.(allAppender); ok {
		return l.AppendAll(ctx, ref, recs)
	}
	entries := make([]eventstore.Entry, 0, len(recs))
	for _, r := range recs {
		e, err := s.log.Append(ctx, ref, r)
		if err != nil {
			return entries, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// aheadOf notes a state change the subscriber appended for the decision on
// the record at sequence input, when it is beyond the cached state.
func (c *cached) aheadOf(r eventstore.Record, input uint64) {
	if _, ok := r.(*eventstore.StateChanged); ok && r.RecordBase().Sequence > c.state.Journal.LastSequence {
		c.ahead = append(c.ahead, aheadChange{change: r, input: input})
	}
}

// follow folds a record that is not decided on into its journal's cached
// state when it is the journal's next record; the subscriber's own
// decisions come back this way. A journal that is not cached is left alone:
// it is read, decisions and all, when something in it is to be decided, and
// a state started here would not know the decisions that journal holds
// after the record being decided.
func (s *Subscriber) follow(ref eventstore.Reference, r eventstore.Record) {
	s.mu.Lock()
	c, ok := s.states[ref.JournalID]
	if ok {
		s.tick++
		c.used = s.tick
	}
	s.mu.Unlock()
	if !ok || r.RecordBase().Sequence != c.state.Journal.LastSequence+1 {
		// Records missing before it are read when the journal's next
		// observation needs them.
		return
	}
	if err := c.fold(r); err != nil {
		s.forget(ref.JournalID)
		s.cfg.Logger.Warn("policy dropped a journal it cannot fold", "journal", ref.JournalID, "err", err)
	}
}

// journal returns the cached view of a journal. The first time, it reads
// the journal once: the state is folded up to sequence seq, the record about
// to be decided (key), and the ids of every decision it holds are noted, so a
// decision appended after the record it answers is known when that record
// is delivered again. It also returns the records read before seq that
// lack the decision they call for, in log order.
func (s *Subscriber) journal(ctx context.Context, ref eventstore.Reference, seq uint64, key string) (*cached, []eventstore.Record, error) {
	s.mu.Lock()
	s.tick++
	tick := s.tick
	c, ok := s.states[ref.JournalID]
	if ok {
		c.used = tick
	}
	s.mu.Unlock()
	if ok {
		return c, nil, nil
	}
	c = newCached()
	c.used = tick
	behind, err := s.read(ctx, ref, c, 1, seq, key)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.states[ref.JournalID] = c
	s.evict()
	s.mu.Unlock()
	return c, behind, nil
}

// read folds the journal from sequence from up to seq into c, the record
// about to be decided (key), and reads on to note the decisions after it and
// to find the state changes ahead of it: those of the decisions on it and
// the records before it. It returns the records it folded before seq that
// call for a decision the journal does not hold.
func (s *Subscriber) read(ctx context.Context, ref eventstore.Reference, c *cached, from, seq uint64, key string) ([]eventstore.Record, error) {
	undecided, err := s.readUntil(ctx, ref, c, from, seq, key, false)
	if err != nil {
		return nil, err
	}
	var behind []eventstore.Record
	for _, r := range undecided {
		if k, _ := decider(r); !c.isDecided(k) {
			behind = append(behind, r)
		}
	}
	return behind, nil
}

// readUntil is read, returning every record folded before seq that calls
// for a decision, decided or not; with once, it stops at the decision on
// the record, for a view of the journal that is used once, to decide on
// that record.
func (s *Subscriber) readUntil(ctx context.Context, ref eventstore.Reference, c *cached, from, seq uint64, key string, once bool) ([]eventstore.Record, error) {
	c.ahead = nil
	last := c.last
	var calls []eventstore.Record
	for e, err := range s.log.ReadJournal(ctx, ref, from) {
		if err != nil {
			return nil, fmt.Errorf("policy: read %s: %w", ref, err)
		}
		r := e.Record
		if r.RecordBase().Sequence <= seq {
			if err := c.fold(r); err != nil {
				return nil, fmt.Errorf("policy: read %s: %w", ref, err)
			}
			last = c.last
			// Whether a message calls for a decision is judged on the
			// state without the changes ahead of it: near enough to
			// find the records a stopped subscriber left undecided.
			if _, decide := decider(r); decide != nil && r.RecordBase().Sequence < seq && !once {
				if _, ok := decide(c.state); ok {
					calls = append(calls, r)
				}
			}
			continue
		}
		c.note(r)
		switch r := r.(type) {
		case *eventstore.Decision:
			if once && (r.ObservationID == key || r.MessageID == key) {
				return nil, nil
			}
			last = c.decisionOf(r)
		case *eventstore.StateChanged:
			if last.input != 0 && last.input <= seq && carriesOut(ref.JournalID, last.id, r) {
				c.ahead = append(c.ahead, aheadChange{change: r, input: last.input})
			}
		}
	}
	return calls, nil
}

// carriesOut reports whether r is one of the state changes the decision id
// appended (Decide numbers its records after the decision id).
func carriesOut(journalID, id string, r *eventstore.StateChanged) bool {
	for n := range maxOutcomeRecords {
		if r.RecordID == eventstore.RecordID(journalID, eventstore.KindStateChanged, recordKey(id, n)) {
			return true
		}
	}
	return false
}

// advance brings the cached state up to the delivered record r. The
// consumer delivers the log in order, so r is normally the journal's next
// record and is folded as it is; records missing before it (handled by
// another subscriber while this one stood by) are read from the journal.
//
// It returns the records read that lack the decision they call for.
func (s *Subscriber) advance(ctx context.Context, ref eventstore.Reference, c *cached, r eventstore.Record, key string) ([]eventstore.Record, error) {
	switch seq, last := r.RecordBase().Sequence, c.state.Journal.LastSequence; {
	case seq <= last:
		return nil, nil
	case seq == last+1:
		if err := c.fold(r); err != nil {
			s.forget(ref.JournalID)
			return nil, fmt.Errorf("policy: fold %s: %w", ref, err)
		}
		return nil, nil
	default:
		// Records missing before it (handled by another subscriber
		// while this one stood by) are read from the journal.
		behind, err := s.read(ctx, ref, c, c.state.Journal.LastSequence+1, seq, key)
		if err != nil {
			s.forget(ref.JournalID)
			return nil, err
		}
		return behind, nil
	}
}

// fold applies the journal's next record to the state.
func (c *cached) fold(r eventstore.Record) error {
	if _, err := c.state.Apply(r); err != nil {
		return err
	}
	c.note(r)
	if d, ok := r.(*eventstore.Decision); ok {
		c.last = c.decisionOf(d)
	}
	// A state change ahead is folded in its place now.
	n := 0
	for n < len(c.ahead) && c.ahead[n].change.RecordBase().Sequence <= c.state.Journal.LastSequence {
		n++
	}
	c.ahead = c.ahead[n:]
	return nil
}

// decisionOf is d with the sequence of the record it answers, when that
// record is folded.
func (c *cached) decisionOf(d *eventstore.Decision) lastDecision {
	input, ok := c.state.ProcessedObservations[d.ObservationID]
	if !ok {
		input = c.state.ProcessedMessages[d.MessageID]
	}
	return lastDecision{id: d.DecisionID, input: input}
}

// isDecided reports whether the journal holds a decision on key.
func (c *cached) isDecided(key string) bool {
	_, ok := c.decided[key]
	return ok
}

// note records the ids a decision answers.
func (c *cached) note(r eventstore.Record) {
	d, ok := r.(*eventstore.Decision)
	if !ok {
		return
	}
	if d.ObservationID != "" {
		c.decided[d.ObservationID] = d.Sequence
	}
	if d.MessageID != "" {
		c.decided[d.MessageID] = d.Sequence
	}
}

// prefix is the state the policy decides on the record at sequence seq
// (key), read from the journal: the journal up to it, with the state changes
// ahead of it.
func (s *Subscriber) prefix(ctx context.Context, ref eventstore.Reference, seq uint64, key string) (*execution.State, error) {
	c := newCached()
	if _, err := s.readUntil(ctx, ref, c, 1, seq, key, true); err != nil {
		return nil, err
	}
	return c.decisionState(seq), nil
}

func (s *Subscriber) forget(journalID string) {
	s.mu.Lock()
	delete(s.states, journalID)
	s.mu.Unlock()
}

// evict drops the least recently used journal once the cache is full.
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

// complete re-derives the outcome of a decision already in the journal, at
// sequence at, from the state at the record it answers, and appends any of
// its records that are missing: a subscriber killed between the decision
// and its records leaves them to the next one. A stored decision that is
// not the one this policy makes (another version of it wrote the journal,
// which was then imported, say) is left as it is: its records are that
// policy's, and records of this one added long after would rewrite the
// journal's history.
func (s *Subscriber) complete(ctx context.Context, ref eventstore.Reference, c *cached, input uint64, st *execution.State, at uint64, decide func(*execution.State) (Outcome, bool)) error {
	// The decision itself is in st's view of the journal only if it was
	// appended before the record, which never happens; so Decide sees the
	// record as undecided and rebuilds the same outcome.
	out, ok := decide(st)
	if !ok || out.Duplicate {
		return nil
	}
	ids := make([]string, len(out.Records))
	missing := map[string]bool{}
	for i, r := range out.Records {
		ids[i] = r.RecordBase().RecordID
		if ids[i] == "" {
			ids[i] = eventstore.RecordID(ref.JournalID, r.Kind(), eventstore.NaturalKey(r))
		}
		missing[ids[i]] = true
	}
	// The records follow the decision, usually at once: read from there
	// until all are found, not the whole journal, which made a new
	// consumer going through a long journal quadratic.
	if len(missing) > 0 {
		for e, err := range s.log.ReadJournal(ctx, ref, max(at, st.Journal.LastSequence+1)) {
			if err != nil {
				return fmt.Errorf("policy: reread %s: %w", ref, err)
			}
			if d, ok := e.Record.(*eventstore.Decision); ok && e.Record.RecordBase().Sequence == at &&
				(d.Action != out.Decision.Action || d.Reason != out.Decision.Reason) {
				return nil
			}
			if delete(missing, e.Record.RecordBase().RecordID); len(missing) == 0 {
				break
			}
		}
	}
	for i, r := range out.Records {
		if !missing[ids[i]] {
			continue
		}
		e, err := s.log.Append(ctx, ref, r)
		if err != nil {
			return fmt.Errorf("policy: complete decision in %s: %w", ref, err)
		}
		c.aheadOf(e.Record, input)
	}
	return nil
}
