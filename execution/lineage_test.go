package execution_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/google/go-cmp/cmp"
)

// replayOwn folds a journal's own records alone.
func replayOwn(t *testing.T, s eventstore.Store, ref eventstore.Reference) *execution.State {
	t.Helper()
	st, err := execution.Replay(fixtures.ReadJournal(t, s, ref))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func msg(id, text string) *eventstore.MessageAccepted {
	return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: []byte(fmt.Sprintf(`{"text":%q}`, text)), MutatesContext: true}
}

func usage(id string, in, out int64) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(&eventstore.UsageSignal{InputTokens: &in, OutputTokens: &out})}
}

func plan(id, text string) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: eventstore.NewSignal(&eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: text, Status: eventstore.PlanItemStatuses[0]}}})}
}

// forkHeader links a new journal to the record at seq of parent.
func forkHeader(t *testing.T, s eventstore.Store, parent eventstore.Reference, seq uint64) *eventstore.Header {
	t.Helper()
	var at eventstore.Record
	for e, err := range s.ReadJournal(context.Background(), parent, seq) {
		if err != nil {
			t.Fatal(err)
		}
		at = e.Record
		break
	}
	id, err := eventstore.EventID(at)
	if err != nil {
		t.Fatal(err)
	}
	return &eventstore.Header{AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless},
		ForkedFrom: &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: seq, EventID: id}}
}

func texts(items []execution.TimelineItem) []string {
	var out []string
	for _, it := range items {
		if it.Kind != execution.ItemMessage {
			continue
		}
		s := it.Text
		if it.Inherited {
			s += " (from " + it.ExecutionID + ")"
		}
		out = append(out, s)
	}
	return out
}

// A fork of a fork folds its ancestors' prefixes through the links: each
// ancestor up to the fork point, then its own records; usage is its own.
func TestReplayLineageForkOfAFork(t *testing.T) {
	ctx := context.Background()
	s := fixtures.OpenStore(t, fixtures.StartNATS(t))
	parent := fixtures.WriteJournal(t, s, "parent", nil, false,
		msg("p1", "one"), usage("pu1", 100, 10), plan("pp", "write the test"), msg("p2", "two"), msg("p3", "parent only"))
	// The fork branches after "two" (sequence 5).
	fork := fixtures.WriteJournal(t, s, "fork", forkHeader(t, s, parent, 5), false,
		msg("f1", "fork one"), usage("fu1", 7, 3), msg("f2", "fork only"))
	// Its fork branches after "fork one" (its sequence 2).
	grand := fixtures.WriteJournal(t, s, "grand", forkHeader(t, s, fork, 2), false, msg("g1", "grand one"), usage("gu1", 1, 1))

	st, err := execution.ReplayLineage(ctx, s, grand)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"one (from parent)", "two (from parent)", "fork one (from fork)", "grand one"}
	if got := texts(st.Timeline); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("timeline %q, want %q", got, want)
	}
	if st.ID != "grand" || st.Journal.JournalID != grand.JournalID || st.Journal.LastSequence != 3 || st.Journal.RecordCount != 3 {
		t.Fatalf("identity %s %s seq %d count %d, want grand's own", st.ID, st.Journal.JournalID, st.Journal.LastSequence, st.Journal.RecordCount)
	}
	if fmt.Sprint(st.Lineage) != "[fork parent]" {
		t.Fatalf("lineage %v, want [fork parent]", st.Lineage)
	}
	if len(st.Plan) != 1 || st.Plan[0].Text != "write the test" {
		t.Fatalf("plan %+v, want the parent's", st.Plan)
	}
	if *st.Usage.InputTokens != 1 || *st.Usage.OutputTokens != 1 {
		t.Fatalf("usage %d/%d, want only its own 1/1", *st.Usage.InputTokens, *st.Usage.OutputTokens)
	}
	// Folding the chain in place gives what the public Inherit gives: the
	// grandchild's own records on the prefix ReplayPrefix folds.
	prefix, err := execution.ReplayPrefix(ctx, s, st.ForkedFrom)
	if err != nil {
		t.Fatal(err)
	}
	byInherit := replayOwn(t, s, grand)
	if err := byInherit.Inherit(prefix); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(byInherit.Timeline, st.Timeline); diff != "" {
		t.Fatalf("timeline differs from Inherit's (-Inherit +ReplayLineage):\n%s", diff)
	}
	if fmt.Sprint(byInherit.Lineage) != fmt.Sprint(st.Lineage) || !cmp.Equal(byInherit.Plan, st.Plan) {
		t.Fatalf("lineage %v plan %+v, want Inherit's %v %+v", st.Lineage, st.Plan, byInherit.Lineage, byInherit.Plan)
	}

	// Replayed alone, the fork has only its own records.
	alone := replayOwn(t, s, grand)
	if got := texts(alone.Timeline); fmt.Sprint(got) != "[grand one]" || alone.ForkedFrom == nil {
		t.Fatalf("replayed alone: %q, forkedFrom %v; want only its own message and the link", got, alone.ForkedFrom)
	}

	// The tree's usage counts every record once, however the states are given.
	var states []*execution.State
	for _, ref := range []eventstore.Reference{parent, fork, grand, fork} {
		st, err := execution.ReplayLineage(ctx, s, ref)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	total := execution.TreeUsage(states...)
	if *total.InputTokens != 108 || *total.OutputTokens != 14 || *total.TotalTokens != 122 {
		t.Fatalf("tree usage %d/%d/%d, want 108/14/122", *total.InputTokens, *total.OutputTokens, *total.TotalTokens)
	}
}

