package journalfile

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/agentjournal/agentjournal/eventstore"
)

// ErrDifferentJournal reports an import refused because the store holds
// the journal with other records than the file. See DifferentJournalError.
var ErrDifferentJournal = errors.New("journalfile: a different journal is stored")

// DifferentJournalError names the journal stored with other records than
// the file, and where they differ. Nothing was written.
type DifferentJournalError struct {
	AgentExecutionID string
	// Stored is how many records the store holds for the journal.
	Stored int
	// Differs says how: longer than the file, or the first sequence whose
	// record id differs.
	Differs string
}

func (e *DifferentJournalError) Error() string {
	return fmt.Sprintf("agent execution %s already has a journal (%d records) that %s; refusing to import over it, nothing was written",
		e.AgentExecutionID, e.Stored, e.Differs)
}

// Is makes a *DifferentJournalError match ErrDifferentJournal.
func (e *DifferentJournalError) Is(target error) bool { return target == ErrDifferentJournal }

// Store is what Import needs of a journal store.
type Store interface {
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	EnsureJournal(ctx context.Context, ref eventstore.Reference, header *eventstore.Header) (eventstore.Reference, error)
	Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
}

// BatchAppender is a store that writes many records, which carry their own
// sequences, in one atomic write (eventstore.JetStreamStore). Import uses
// it when the store has it.
type BatchAppender interface {
	AppendBatch(ctx context.Context, ref eventstore.Reference, records []eventstore.Record) error
}

var (
	_ Store         = (*eventstore.JetStreamStore)(nil)
	_ BatchAppender = (*eventstore.JetStreamStore)(nil)
)

// Result says where an import went and what it wrote.
type Result struct {
	// Reference is the imported journal's.
	Reference eventstore.Reference
	// Records is how many records the file holds.
	Records int
	// Written is how many of them this import wrote: 0 when the journal
	// was already stored, fewer than Records when it held their first ones.
	Written int
}

// MarkImported returns records with a copy of their header marked
// imported (Header.Imported), as Import stores them whatever the file
// says: the command and directory a fork or a resume of the journal would
// run come from the file. records itself is left as it is.
func MarkImported(records []eventstore.Record) []eventstore.Record {
	if len(records) == 0 {
		return records
	}
	h, ok := records[0].(*eventstore.Header)
	if !ok {
		return records
	}
	marked := *h
	marked.Imported = true
	return append([]eventstore.Record{&marked}, records[1:]...)
}

// Import stores records, as Read returns them (the header first, sequences
// 1..n), as their journal. A journal already stored with the same record
// ids is left alone; one that holds the first records of the file, as an
// import interrupted before atomic writes leaves it, gets the rest; any
// other is refused with a *DifferentJournalError before anything is
// written; the header is stored marked imported (MarkImported). With a
// BatchAppender the rest is written in one atomic write:
// a reader of the log, such as a daemon's policy, sees all of it or none,
// and a failed import writes nothing.
func Import(ctx context.Context, s Store, records []eventstore.Record) (Result, error) {
	if len(records) == 0 {
		return Result{}, ErrEmpty
	}
	header, ok := records[0].(*eventstore.Header)
	if !ok {
		return Result{}, fmt.Errorf("the first record is a %s (want the %s)", records[0].Kind(), eventstore.KindHeader)
	}
	records = MarkImported(records)
	b := header.RecordBase()
	ref, err := eventstore.NewReference(b.Scope, b.OwnerID, b.AgentExecutionID)
	if err != nil {
		return Result{}, err
	}
	res := Result{Reference: ref, Records: len(records)}
	res.Reference.RecordCount, res.Reference.LastSequence = uint64(len(records)), uint64(len(records))
	var stored []string
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if errors.Is(err, eventstore.ErrJournalNotFound) {
			break
		}
		if err != nil {
			return res, err
		}
		stored = append(stored, e.Record.RecordBase().RecordID)
	}
	for i, id := range stored {
		if i >= len(records) || records[i].RecordBase().RecordID != id {
			differs := "is longer than the file"
			if i < len(records) {
				differs = fmt.Sprintf("differs at sequence %d (stored record %s, the file has %s)", i+1, id, records[i].RecordBase().RecordID)
			}
			return res, &DifferentJournalError{AgentExecutionID: ref.AgentExecutionID, Stored: len(stored), Differs: differs}
		}
	}
	rest := records[len(stored):]
	if b, ok := s.(BatchAppender); ok && len(rest) > 0 {
		if err := b.AppendBatch(ctx, ref, rest); err != nil {
			if errors.Is(err, eventstore.ErrConflict) {
				return res, fmt.Errorf("%w: another writer appended to the journal during the import; nothing was written", err)
			}
			return res, fmt.Errorf("%w; nothing was written", err)
		}
		res.Written = len(rest)
		return res, nil
	}
	for _, r := range rest {
		want := r.RecordBase().Sequence
		var got uint64
		if h, ok := r.(*eventstore.Header); ok {
			head, err := s.EnsureJournal(ctx, ref, h)
			if err != nil {
				return res, err
			}
			got = head.LastSequence
		} else {
			e, err := s.Append(ctx, ref, r)
			if err != nil {
				return res, err
			}
			got = e.Record.RecordBase().Sequence
		}
		if got != want {
			return res, fmt.Errorf("record %s landed at sequence %d, want %d: another writer appended to the journal during the import", r.RecordBase().RecordID, got, want)
		}
		res.Written++
	}
	return res, nil
}
