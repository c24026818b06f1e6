//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
)

// Head implements Store.
func (s *FileStore) Head(ctx context.Context, ref Reference) (Reference, error) {
	ref, name, err := s.resolve(ref)
	if err != nil {
		return ref, err
	}
	_, ends, _ := s.recordIndex(ref, name)
	n := uint64(len(ends))
	if n == 0 {
		return ref, fmt.Errorf("head of %s: %w", ref, ErrJournalNotFound)
	}
	ref.RecordCount, ref.LastSequence = n, n
	return ref, nil
}

// recordIndex returns the journal ref names, and its record ends and log
// offsets as they are now; all are nil for a journal the store does not
// hold. The slices are capped at their length, and an append only adds
// past it, so they stay valid once the lock is let go.
func (s *FileStore) recordIndex(ref Reference, name string) (j *fileJournal, ends []int64, offsets []uint64) {
	s.state.RLock()
	defer s.state.RUnlock()
	if j = s.journal(ref, name); j == nil {
		return nil, nil, nil
	}
	n := len(j.ends)
	return j, j.ends[:n:n], j.offsets[:n:n]
}

// ReadJournal implements Store. It seeks straight to fromSeq.
func (s *FileStore) ReadJournal(ctx context.Context, ref Reference, fromSeq uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		ref, name, err := s.resolve(ref)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		j, ends, offsets := s.recordIndex(ref, name)
		switch {
		case len(ends) == 0:
			yield(Entry{}, fmt.Errorf("read %s: %w", ref, ErrJournalNotFound))
			return
		case fromSeq > uint64(len(ends)):
			return
		}
		lr := s.newLineReader(j, ends)
		defer lr.close()
		for seq := max(fromSeq, 1); seq <= uint64(len(ends)); seq++ {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, fmt.Errorf("read %s: %w", ref, err))
				return
			}
			r, err := lr.record(seq)
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					yield(Entry{}, fmt.Errorf("read %s: %w", ref, err))
					return
				}
				err = fmt.Errorf("read %s: %w", ref, err)
			}
			if !yield(Entry{Offset: offsets[seq-1], Record: r}, err) {
				return
			}
		}
	}
}

// ReadLog implements Store.
func (s *FileStore) ReadLog(ctx context.Context, fromOffset uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if s.closed.Load() {
			yield(Entry{}, ErrClosed)
			return
		}
		s.state.RLock()
		log := s.log[:len(s.log):len(s.log)]
		s.state.RUnlock()
		fromOffset = max(fromOffset, 1)
		if fromOffset > uint64(len(log)) {
			return
		}
		readers := map[*fileJournal]*lineReader{}
		defer func() {
			for _, lr := range readers {
				lr.close()
			}
		}()
		var tick uint64
		for off := fromOffset; off <= uint64(len(log)); off++ {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, fmt.Errorf("read log: %w", err))
				return
			}
			pos := log[off-1]
			lr, ok := readers[pos.j]
			if !ok {
				if len(readers) >= maxOpenReaders {
					evictReader(readers)
				}
				s.state.RLock()
				ends := pos.j.ends[:len(pos.j.ends):len(pos.j.ends)]
				s.state.RUnlock()
				lr = s.newLineReader(pos.j, ends)
				readers[pos.j] = lr
			}
			tick++
			lr.used = tick
			r, err := lr.record(pos.seq)
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					yield(Entry{}, fmt.Errorf("read log: %w", err))
					return
				}
				err = fmt.Errorf("read log: offset %d: %w", off, err)
			}
			if !yield(Entry{Offset: off, Record: r}, err) {
				return
			}
		}
	}
}

// evictReader closes the least recently used reader.
func evictReader(readers map[*fileJournal]*lineReader) {
	var oldest *fileJournal
	for j, lr := range readers {
		if oldest == nil || lr.used < readers[oldest].used {
			oldest = j
		}
	}
	readers[oldest].close()
	delete(readers, oldest)
}

// LastOffset returns the offset of the newest record in the log, 0 if empty.
func (s *FileStore) LastOffset(ctx context.Context) (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.state.RLock()
	defer s.state.RUnlock()
	return uint64(len(s.log)), nil
}

// Journals implements Store.
func (s *FileStore) Journals(ctx context.Context) ([]Reference, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.state.RLock()
	refs := make([]Reference, 0, len(s.journals))
	for _, j := range s.journals {
		ref := j.ref
		ref.RecordCount, ref.LastSequence = uint64(len(j.ends)), uint64(len(j.ends))
		refs = append(refs, ref)
	}
	s.state.RUnlock()
	slices.SortFunc(refs, compareRefs)
	return refs, nil
}

