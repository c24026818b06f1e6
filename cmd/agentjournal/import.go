package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// maxImportLine bounds one line of an imported file: the record size limit
// plus slack for formatting that re-encoding removes. A longer line is
// reported without being read into memory whole.
const maxImportLine = eventstore.DefaultMaxRecordSize + 64<<10

// maxListedProblems bounds the problems an import error lists.
const maxListedProblems = 20

// JournalImportCommand loads a journal from a JSONL file.
type JournalImportCommand struct {
	env *Env
}

var journalImportSpec = cmdSpec{
	Name: "journal import",
	Args: "FILE",
	Summary: `Load one journal from FILE, a JSONL file with one record per line, as
'journal export' writes it. Every line is decoded and checked before anything
is written: the first line is the journal.header, every record belongs to the
same journal, sequences run 1..n without gaps, no record id repeats, every
record id derived from a natural key is this journal's (not one made for
another journal), no record is over the 1 MiB record size limit, and there
are no blank lines. Any
problem fails the import, names the line, and writes nothing.

Records keep their ids, times and sequences, and are written in one atomic
write: a daemon serving the same log (reached with --nats-url) never sees
part of the journal, and a failed import writes nothing. The log takes at
most 100000 records in one write. Importing a journal that is already stored
with the same records succeeds and writes nothing; a stored journal with
other records is refused. A journal that holds the first records of FILE
(an import interrupted before atomic writes) gets the rest.`,
	Example: "agentjournal journal import ./backup/agent-journals/ae-0123456789abcdef01234567.interaction.jsonl",
}

// Run implements Command.
func (c *JournalImportCommand) Run(ctx context.Context, args []string) error {
	fs := journalImportSpec.newFlagSet()
	pos, err := journalImportSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return journalImportSpec.usageErr(fs, "missing FILE (want a JSONL journal file, e.g. one written by 'agentjournal journal export')")
	case len(pos) > 1:
		return journalImportSpec.usageErr(fs, "too many arguments %q (want one FILE)", pos)
	}
	name := pos[0]
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	records, err := readJournalFile(f)
	if err != nil {
		return fmt.Errorf("import %s, nothing was imported: %w", name, err)
	}
	return c.env.withStore(ctx, func(s eventstore.Store) error {
		res, err := importJournal(ctx, s, records)
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		ref, n := res.ref, len(records)
		switch {
		case res.written == 0:
			_, err = fmt.Fprintf(c.env.Stdout, "Journal of agent execution %s (%s/%s) is already imported: %d records, nothing written\n",
				ref.AgentExecutionID, ref.OwnerEntity, ref.OwnerID, n)
		case res.written < n:
			_, err = fmt.Fprintf(c.env.Stdout, "Resumed the import of agent execution %s (%s/%s): wrote the remaining %d of %d records\n",
				ref.AgentExecutionID, ref.OwnerEntity, ref.OwnerID, res.written, n)
		default:
			_, err = fmt.Fprintf(c.env.Stdout, "Imported %d records of agent execution %s (%s/%s)\n",
				n, ref.AgentExecutionID, ref.OwnerEntity, ref.OwnerID)
		}
		return err
	})
}

// lineProblem is one problem with one line of an imported file.
type lineProblem struct {
	line    int
	problem string
}

// journalFileError lists the problems found in an imported file.
type journalFileError struct {
	problems []lineProblem
	// more counts problems found beyond maxListedProblems.
	more int
}

func (e *journalFileError) add(line int, format string, args ...any) {
	if len(e.problems) == maxListedProblems {
		e.more++
		return
	}
	e.problems = append(e.problems, lineProblem{line, fmt.Sprintf(format, args...)})
}

func (e *journalFileError) Error() string {
	if len(e.problems) == 1 {
		return fmt.Sprintf("line %d: %s", e.problems[0].line, e.problems[0].problem)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.problems)+e.more)
	for _, p := range e.problems {
		fmt.Fprintf(&b, "\n  line %d: %s", p.line, p.problem)
	}
	if e.more > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.more)
	}
	return b.String()
}

