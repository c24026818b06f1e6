package execution

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
)

// MaxForkDepth bounds how many forks deep lineage replay follows links: a
// fork of a fork … of a journal this deep is refused, not folded.
const MaxForkDepth = 64

// ErrLineage reports a fork whose links cannot be followed: a parent that
// is missing or shorter than the link says, a record that is not the one
// the link pins, a cycle, or a chain deeper than MaxForkDepth.
var ErrLineage = errors.New("execution: fork lineage cannot be resolved")

// JournalSource is what lineage replay reads; eventstore's stores implement
// it, so replay does not depend on where the journals live.
type JournalSource interface {
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error)
}

var _ JournalSource = (eventstore.Store)(nil)

// ChainSource is a JournalSource that reads a fork's chain of journals in
// one read. Both stores implement it; replay falls back to a read per
// journal for a source that does not.
type ChainSource interface {
	JournalSource
	eventstore.JournalsReader
}

var _ ChainSource = (*eventstore.JetStreamStore)(nil)

// ReplayLineage folds an execution's state through its fork links: for a
// fork, the parent's records up to the fork's sequence (the parent's own
// prefix resolved the same way, recursively), then the fork's own records.
// The state keeps the fork's identity (id, journal, counters) and inherits
// the prefix's conversation: its timeline items, marked Inherited with the
// execution they come from, and its plan. Usage counts only the fork's own
// records (TreeUsage totals a tree). A journal that is not a fork replays
// exactly as Replay does.
func ReplayLineage(ctx context.Context, src JournalSource, ref eventstore.Reference) (*State, error) {
	s, _, err := replayLineage(ctx, src, ref, math.MaxUint64, nil)
	return s, err
}

// replayLineage folds ref's lineage up to its sequence upTo and returns the
// state and the last record folded.
func replayLineage(ctx context.Context, src JournalSource, ref eventstore.Reference, upTo uint64, chain []string) (*State, eventstore.Record, error) {
	l := &lineageReader{src: src}
	to := upTo
	if to == math.MaxUint64 {
		to = 0
	}
	l.prefetch(ctx, ref, to)
	return l.replayLineage(ctx, ref, upTo, chain)
}

// ReplayPrefix folds the state a fork inherits from its link: the linked
// journal's lineage up to the link's sequence, after checking that the
// record there is the one the link pins by its event id.
func ReplayPrefix(ctx context.Context, src JournalSource, link *eventstore.ForkLink) (*State, error) {
	l := &lineageReader{src: src}
	if ref, err := src.Lookup(ctx, link.AgentExecutionID); err == nil && ref.JournalID == link.JournalID {
		l.refs = map[string]eventstore.Reference{link.AgentExecutionID: ref}
		l.prefetch(ctx, ref, link.Sequence)
	}
	return l.replayPrefix(ctx, link, nil)
}

// lineageReader reads the journals of a lineage: from what prefetch read
// of the whole chain in one read, else journal by journal.
type lineageReader struct {
	src JournalSource
	// refs are the parents already looked up, by execution id.
	refs map[string]eventstore.Reference
	// entries are the chain's records already read, by journal id, each
	// journal up to its bound.
	entries map[string][]eventstore.Entry
}

// prefetch reads the chain of journals from ref up through its fork links,
// when the source has ReadJournals: one bounded read per journal, all at
// once, each started as soon as the chain's resolution (header by header,
// one request each, and a Lookup of a parent whose owner differs) knows
// its bound. It only reads: on anything out of the
// ordinary (a missing or mismatched parent, a cycle, a chain too deep, a
// read error) it keeps nothing, and the fold reads journal by journal,
// which checks every link and says what is wrong as it always has.
func (l *lineageReader) prefetch(ctx context.Context, ref eventstore.Reference, to uint64) {
	cs, ok := l.src.(ChainSource)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	reads := &chainReads{src: cs}
	defer func() {
		cancel()
		reads.wait()
	}()
	ref.JournalID = journalID(ref)
	refs := map[string]eventstore.Reference{}
	for cur, bound := ref, to; ; {
		h, err := cs.JournalHeader(ctx, cur)
		if err != nil {
			return
		}
		link := h.ForkedFrom
		if link == nil {
			if _, ok := cs.(eventstore.RecordsReader); len(reads.bounds) == 0 && !ok {
				// Not a fork: ReadJournal is one read already.
				return
			}
			reads.start(ctx, eventstore.JournalBound{Ref: cur, To: bound})
			break
		}
		if len(reads.bounds) >= MaxForkDepth {
			return
		}
		// The journal's read starts as soon as its bound is known, so the
		// chain's resolution overlaps the reads.
		reads.start(ctx, eventstore.JournalBound{Ref: cur, To: bound})
		parent, ok := l.refs[link.AgentExecutionID]
		if !ok {
			parent, ok = sameOwner(cur, link)
		}
		if !ok {
			if parent, err = cs.Lookup(ctx, link.AgentExecutionID); err != nil {
				return
			}
		}
		if parent.JournalID != link.JournalID ||
			slices.ContainsFunc(reads.bounds, func(b eventstore.JournalBound) bool { return b.Ref.JournalID == link.JournalID }) {
			return
		}
		refs[link.AgentExecutionID] = parent
		cur, bound = parent, link.Sequence
	}
	entries, ok := reads.wait()
	if !ok {
		return
	}
	for id, r := range refs {
		if l.refs == nil {
			l.refs = map[string]eventstore.Reference{}
		}
		l.refs[id] = r
	}
	l.entries = entries
}

