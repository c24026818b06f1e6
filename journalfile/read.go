package journalfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// MaxLine bounds one line of a journal file: the record size limit plus
// slack for formatting that re-encoding removes. A longer line is reported
// without being read into memory whole.
const MaxLine = eventstore.DefaultMaxRecordSize + 64<<10

// maxListedProblems bounds the problems an *Error lists.
const maxListedProblems = 20

// ErrEmpty reports a journal file without a line.
var ErrEmpty = errors.New("the file is empty (want one record per line, the journal.header first)")

// LineProblem is one problem with one line of a journal file.
type LineProblem struct {
	// Line numbers the lines from 1.
	Line    int
	Problem string
}

// Error lists the problems Read found in a journal file, line by line.
type Error struct {
	// Problems are the first problems found, in line order.
	Problems []LineProblem
	// More counts the problems found beyond those listed.
	More int
}

func (e *Error) add(line int, format string, args ...any) {
	if len(e.Problems) == maxListedProblems {
		e.More++
		return
	}
	e.Problems = append(e.Problems, LineProblem{line, fmt.Sprintf(format, args...)})
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 && e.More == 0 {
		return fmt.Sprintf("line %d: %s", e.Problems[0].Line, e.Problems[0].Problem)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems)+e.More)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  line %d: %s", p.Line, p.Problem)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}

// Read decodes and checks a whole journal file: one record per line, the
// header first, one journal, sequences 1..n, unique record ids, every
// record within the size limit. It returns the records; an *Error naming
// every bad line; ErrEmpty; or the error reading r, naming the line.
func Read(r io.Reader) ([]eventstore.Record, error) {
	problems := &Error{}
	var records []eventstore.Record
	var first *eventstore.Base // line 1's record, when it decoded
	seen := map[string]int{}   // record id -> line
	line := 0
	err := readLines(r, MaxLine, func(data []byte, tooLong bool) {
		line++
		switch {
		case tooLong:
			problems.add(line, "longer than %d bytes (a record is at most %d bytes)", MaxLine, eventstore.DefaultMaxRecordSize)
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
		return nil, ErrEmpty
	}
	if len(problems.Problems) > 0 {
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

// Write writes records as a journal file: each record encoded as the store
// encodes it, one per line.
func Write(w io.Writer, records []eventstore.Record) error {
	bw := bufio.NewWriter(w)
	for _, r := range records {
		data, err := eventstore.Encode(r)
		if err != nil {
			return fmt.Errorf("encode %s record %d: %w", r.Kind(), r.RecordBase().Sequence, err)
		}
		bw.Write(data)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}