// memJournals is an in-memory JournalSource that holds whatever journals it
// is given, links unchecked: the store refuses broken links, but journals
// can come from elsewhere (an import), and replay must not trust them.
type memJournals map[string][]eventstore.Record

func (m memJournals) ReadJournal(_ context.Context, ref eventstore.Reference, from uint64) iter.Seq2[eventstore.Entry, error] {
	return func(yield func(eventstore.Entry, error) bool) {
		for _, r := range m[ref.AgentExecutionID] {
			if r.RecordBase().Sequence >= from && !yield(eventstore.Entry{Record: r}, nil) {
				return
			}
		}
	}
}

func (m memJournals) Lookup(_ context.Context, id string) (eventstore.Reference, error) {
	if _, ok := m[id]; !ok {
		return eventstore.Reference{}, fmt.Errorf("%w: %s", eventstore.ErrJournalNotFound, id)
	}
	return eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
}

// add stores a journal of a header linked to link (nil: none) and n messages.
func (m memJournals) add(t *testing.T, id string, link *eventstore.ForkLink, n int) eventstore.Reference {
	t.Helper()
	ref, _ := eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
	base := func(k eventstore.Kind, seq uint64) eventstore.Base {
		return eventstore.Base{RecordID: eventstore.RecordID(ref.JournalID, k, fmt.Sprint(seq)), Sequence: seq, Type: k, SchemaVersion: 1,
			JournalID: ref.JournalID, AgentExecutionID: id, OwnerID: "t-1", Scope: eventstore.OwnerTask, OccurredAt: time.Unix(1e9, 0).UTC()}
	}
	recs := []eventstore.Record{&eventstore.Header{Base: base(eventstore.KindHeader, 1), JournalKind: "agent-execution-interaction-journal",
		AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}, ForkedFrom: link}}
	for i := range n {
		r := msg(fmt.Sprintf("%s-%d", id, i), "text")
		r.Base = base(eventstore.KindMessage, uint64(i+2))
		recs = append(recs, r)
	}
	for _, r := range recs {
		if err := eventstore.Validate(r); err != nil {
			t.Fatal(err)
		}
	}
	m[id] = recs
	return ref
}

func (m memJournals) link(t *testing.T, id string, seq uint64) *eventstore.ForkLink {
	t.Helper()
	r := m[id][seq-1]
	eid, err := eventstore.EventID(r)
	if err != nil {
		t.Fatal(err)
	}
	return &eventstore.ForkLink{JournalID: r.RecordBase().JournalID, AgentExecutionID: id, Sequence: seq, EventID: eid}
}