// chainReads reads the journals of a chain, each with a bounded read of
// its own, all at once: a read filtered to one subject is served from the
// subject's own index, while one read filtered to every subject of the
// chain has the log match each record against them all, which cost a
// fifth more than reading the copied journal.
type chainReads struct {
	src    ChainSource
	bounds []eventstore.JournalBound
	wg     sync.WaitGroup
	// results are each journal's entries, or nil after a failed read.
	results []*[]eventstore.Entry
}

func (c *chainReads) start(ctx context.Context, b eventstore.JournalBound) {
	c.bounds = append(c.bounds, b)
	res := new([]eventstore.Entry)
	c.results = append(c.results, res)
	c.wg.Go(func() {
		var es []eventstore.Entry
		if rr, ok := c.src.(eventstore.RecordsReader); ok {
			// A replay needs no log offsets, and a read without them sets
			// up no consumer.
			recs, err := rr.ReadRecords(ctx, b)
			if err != nil {
				return
			}
			es = make([]eventstore.Entry, 0, len(recs))
			for _, r := range recs {
				if r.RecordBase().JournalID != b.Ref.JournalID {
					return
				}
				es = append(es, eventstore.Entry{Record: r})
			}
			*res = es
			return
		}
		for e, err := range c.src.ReadJournals(ctx, []eventstore.JournalBound{b}) {
			if err != nil || e.Record.RecordBase().JournalID != b.Ref.JournalID {
				*res = nil
				return
			}
			es = append(es, e)
		}
		if es == nil {
			es = []eventstore.Entry{}
		}
		*res = es
	})
}

// wait waits for the reads and gives the entries by journal id; false when
// any read failed.
func (c *chainReads) wait() (map[string][]eventstore.Entry, bool) {
	c.wg.Wait()
	entries := make(map[string][]eventstore.Entry, len(c.bounds))
	for i, b := range c.bounds {
		if *c.results[i] == nil {
			return nil, false
		}
		entries[b.Ref.JournalID] = *c.results[i]
	}
	return entries, true
}

// sameOwner is the reference of a fork's parent when the parent has the
// fork's owner, as forks and resumes made by the runtime do: a journal id
// is a hash of owner and execution, so a match proves the owner without a
// lookup, which asks the log for every subject of the execution.
func sameOwner(fork eventstore.Reference, link *eventstore.ForkLink) (eventstore.Reference, bool) {
	ref := eventstore.Reference{OwnerEntity: fork.OwnerEntity, OwnerID: fork.OwnerID, AgentExecutionID: link.AgentExecutionID}
	ref.JournalID = eventstore.JournalIDFor(ref.OwnerEntity, ref.OwnerID, ref.AgentExecutionID)
	return ref, ref.JournalID == link.JournalID
}

// journalID is the id of ref's journal, which a caller's reference may
// leave out.
func journalID(ref eventstore.Reference) string {
	if ref.JournalID != "" {
		return ref.JournalID
	}
	return eventstore.JournalIDFor(ref.OwnerEntity, ref.OwnerID, ref.AgentExecutionID)
}

func (l *lineageReader) lookup(ctx context.Context, id string) (eventstore.Reference, error) {
	if ref, ok := l.refs[id]; ok {
		return ref, nil
	}
	return l.src.Lookup(ctx, id)
}

