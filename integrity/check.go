package integrity

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
)

// Log is what the checks read of the journal store.
type Log interface {
	Journals(ctx context.Context) ([]eventstore.Reference, error)
	Head(ctx context.Context, ref eventstore.Reference) (eventstore.Reference, error)
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
}

// StateReader is a Log that can say what it knows it lost
// (eventstore.JetStreamStore); the checks use it when the Log is one.
type StateReader interface {
	LogState(ctx context.Context) (eventstore.LogState, error)
}

// Applied is the read model: what it applied of each execution's journal.
// A nil Applied leaves out the one witness of a lost tail.
type Applied interface {
	List(f projections.Filter) ([]projections.Summary, error)
}

// headWorkers bounds the heads read at once: each is one direct get, and
// a start reads one per journal.
const headWorkers = 8

// Report is what a check found.
type Report struct {
	// Journals is the count of journals checked; Records the count of
	// records read, by Deep only.
	Journals int
	Records  uint64
	// Findings are the damaged journals, and the log's own finding (an
	// empty AgentExecutionID) when it knows it lost records.
	Findings []Finding
}

// Quick checks the log's state, each journal's head against its count and
// the read model's applied sequences against both: cheap enough for every
// start (one direct get per journal). It misses a hole that changes none
// of these (Deep finds it).
func Quick(ctx context.Context, log Log, applied Applied) (Report, error) {
	fs, js, err := quick(ctx, log, applied)
	if err != nil {
		return Report{}, err
	}
	return Report{Journals: len(js), Findings: fs.list()}, nil
}

// Deep is Quick and a read of every journal whole (of the executions
// named, when ids are given): every sequence accounted for, and every
// record decoded.
func Deep(ctx context.Context, log Log, applied Applied, ids ...string) (Report, error) {
	fs, js, err := quick(ctx, log, applied)
	if err != nil {
		return Report{}, err
	}
	var n uint64
	read := 0
	for _, j := range js {
		if len(ids) > 0 && !slices.Contains(ids, j.ref.AgentExecutionID) {
			continue
		}
		read++
		got, err := readJournal(ctx, log, j, fs)
		if err != nil {
			return Report{}, err
		}
		n += got
	}
	return Report{Journals: read, Records: n, Findings: fs.list()}, nil
}

// journal is what quick learnt of one journal.
type journal struct {
	ref  eventstore.Reference
	head uint64 // the sequence of its last record held
}

func quick(ctx context.Context, log Log, applied Applied) (findings, []journal, error) {
	fs := findings{}
	// The read model first, then the counts, then the log's state: the
	// log only grows and the read model follows it, so read in this order
	// each holds at least what the one before it saw unless records were
	// lost, even while others append.
	var sums []projections.Summary
	if applied != nil {
		var err error
		if sums, err = applied.List(projections.Filter{}); err != nil {
			return nil, nil, fmt.Errorf("check for damage: read the read model: %w", err)
		}
	}
	refs, err := log.Journals(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("check for damage: %w", err)
	}
	if err := addState(ctx, log, refs, fs); err != nil {
		return nil, nil, err
	}
	js, err := heads(ctx, log, refs)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]journal, len(js))
	for _, j := range js {
		byID[j.ref.AgentExecutionID] = j
		if j.head < j.ref.RecordCount {
			// The count is kept beside the records and outlives a block
			// cut short; the head is the last record the log still holds.
			fs.add(Finding{AgentExecutionID: j.ref.AgentExecutionID, JournalID: j.ref.JournalID,
				Missing: []Span{{j.head + 1, j.ref.RecordCount}},
				Why:     []string{fmt.Sprintf("the log counts %d of its records but holds them only up to sequence %d", j.ref.RecordCount, j.head)}})
		}
	}
	for _, s := range sums {
		j, ok := byID[s.ID]
		held := max(j.head, j.ref.RecordCount)
		if s.LastSequence <= held {
			continue
		}
		why := fmt.Sprintf("the read model applied it up to sequence %d, the log holds it up to %d", s.LastSequence, held)
		if !ok {
			why = fmt.Sprintf("the read model applied it up to sequence %d, the log holds none of it", s.LastSequence)
		}
		fs.add(Finding{AgentExecutionID: s.ID, JournalID: j.ref.JournalID, Missing: []Span{{held + 1, s.LastSequence}}, Why: []string{why}})
	}
	return fs, js, nil
}