// readJournalFile decodes and checks a whole journal file: one record per
// line, the header first, one journal, sequences 1..n, unique record ids,
// every record within the size limit. It returns the records, or a
// *journalFileError naming every bad line.
func readJournalFile(r io.Reader) ([]eventstore.Record, error) {
	problems := &journalFileError{}
	var records []eventstore.Record
	var first *eventstore.Base // line 1's record, when it decoded
	seen := map[string]int{}   // record id -> line
	line := 0
	err := readLines(r, maxImportLine, func(data []byte, tooLong bool) {
		line++
		switch {
		case tooLong:
			problems.add(line, "longer than %d bytes (a record is at most %d bytes)", maxImportLine, eventstore.DefaultMaxRecordSize)
			return
		case len(bytes.TrimSpace(data)) == 0:
			problems.add(line, "blank (want one record per line and no blank lines)")
			return
		}
		rec, err := eventstore.Decode(data)
		if err != nil {
			problems.add(line, "%v", err)
			return
		}
		b := rec.RecordBase()
		if line == 1 {
			if rec.Kind() != eventstore.KindHeader {
				problems.add(line, "is a %s record; the first line must be the %s", rec.Kind(), eventstore.KindHeader)
			}
			first = b
		} else if first != nil && !sameJournal(first, b) {
			problems.add(line, "belongs to journal %s (%s/%s/%s), not to %s (%s/%s/%s) of line 1",
				b.JournalID, b.Scope, b.OwnerID, b.AgentExecutionID, first.JournalID, first.Scope, first.OwnerID, first.AgentExecutionID)
		}
		if b.Sequence != uint64(line) {
			problems.add(line, "has sequence %d, want %d (line n holds sequence n, without gaps)", b.Sequence, line)
		}
		if key := eventstore.NaturalKey(rec); key != "" {
			// An id made for another journal would collide with that
			// journal's record in the log's duplicate window.
			if want := eventstore.RecordID(b.JournalID, rec.Kind(), key); b.RecordID != want {
				problems.add(line, "recordId %s is not the id of %s %q in journal %s (want %s): the record was made for another journal", b.RecordID, rec.Kind(), key, b.JournalID, want)
			}
		}
		if prev, ok := seen[b.RecordID]; ok {
			problems.add(line, "repeats recordId %s of line %d", b.RecordID, prev)
		} else {
			seen[b.RecordID] = line
		}
		if enc, err := eventstore.Encode(rec); err != nil {
			problems.add(line, "%v", err)
		} else if len(enc) > eventstore.DefaultMaxRecordSize {
			problems.add(line, "record is %d bytes (a record is at most %d bytes)", len(enc), eventstore.DefaultMaxRecordSize)
		}
		records = append(records, rec)
	})
	if err != nil {
		return nil, fmt.Errorf("read line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("the file is empty (want one record per line, the journal.header first)")
	}
	if len(problems.problems) > 0 {
		return nil, problems
	}
	return records, nil
}

func sameJournal(a, b *eventstore.Base) bool {
	return a.JournalID == b.JournalID && a.AgentExecutionID == b.AgentExecutionID &&
		a.OwnerID == b.OwnerID && a.Scope == b.Scope
}

// readLines calls fn with each line of r, without its line end. A line over
// max bytes is passed as tooLong with no data and is never held in memory
// whole, so reading goes on with the next line. A last line without a
// newline counts.
func readLines(r io.Reader, max int, fn func(line []byte, tooLong bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	size := 0 // bytes of the current line so far, its line end included
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if size <= max+len("\r\n") {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if size > 0 {
			line := bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
			tooLong := size > max+len("\r\n") || len(line) > max
			if tooLong {
				line = nil
			}
			fn(line, tooLong)
		}
		if err != nil {
			return nil // io.EOF
		}
		buf, size = buf[:0], 0
	}
}

// batchAppender is a store that writes many records atomically.
type batchAppender interface {
	AppendBatch(ctx context.Context, ref eventstore.Reference, records []eventstore.Record) error
}

// importResult says where an import went and how many records it wrote.
type importResult struct {
	ref     eventstore.Reference
	written int
}

// importJournal stores checked records (the header first, sequences 1..n)
// as their journal. A journal already stored with the same record ids is
// left alone; one that holds the first records of the file, as an
// interrupted import leaves it, gets the rest; any other is refused before
// anything is written.
func importJournal(ctx context.Context, s eventstore.Store, records []eventstore.Record) (importResult, error) {
	header := records[0].(*eventstore.Header)
	b := header.RecordBase()
	ref, err := eventstore.NewReference(b.Scope, b.OwnerID, b.AgentExecutionID)
	if err != nil {
		return importResult{}, err
	}
	res := importResult{ref: ref}
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
			what := "is longer than the file"
			if i < len(records) {
				what = fmt.Sprintf("differs at sequence %d (stored record %s, the file has %s)", i+1, id, records[i].RecordBase().RecordID)
			}
			return res, fmt.Errorf("agent execution %s already has a journal (%d records) that %s; refusing to import over it, nothing was written",
				ref.AgentExecutionID, len(stored), what)
		}
	}
	rest := records[len(stored):]
	if b, ok := s.(batchAppender); ok && len(rest) > 0 {
		// The log takes the rest in one atomic write: a daemon beside the
		// import (its policy deciding the journal's observations, say)
		// sees all of it or nothing, and a failed import leaves nothing
		// to clean up.
		if err := b.AppendBatch(ctx, ref, rest); err != nil {
			if errors.Is(err, eventstore.ErrConflict) {
				return res, fmt.Errorf("%w: another writer appended to the journal during the import; nothing was written", err)
			}
			return res, fmt.Errorf("%w; nothing was written", err)
		}
		res.written = len(rest)
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
		res.written++
	}
	return res, nil
}