// Lookup implements Store.
func (s *FileStore) Lookup(ctx context.Context, agentExecutionID string) (Reference, error) {
	name, err := journalFileName(agentExecutionID)
	if err != nil {
		return Reference{}, fmt.Errorf("look up %q: %w", agentExecutionID, err)
	}
	if s.closed.Load() {
		return Reference{}, ErrClosed
	}
	var refs []Reference
	s.state.RLock()
	if j, ok := s.journals[name]; ok && j.ref.AgentExecutionID == agentExecutionID {
		ref := j.ref
		ref.RecordCount, ref.LastSequence = uint64(len(j.ends)), uint64(len(j.ends))
		refs = append(refs, ref)
	}
	s.state.RUnlock()
	return pickOne(agentExecutionID, refs)
}

// readLine reads the line of sequence seq without its newline.
func (s *FileStore) readLine(j *fileJournal, ends []int64, seq uint64) ([]byte, error) {
	lr := s.newLineReader(j, ends)
	defer lr.close()
	return lr.line(seq)
}

// readRecord reads and decodes the record of sequence seq.
func (s *FileStore) readRecord(j *fileJournal, ends []int64, seq uint64) (Record, error) {
	lr := s.newLineReader(j, ends)
	defer lr.close()
	return lr.record(seq)
}

// lineReader reads the lines of one journal file, given their ends. It
// opens the file on first use and reads ahead while lines are read in order.
type lineReader struct {
	path string
	j    *fileJournal
	ends []int64
	f    *os.File
	br   *bufio.Reader
	next uint64 // sequence br is positioned at; 0 when not positioned
	buf  []byte
	used uint64 // for ReadLog's eviction
}

func (s *FileStore) newLineReader(j *fileJournal, ends []int64) *lineReader {
	return &lineReader{path: s.path(j), j: j, ends: ends}
}

func (lr *lineReader) close() {
	if lr.f != nil {
		lr.f.Close() // read-only
		lr.f, lr.br = nil, nil
	}
}

func (lr *lineReader) start(seq uint64) int64 {
	if seq <= 1 {
		return 0
	}
	return lr.ends[seq-2]
}

// line returns the line of sequence seq without its newline; the bytes are
// valid until the next call.
func (lr *lineReader) line(seq uint64) ([]byte, error) {
	if seq == 0 || seq > uint64(len(lr.ends)) {
		return nil, fmt.Errorf("read %s: sequence %d is not in 1..%d", lr.path, seq, len(lr.ends))
	}
	if lr.f == nil {
		f, err := openOwn(lr.path, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		lr.f, lr.next = f, 0
	}
	if lr.next != seq {
		from := lr.start(seq)
		sr := io.NewSectionReader(lr.f, from, lr.ends[len(lr.ends)-1]-from)
		if lr.br == nil {
			lr.br = bufio.NewReaderSize(sr, readBufferSize)
		} else {
			lr.br.Reset(sr)
		}
		lr.next = seq
	}
	n := int(lr.ends[seq-1] - lr.start(seq))
	if cap(lr.buf) < n {
		lr.buf = make([]byte, n)
	}
	b := lr.buf[:n]
	if _, err := io.ReadFull(lr.br, b); err != nil {
		lr.next = 0
		return nil, fmt.Errorf("read %s line %d: %w", lr.path, seq, err)
	}
	lr.next = seq + 1
	if n == 0 || b[n-1] != '\n' {
		return nil, &CorruptError{Path: lr.path, Line: int(seq), Err: errors.New("the line changed since it was indexed")}
	}
	return b[:n-1], nil
}

// record reads and decodes the record of sequence seq, checking it is that
// sequence of this journal.
func (lr *lineReader) record(seq uint64) (Record, error) {
	data, err := lr.line(seq)
	if err != nil {
		return nil, err
	}
	r, err := Decode(data)
	if err != nil {
		return nil, &CorruptError{Path: lr.path, Line: int(seq), Err: err}
	}
	b := r.RecordBase()
	if b.Sequence != seq {
		return nil, &CorruptError{Path: lr.path, Line: int(seq), Err: fmt.Errorf("record %s has sequence %d, want %d", b.RecordID, b.Sequence, seq)}
	}
	if id := lr.j.ref.JournalID; id != "" && b.JournalID != id {
		return nil, &CorruptError{Path: lr.path, Line: int(seq), Err: fmt.Errorf("record %s is in journal %s, want %s", b.RecordID, b.JournalID, id)}
	}
	return r, nil
}