// Lost returns what the log's state says it lost (StateReader), nothing
// for a Log that cannot say: the part of Quick that reads no journal.
func Lost(ctx context.Context, log Log) ([]Finding, error) {
	refs, err := log.Journals(ctx)
	if err != nil {
		return nil, fmt.Errorf("check for damage: %w", err)
	}
	fs := findings{}
	if err := addState(ctx, log, refs, fs); err != nil {
		return nil, err
	}
	return fs.list(), nil
}

// addState adds what the log's state says it lost, its journals' counts
// refs read before it.
func addState(ctx context.Context, log Log, refs []eventstore.Reference, fs findings) error {
	sr, ok := log.(StateReader)
	if !ok {
		return nil
	}
	st, err := sr.LogState(ctx)
	if err != nil {
		return fmt.Errorf("check for damage: %w", err)
	}
	checkState(st, refs, fs)
	return nil
}

// checkState adds what the log's state says it lost.
func checkState(st eventstore.LogState, refs []eventstore.Reference, fs findings) {
	if st.Deleted > 0 && st.Records > 0 {
		// The log refuses deletes: every deleted offset was lost.
		fs.add(Finding{Missing: offsetSpans(st.DeletedOffsets),
			Why: []string{fmt.Sprintf("the log lost %d records between offsets %d and %d", st.Deleted, st.FirstOffset, st.LastOffset)}})
	}
	if len(st.LostOffsets) > 0 {
		fs.add(Finding{Missing: offsetSpans(st.LostOffsets),
			Why: []string{fmt.Sprintf("the log found %d records (%d bytes) unreadable when it loaded its files", len(st.LostOffsets), st.LostBytes)}})
	}
	var counted uint64
	for _, r := range refs {
		counted += r.RecordCount
	}
	if counted > st.Records {
		// Counted before the state was read, the journals' counts can only
		// be lower than the records held, unless records were lost.
		fs.add(Finding{Why: []string{fmt.Sprintf("its journals count %d records but it holds %d", counted, st.Records)}})
	}
}

// offsetSpans turns a list of offsets into spans.
func offsetSpans(offsets []uint64) []Span {
	s := make([]Span, len(offsets))
	for i, o := range offsets {
		s[i] = Span{o, o}
	}
	return union(s)
}

// heads reads the head of every journal, headWorkers at a time.
func heads(ctx context.Context, log Log, refs []eventstore.Reference) ([]journal, error) {
	js := make([]journal, len(refs))
	errs := make([]error, len(refs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(headWorkers, len(refs)) {
		wg.Go(func() {
			for i := range next {
				h, err := log.Head(ctx, refs[i])
				switch {
				case errors.Is(err, eventstore.ErrJournalNotFound):
					// Counted, and not one of its records held.
				case err != nil:
					errs[i] = fmt.Errorf("check for damage: %w", err)
				default:
					js[i].head = h.LastSequence
				}
				js[i].ref = refs[i]
			}
		})
	}
	for i := range refs {
		next <- i
	}
	close(next)
	wg.Wait()
	return js, errors.Join(errs...)
}

// readJournal reads one journal whole and adds what it lacks or cannot
// decode; it returns the count of records read.
func readJournal(ctx context.Context, log Log, j journal, fs findings) (uint64, error) {
	var n uint64
	for e, err := range log.ReadJournal(ctx, j.ref, 1) {
		switch {
		case errors.Is(err, eventstore.ErrGap):
			// Said in the reader's words, which a daemon passes on as
			// they are (the sequences missing), so that a check through
			// a daemon says what one on the log itself says.
			why, _, _ := strings.Cut(err.Error(), "; restore")
			fs.add(Finding{AgentExecutionID: j.ref.AgentExecutionID, JournalID: j.ref.JournalID, Why: []string{why}})
			return n, nil
		case errors.Is(err, eventstore.ErrJournalNotFound):
			// Counted, and none of its records held: quick said so.
			return n, nil
		case err != nil && e.Record == nil && e.Offset == 0:
			return n, fmt.Errorf("check for damage: %w", err)
		case err != nil:
			// A record that does not decode damages the journal; the
			// read ends there, since a reader that meets it again and
			// again would add the same finding without end.
			fs.add(Finding{AgentExecutionID: j.ref.AgentExecutionID, JournalID: j.ref.JournalID,
				Why: []string{fmt.Sprintf("the record at offset %d does not decode: %v", e.Offset, err)}})
			return n, nil
		default:
			n++
		}
	}
	return n, nil
}
