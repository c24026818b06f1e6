package eventstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/nats-io/nats.go/jetstream"
)

// JournalBound names a journal and how far to read it.
type JournalBound struct {
	Ref Reference
	// To is the last sequence read; 0 reads up to the journal's head at
	// the time of the call. A bound past the head reads to the head.
	To uint64
}

// JournalsReader reads several journals in one read. A fork's lineage is a
// chain of journals each read up to the next one's fork point; read one by
// one, every journal pays for setting up a read of its own (an ordered
// consumer on JetStream), which costs about as much as reading 200 records.
// Both stores implement it.
type JournalsReader interface {
	// ReadJournals yields the records of the bounded journals from their
	// sequence 1, each up to its bound, interleaved in log order. A record
	// that does not decode holds its place and is yielded as an
	// *OffsetError, as ReadJournal does; a journal the store does not hold
	// is ErrJournalNotFound; a hole in a journal's sequence ends the read
	// with a *GapError. The same journal named twice is read once, to the
	// farther bound.
	ReadJournals(ctx context.Context, bounds []JournalBound) iter.Seq2[Entry, error]
	// JournalHeader reads a journal's header alone, with one request: a
	// lineage is resolved header by header before its records are read.
	JournalHeader(ctx context.Context, ref Reference) (*Header, error)
}

var (
	_ JournalsReader = (*JetStreamStore)(nil)
	_ JournalsReader = (*FileStore)(nil)
)

// boundRead is one journal of a ReadJournals.
type boundRead struct {
	ref  Reference
	to   uint64 // last sequence read
	next uint64 // next sequence expected
	// head: to is the journal's head, so a read that ends before it lost
	// records (or, on a replicated stream, reads a replica behind).
	head bool
}

func (b *boundRead) done() bool { return b.next > b.to }

// headerOf checks that a journal's first record is its header.
func headerOf(ref Reference, r Record) (*Header, error) {
	h, ok := r.(*Header)
	if !ok || h.Sequence != 1 {
		return nil, fmt.Errorf("read header of %s: its first record is %s at sequence %d, not a header at 1", ref, r.Kind(), r.RecordBase().Sequence)
	}
	return h, nil
}

// JournalHeader implements JournalsReader with one direct get.
func (s *JetStreamStore) JournalHeader(ctx context.Context, ref Reference) (*Header, error) {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	m, err := s.get(ctx, msgGet{Seq: 1, NextFor: subj})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("read header of %s: %w", ref, ErrJournalNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read header of %s: %w", ref, err)
	}
	e, _, err := decodeEntry(m)
	if err != nil {
		return nil, fmt.Errorf("read header of %s: %w", ref, err)
	}
	return headerOf(ref, e.Record)
}

// ReadJournals implements JournalsReader with one ordered consumer filtered
// to every journal's subject (FilterSubjects), from the start of the log:
// the server finds each subject's messages by its per-subject index. It
// reads until every journal has reached its bound or nothing is pending;
// a journal's records past its bound are delivered all the same (a filter
// cannot end one subject early) and passed over.
func (s *JetStreamStore) ReadJournals(ctx context.Context, bounds []JournalBound) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if s.closed.Load() {
			yield(Entry{}, ErrClosed)
			return
		}
		reads := make([]*boundRead, 0, len(bounds))
		bySubj := make(map[string]*boundRead, len(bounds))
		subjects := make([]string, 0, len(bounds))
		for _, b := range bounds {
			ref, subj, err := s.resolve(b.Ref)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			// Overlapping filters are refused by the server.
			if r, ok := bySubj[subj]; ok {
				if r.to != 0 && (b.To == 0 || b.To > r.to) {
					r.to = b.To
				}
				continue
			}
			r := &boundRead{ref: ref, to: b.To, next: 1}
			bySubj[subj] = r
			reads = append(reads, r)
			subjects = append(subjects, subj)
		}
		// An unbounded journal reads to its head at the time of the call,
		// as ReadJournal does. A bounded one needs no head: its bound ends
		// it, which spares a request per journal.
		for i, r := range reads {
			if r.to != 0 {
				continue
			}
			seq, _, _, err := s.headWaiting(ctx, subjects[i])
			if err != nil {
				yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, err))
				return
			}
			if seq == 0 {
				yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, ErrJournalNotFound))
				return
			}
			r.to, r.head = seq, true
		}
		left := len(reads)
		if left == 0 {
			return
		}
		start := uint64(1)
		var lag outage
		for {
			read, stopped := false, false
			func() {
				cr, err := s.readChunks(ctx, subjects, start, 1000, "read journals", func(_, pending uint64) (bool, bool) {
					return false, pending == 0
				})
				if err != nil {
					stopped = true
					yield(Entry{}, err)
					return
				}
				defer cr.close()
				for {
					b, ok := cr.next()
					if !ok {
						return
					}
					for i, off := range b.offsets {
						start, read = off+1, true
						r := bySubj[b.subjects[i]]
						if r == nil || r.done() {
							continue
						}
						rec, err := b.records[i], b.errs[i]
						if err == nil {
							if seq := rec.RecordBase().Sequence; seq != r.next {
								stopped = true
								yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, &GapError{Journal: r.ref.JournalID, AgentExecutionID: r.ref.AgentExecutionID, From: r.next, To: max(seq, r.next+1) - 1}))
								return
							}
						}
						// An undecodable record still holds its place.
						r.next++
						if !yield(Entry{Offset: off, Record: rec}, err) {
							stopped = true
							return
						}
						if r.done() {
							if left--; left == 0 {
								stopped = true
								return
							}
						}
					}
					if b.err != nil {
						stopped = true
						yield(Entry{}, b.err)
						return
					}
				}
			}()
			if stopped {
				return
			}
			behind := false
			for _, r := range reads {
				behind = behind || (r.head && !r.done())
			}
			// As in ReadJournal: a consumer on a replica that lags the
			// leader's head is waited for, not taken for lost records.
			if !behind || !s.replicated() || ctx.Err() != nil {
				break
			}
			if read {
				lag = outage{}
			}
			if s.waitUnavailable(ctx, &lag, errReplicaBehind) != nil {
				break
			}
		}
		for _, r := range reads {
			switch {
			case r.head && !r.done():
				yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, &GapError{Journal: r.ref.JournalID, AgentExecutionID: r.ref.AgentExecutionID, From: r.next, To: r.to}))
				return
			case r.next == 1:
				// Not one record: the journal does not exist.
				if !yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, ErrJournalNotFound)) {
					return
				}
			}
		}
	}
}