func TestReplayLineageRefusesBrokenLinks(t *testing.T) {
	// Through a source that reads journal by journal, and through one that
	// reads the chain at once: the same checks, the same errors.
	for _, name := range []string{"per journal", "chain"} {
		t.Run(name, func(t *testing.T) { testBrokenLinks(t, name == "chain") })
	}
}

func testBrokenLinks(t *testing.T, chain bool) {
	ctx := context.Background()
	src := func(m memJournals) execution.JournalSource {
		if chain {
			return memChain{m}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		// journals writes the broken lineage and returns the journal to
		// replay.
		journals func(t *testing.T, m memJournals) eventstore.Reference
		says     string // what the error says, when it says something
		wraps    error  // the error it wraps beside ErrLineage, if any
		want     string // the refusal wanted, in words
	}{
		{name: "cycle", journals: func(t *testing.T, m memJournals) eventstore.Reference {
			m.add(t, "a", nil, 2)
			m.add(t, "b", m.link(t, "a", 2), 2)
			// a is rewritten to fork from b: a cycle no store would accept.
			m.add(t, "a", m.link(t, "b", 2), 2)
			ref, _ := m.Lookup(ctx, "b")
			return ref
		}, says: "cycle", want: "naming a cycle"},
		{name: "too deep", journals: func(t *testing.T, m memJournals) eventstore.Reference {
			m.add(t, "j0", nil, 1)
			var ref eventstore.Reference
			for i := 1; i <= execution.MaxForkDepth+2; i++ {
				ref = m.add(t, fmt.Sprintf("j%d", i), m.link(t, fmt.Sprintf("j%d", i-1), 2), 1)
			}
			return ref
		}, says: "forks deep", want: "saying how deep"},
		{name: "another record", journals: func(t *testing.T, m memJournals) eventstore.Reference {
			m.add(t, "a", nil, 3)
			link := m.link(t, "a", 3)
			link.Sequence = 2
			return m.add(t, "b", link, 1)
		}, says: "pins", want: "saying the record is not the pinned one"},
		{name: "parent too short", journals: func(t *testing.T, m memJournals) eventstore.Reference {
			m.add(t, "a", nil, 3)
			link := m.link(t, "a", 3)
			m.add(t, "a", nil, 1)
			return m.add(t, "b", link, 1)
		}, says: "before the fork's 3", want: "saying the parent is too short"},
		{name: "missing parent", journals: func(t *testing.T, m memJournals) eventstore.Reference {
			m.add(t, "a", nil, 1)
			link := m.link(t, "a", 2)
			delete(m, "a")
			return m.add(t, "b", link, 1)
		}, wraps: eventstore.ErrJournalNotFound, want: "wrapping ErrJournalNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := memJournals{}
			ref := tc.journals(t, m)
			_, err := execution.ReplayLineage(ctx, src(m), ref)
			if !errors.Is(err, execution.ErrLineage) ||
				tc.says != "" && !strings.Contains(err.Error(), tc.says) ||
				tc.wraps != nil && !errors.Is(err, tc.wraps) {
				t.Fatalf("got %v, want ErrLineage %s", err, tc.want)
			}
		})
	}
}

// memChain is memJournals read the way a ChainSource is: headers alone,
// then every journal of the chain at once.
type memChain struct{ memJournals }

func (m memChain) JournalHeader(_ context.Context, ref eventstore.Reference) (*eventstore.Header, error) {
	rs := m.memJournals[ref.AgentExecutionID]
	if len(rs) == 0 {
		return nil, eventstore.ErrJournalNotFound
	}
	h, ok := rs[0].(*eventstore.Header)
	if !ok {
		return nil, fmt.Errorf("%s: no header", ref)
	}
	return h, nil
}

func (m memChain) ReadJournals(_ context.Context, bounds []eventstore.JournalBound) iter.Seq2[eventstore.Entry, error] {
	return func(yield func(eventstore.Entry, error) bool) {
		for _, b := range bounds {
			for _, r := range m.memJournals[b.Ref.AgentExecutionID] {
				if (b.To == 0 || r.RecordBase().Sequence <= b.To) && !yield(eventstore.Entry{Record: r}, nil) {
					return
				}
			}
		}
	}
}

// countingSource counts the reads a replay makes of a real store.
type countingSource struct {
	execution.ChainSource
	// Counted atomically: the chain's journals are read concurrently.
	journals, chains atomic.Int64
}