func (l *lineageReader) read(ctx context.Context, ref eventstore.Reference) iter.Seq2[eventstore.Entry, error] {
	es, ok := l.entries[journalID(ref)]
	if !ok {
		return l.src.ReadJournal(ctx, ref, 1)
	}
	return func(yield func(eventstore.Entry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (l *lineageReader) replayPrefix(ctx context.Context, link *eventstore.ForkLink, chain []string) (*State, error) {
	ref, err := l.lookup(ctx, link.AgentExecutionID)
	if err != nil {
		return nil, fmt.Errorf("%w: parent %s: %w", ErrLineage, link.AgentExecutionID, err)
	}
	if ref.JournalID != link.JournalID {
		return nil, fmt.Errorf("%w: parent %s has journal %s, the link names %s", ErrLineage, link.AgentExecutionID, ref.JournalID, link.JournalID)
	}
	parent, last, err := l.replayLineage(ctx, ref, link.Sequence, chain)
	if err != nil {
		return nil, err
	}
	if parent.Journal.LastSequence != link.Sequence || last == nil {
		return nil, fmt.Errorf("%w: parent %s ends at sequence %d, before the fork's %d", ErrLineage, link.AgentExecutionID, parent.Journal.LastSequence, link.Sequence)
	}
	id, err := eventstore.EventID(last)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLineage, err)
	}
	if id != link.EventID {
		return nil, fmt.Errorf("%w: the record at %s sequence %d is %s, the fork pins %s", ErrLineage, link.AgentExecutionID, link.Sequence, id, link.EventID)
	}
	return parent, nil
}

// replayLineage folds ref's lineage up to sequence upTo and returns the
// state and the last record folded.
func (l *lineageReader) replayLineage(ctx context.Context, ref eventstore.Reference, upTo uint64, chain []string) (*State, eventstore.Record, error) {
	if slices.Contains(chain, ref.JournalID) {
		return nil, nil, fmt.Errorf("%w: a fork cycle: %v links back to %s", ErrLineage, append(chain, ref.JournalID), ref.JournalID)
	}
	if len(chain) > MaxForkDepth {
		return nil, nil, fmt.Errorf("%w: more than %d forks deep at %s", ErrLineage, MaxForkDepth, ref.AgentExecutionID)
	}
	chain = append(slices.Clip(chain), ref.JournalID)
	s := &State{}
	var last eventstore.Record
	for e, err := range l.read(ctx, ref) {
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", ref, err)
		}
		r := e.Record
		if r.RecordBase().Sequence > upTo {
			break
		}
		items, err := s.Apply(r)
		if err != nil {
			return nil, nil, fmt.Errorf("replay %s: %w", ref, err)
		}
		s.Timeline = PlaceItems(s.Timeline, items...)
		if h, ok := r.(*eventstore.Header); ok && h.ForkedFrom != nil {
			parent, err := l.replayPrefix(ctx, h.ForkedFrom, chain)
			if err != nil {
				return nil, nil, fmt.Errorf("replay the prefix of fork %s: %w", ref.AgentExecutionID, err)
			}
			if err := s.adopt(parent); err != nil {
				return nil, nil, err
			}
		}
		last = r
	}
	if s.ID == "" {
		return nil, nil, fmt.Errorf("%s: %w", ref, ErrNoHeader)
	}
	return s, last, nil
}

// Inherit lays a fork's prefix under its state; it is called right after the
// fork's header is applied, with the parent's state at the fork's sequence.
// The fork keeps its own identity, counters, lifecycle and usage; it takes
// the parent's timeline (each item marked inherited, naming the execution it
// came from) and plan. ReplayPrefix gives the parent's state, checked
// against the link.
func (s *State) Inherit(parent *State) error {
	if err := s.checkParent(parent); err != nil {
		return err
	}
	inherited := make([]TimelineItem, 0, len(parent.Timeline)+len(s.Timeline))
	for _, it := range parent.Timeline {
		it.Inherited = true
		if it.ExecutionID == "" {
			it.ExecutionID = parent.ID
		}
		inherited = append(inherited, it)
	}
	s.Timeline = append(inherited, s.Timeline...)
	s.Plan = slices.Clone(parent.Plan)
	s.Lineage = append([]string{parent.ID}, parent.Lineage...)
	return nil
}

func (s *State) checkParent(parent *State) error {
	if s.ForkedFrom == nil || parent.ID != s.ForkedFrom.AgentExecutionID {
		return fmt.Errorf("%w: %s is not a fork of %s", ErrLineage, s.ID, parent.ID)
	}
	return nil
}

// adopt is Inherit of a parent state that nothing else holds: the parent's
// timeline becomes the fork's, marked in place. Inherit copies the whole
// prefix, so a chain of forks copied every ancestor's items again at every
// level, quadratic in its depth; adopt marks only the parent's own items
// (the ones it inherited are marked already, and come first) and appends.
func (s *State) adopt(parent *State) error {
	if err := s.checkParent(parent); err != nil {
		return err
	}
	tl := parent.Timeline
	for i := len(tl) - 1; i >= 0 && !tl[i].Inherited; i-- {
		tl[i].Inherited = true
		if tl[i].ExecutionID == "" {
			tl[i].ExecutionID = parent.ID
		}
	}
	s.Timeline = append(tl, s.Timeline...)
	s.Plan = parent.Plan
	s.Lineage = append([]string{parent.ID}, parent.Lineage...)
	return nil
}

// TreeUsage totals the usage of the executions of a fork tree, each
// execution's own usage counted once however often its state is given. A
// state's Usage folds only its own records, so no record is counted twice:
// a fork's inherited prefix is counted with the parent that recorded it.
func TreeUsage(states ...*State) Usage {
	seen := map[string]bool{}
	var total Usage
	add := func(dst **int64, v *int64) {
		if v == nil {
			return
		}
		n := *v
		if *dst != nil {
			n = addSat(**dst, n)
		}
		*dst = &n
	}
	for _, s := range states {
		if s == nil || seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		add(&total.InputTokens, s.Usage.InputTokens)
		add(&total.OutputTokens, s.Usage.OutputTokens)
		add(&total.TotalTokens, s.Usage.TotalTokens)
	}
	return total
}

// ReplayLineageTo is ReplayLineage of an execution's records up to its own
// sequence upTo: a fork's prefix, then its own records to there.
func ReplayLineageTo(ctx context.Context, src JournalSource, ref eventstore.Reference, upTo uint64) (*State, error) {
	s, _, err := replayLineage(ctx, src, ref, upTo, nil)
	return s, err
}