// JournalHeader implements JournalsReader.
func (s *FileStore) JournalHeader(ctx context.Context, ref Reference) (*Header, error) {
	ref, name, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	j, ends, _ := s.recordIndex(ref, name)
	if len(ends) == 0 {
		return nil, fmt.Errorf("read header of %s: %w", ref, ErrJournalNotFound)
	}
	r, err := s.readRecord(j, ends, 1)
	if err != nil {
		return nil, fmt.Errorf("read header of %s: %w", ref, err)
	}
	return headerOf(ref, r)
}

// fileRead is one journal of a FileStore ReadJournals.
type fileRead struct {
	ref     Reference
	lr      *lineReader
	offsets []uint64 // up to the bound
	next    uint64   // next sequence, from 1
}

// ReadJournals implements JournalsReader, merging the journals' records by
// log offset.
func (s *FileStore) ReadJournals(ctx context.Context, bounds []JournalBound) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if s.closed.Load() {
			yield(Entry{}, ErrClosed)
			return
		}
		reads := make([]*fileRead, 0, len(bounds))
		byName := make(map[string]int, len(bounds))
		defer func() {
			for _, r := range reads {
				r.lr.close()
			}
		}()
		for _, b := range bounds {
			ref, name, err := s.resolve(b.Ref)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			j, ends, offsets := s.recordIndex(ref, name)
			if len(ends) == 0 {
				yield(Entry{}, fmt.Errorf("read %s: %w", ref, ErrJournalNotFound))
				return
			}
			if b.To != 0 && b.To < uint64(len(offsets)) {
				offsets = offsets[:b.To]
			}
			if i, ok := byName[name]; ok {
				if len(offsets) > len(reads[i].offsets) {
					reads[i].offsets = offsets
				}
				continue
			}
			byName[name] = len(reads)
			reads = append(reads, &fileRead{ref: ref, lr: s.newLineReader(j, ends), offsets: offsets, next: 1})
		}
		for {
			// The journal whose next record comes first in the log; a
			// lineage is a few dozen journals, so a linear pick is enough.
			var r *fileRead
			for _, c := range reads {
				if c.next <= uint64(len(c.offsets)) && (r == nil || c.offsets[c.next-1] < r.offsets[r.next-1]) {
					r = c
				}
			}
			if r == nil {
				return
			}
			if err := ctx.Err(); err != nil {
				yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, err))
				return
			}
			seq, off := r.next, r.offsets[r.next-1]
			r.next++
			rec, err := r.lr.record(seq)
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					yield(Entry{}, fmt.Errorf("read %s: %w", r.ref, err))
					return
				}
				// Like the JetStream store's, an undecodable record is
				// named by its log offset, and the read goes on.
				err = &OffsetError{Offset: off, Err: fmt.Errorf("read %s: %w", r.ref, err)}
			}
			if !yield(Entry{Offset: off, Record: rec}, err) {
				return
			}
		}
	}
}