func (c *countingSource) ReadJournal(ctx context.Context, ref eventstore.Reference, from uint64) iter.Seq2[eventstore.Entry, error] {
	c.journals.Add(1)
	return c.ChainSource.ReadJournal(ctx, ref, from)
}

func (c *countingSource) ReadJournals(ctx context.Context, bounds []eventstore.JournalBound) iter.Seq2[eventstore.Entry, error] {
	if len(bounds) == 1 {
		c.chains.Add(1)
	}
	return c.ChainSource.ReadJournals(ctx, bounds)
}

// perJournal hides a store's ReadJournals: replay reads journal by journal.
type perJournal struct{ execution.JournalSource }

// A chain of forks is read with one bounded read per journal, none read
// again by the fold, from either store, and
// folds to the state that reading journal by journal gives, records of
// the parents past each fork point (written after the fork) left out.
func TestReplayLineageReadsTheChainAtOnce(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) interface {
		eventstore.Store
		execution.ChainSource
	}{
		"jetstream": func(t *testing.T) interface {
			eventstore.Store
			execution.ChainSource
		} {
			s := fixtures.OpenStore(t, fixtures.StartNATS(t))
			t.Cleanup(func() { s.Close() })
			return s
		},
		"file": func(t *testing.T) interface {
			eventstore.Store
			execution.ChainSource
		} {
			s, err := eventstore.OpenFile(eventstore.DefaultFileConfig(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			add := func(ref eventstore.Reference, rs ...eventstore.Record) {
				for _, r := range rs {
					if _, err := s.Append(ctx, ref, r); err != nil {
						t.Fatal(err)
					}
				}
			}
			newJournal := func(id string, h *eventstore.Header) eventstore.Reference {
				ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id)
				if err != nil {
					t.Fatal(err)
				}
				if h == nil {
					h = &eventstore.Header{AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
				}
				if ref, err = s.EnsureJournal(ctx, ref, h); err != nil {
					t.Fatal(err)
				}
				return ref
			}
			parent := newJournal("parent", nil)
			add(parent, msg("p1", "one"), plan("pp", "plan"), msg("p2", "two"))
			fork := newJournal("fork", forkHeader(t, s, parent, 4))
			add(fork, msg("f1", "fork one"))
			add(parent, msg("p3", "parent after the fork"))
			grand := newJournal("grand", forkHeader(t, s, fork, 2))
			add(fork, msg("f2", "fork after its fork"))
			add(grand, msg("g1", "grand one"), usage("gu", 1, 1))
			add(parent, msg("p4", "parent later still"))

			c := &countingSource{ChainSource: s}
			st, err := execution.ReplayLineage(ctx, c, grand)
			if err != nil {
				t.Fatal(err)
			}
			if j, b := c.journals.Load(), c.chains.Load(); j != 0 || b != 3 {
				t.Fatalf("%d ReadJournal and %d bounded reads of one journal, want the 3 journals of the chain each read once", j, b)
			}
			want := []string{"one (from parent)", "two (from parent)", "fork one (from fork)", "grand one"}
			if got := texts(st.Timeline); !cmp.Equal(got, want) {
				t.Fatalf("timeline %q, want %q", got, want)
			}
			byJournal, err := execution.ReplayLineage(ctx, perJournal{s}, grand)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(byJournal, st); diff != "" {
				t.Fatalf("state differs from the one read journal by journal (-per journal +chain):\n%s", diff)
			}
			// The prefix alone, and a journal that is no fork, read the same.
			for _, f := range []func(execution.JournalSource) (*execution.State, error){
				func(src execution.JournalSource) (*execution.State, error) {
					return execution.ReplayPrefix(ctx, src, st.ForkedFrom)
				},
				func(src execution.JournalSource) (*execution.State, error) {
					return execution.ReplayLineage(ctx, src, parent)
				},
			} {
				a, err := f(s)
				if err != nil {
					t.Fatal(err)
				}
				b, err := f(perJournal{s})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(b, a); diff != "" {
					t.Fatalf("state differs (-per journal +chain):\n%s", diff)
				}
			}
		})
	}
}
