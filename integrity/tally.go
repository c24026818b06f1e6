package integrity

import (
	"errors"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Tally follows records read in log order (ReadLog) and tells what is
// missing between them: offsets the log skips and sequences a journal
// skips. 'agentjournal log' keeps one while it prints.
type Tally struct {
	prev     uint64 // the last offset read
	from     uint64
	journals map[string]*seen // by journal id
	found    findings
}

// seen is where a journal's sequence stands in a read.
type seen struct{ next uint64 }

// NewTally returns a tally of a read of the log from fromOffset: a journal
// first met past its first sequence lost the ones before only when the
// read starts at the log's start.
func NewTally(fromOffset uint64) *Tally {
	fromOffset = max(fromOffset, 1)
	return &Tally{prev: fromOffset - 1, from: fromOffset, journals: map[string]*seen{}, found: findings{}}
}

// Add takes the next entry of the read, with its error. A record that
// does not decode (an *eventstore.OffsetError) is told and holds its
// place; any other error is returned, and ends the read.
func (t *Tally) Add(e eventstore.Entry, err error) error {
	var undecodable *eventstore.OffsetError
	switch {
	case errors.As(err, &undecodable):
		// Its reader says so; here it holds its offset. Which journal it
		// belongs to is not known: that journal's next record is found
		// one sequence on, and named missing there.
		t.prev = max(t.prev, undecodable.Offset)
		return nil
	case err != nil:
		return err
	case e.Record == nil:
		return nil
	}
	if e.Offset > t.prev+1 {
		// The log refuses deletes: an offset skipped was lost.
		t.found.add(Finding{Missing: []Span{{t.prev + 1, e.Offset - 1}}, Why: []string{"a read of the log skips offsets"}})
	}
	t.prev = max(t.prev, e.Offset)
	b := e.Record.RecordBase()
	s, ok := t.journals[b.JournalID]
	if !ok {
		s = &seen{next: 1}
		if t.from > 1 {
			s.next = b.Sequence
		}
		t.journals[b.JournalID] = s
	}
	if b.Sequence > s.next {
		t.found.add(Finding{AgentExecutionID: b.AgentExecutionID, JournalID: b.JournalID,
			Missing: []Span{{s.next, b.Sequence - 1}}, Why: []string{"a read of the log skips them"}})
	}
	s.next = max(s.next, b.Sequence+1)
	return nil
}

// Findings returns what the tally found missing so far.
func (t *Tally) Findings() []Finding { return t.found.list() }
