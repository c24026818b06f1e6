//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// lockJournalDir takes an exclusive flock on dir/.lock without waiting. The
// kernel drops it however the holder exits, so a crash leaves no stale lock.
func lockJournalDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := openOwn(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf("process %d", pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is in use by %s (close the other store first)", ErrDirLocked, dir, holder)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write pid to %s: %w", path, err)
	}
	return f, nil
}

// recover loads the journal directory and repairs what a crash left:
//
//  1. every journal file is scanned for its line ends;
//  2. the index is read, its torn last line cut off, every line checked
//     against the journals (offsets gapless, sequences gapless per journal);
//  3. each journal's torn last line is cut off and its header read;
//  4. journal records missing from the index are indexed, journal by
//     journal in file name order.
func (s *FileStore) recover() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), journalSuffix) || !e.Type().IsRegular() {
			continue
		}
		j := &fileJournal{name: e.Name()}
		if j.ends, err = scanLineEnds(s.path(j)); err != nil {
			return err
		}
		s.journals[j.name] = j
	}
	if err := s.loadIndex(); err != nil {
		return err
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range s.journals {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		if err := s.recoverJournal(s.journals[name]); err != nil {
			return err
		}
	}
	reindexed := false
	for _, name := range names {
		j, ok := s.journals[name]
		if !ok {
			continue
		}
		for seq := uint64(len(j.offsets)) + 1; seq <= uint64(len(j.ends)); seq++ {
			if _, err := s.readRecord(j, j.ends, seq); err != nil {
				return err
			}
			off, err := s.writeIndexLine(j, seq)
			if err != nil {
				return err
			}
			j.offsets = append(j.offsets, off)
			s.log = append(s.log, logPos{j: j, seq: seq})
			reindexed = true
		}
	}
	if reindexed {
		if err := s.index.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", s.index.Name(), err)
		}
	}
	return durable.SyncDir(s.dir)
}

// scanLineEnds returns the end offset of every newline-terminated line of a
// file. Bytes after the last newline are a torn write; the caller cuts them.
func scanLineEnds(path string) ([]int64, error) {
	f, err := openOwn(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, readBufferSize)
	var ends []int64
	var pos int64
	for {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		switch {
		case err == nil:
			ends = append(ends, pos)
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return ends, nil
		default:
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// loadIndex reads the log index into memory and opens it for appending.
func (s *FileStore) loadIndex() error {
	path := filepath.Join(s.dir, indexFileName)
	f, err := openOwn(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.index = f
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, math.MaxInt64), readBufferSize)
	var (
		pos, good int64 // bytes read; end of the last good line
		line      int
		acc       []byte
		// torn is an unreadable line that is allowed only as the last.
		torn     error
		tornLine int
	)
	for {
		chunk, err := br.ReadSlice('\n')
		pos += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			acc = append(acc, chunk...)
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if len(acc) > 0 {
			chunk = append(acc, chunk...)
			acc = acc[:0]
		}
		line++
		if torn != nil {
			return &CorruptError{Path: path, Line: tornLine, Err: torn}
		}
		var il indexLine
		if err := json.Unmarshal(chunk, &il); err != nil {
			torn, tornLine = err, line
			continue
		}
		if err := s.addIndexLine(il, line); err != nil {
			return &CorruptError{Path: path, Line: line, Err: err}
		}
		good = pos
	}
	if good < pos {
		if err := truncateFile(path, good); err != nil {
			return err
		}
	}
	s.indexSize = good
	return nil
}

// addIndexLine applies one index line read at open.
func (s *FileStore) addIndexLine(il indexLine, line int) error {
	if want := uint64(len(s.log)) + 1; il.Offset != want {
		return fmt.Errorf("offset %d, want %d (offsets are gapless)", il.Offset, want)
	}
	name, err := journalFileName(il.AgentExecutionID)
	if err != nil {
		return fmt.Errorf("agent execution id: %w", err)
	}
	j, ok := s.journals[name]
	if !ok {
		return fmt.Errorf("offset %d is in agent execution %q, which has no journal file %s", il.Offset, il.AgentExecutionID, name)
	}
	owner := Reference{OwnerEntity: il.OwnerEntity, OwnerID: il.OwnerID, AgentExecutionID: il.AgentExecutionID}
	if len(j.offsets) == 0 {
		j.idxOwner, j.idxFirstLine = owner, line
	} else if !sameJournal(owner, j.idxOwner) {
		return fmt.Errorf("offset %d is in journal %s, but line %d puts the same file in %s", il.Offset, owner, j.idxFirstLine, j.idxOwner)
	}
	if want := uint64(len(j.offsets)) + 1; il.Sequence != want {
		return fmt.Errorf("offset %d is sequence %d of %s, want %d (sequences are gapless)", il.Offset, il.Sequence, owner, want)
	}
	j.offsets = append(j.offsets, il.Offset)
	j.idxLastLine = line
	s.log = append(s.log, logPos{j: j, seq: il.Sequence})
	return nil
}

// recoverJournal cuts a torn last line off a journal file, checks the index
// does not point past the file, and reads the header. An empty file (its
// header was torn) is removed.
func (s *FileStore) recoverJournal(j *fileJournal) error {
	path := s.path(j)
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	size := fi.Size()
	if n := len(j.ends); n > 0 && len(j.offsets) < n {
		// The last line is not indexed yet, so no append acknowledged it:
		// if it is not JSON, its write was torn (after a power loss the
		// file system may show a block of zeros where the line was). A
		// line that is indexed is never cut: it is reported when read.
		data, err := s.readLine(j, j.ends, uint64(n))
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			j.ends = j.ends[:n-1]
		}
	}
	end := int64(0)
	if n := len(j.ends); n > 0 {
		end = j.ends[n-1]
	}
	if end < size {
		if err := truncateFile(path, end); err != nil {
			return err
		}
	}
	if len(j.offsets) > len(j.ends) {
		return &CorruptError{Path: s.index.Name(), Line: j.idxLastLine,
			Err: fmt.Errorf("the index has %d records of %s, but its file holds %d complete records", len(j.offsets), path, len(j.ends))}
	}
	if len(j.ends) == 0 {
		delete(s.journals, j.name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove empty journal file: %w", err)
		}
		return nil
	}
	r, err := s.readRecord(j, j.ends, 1)
	if err != nil {
		return err
	}
	h, ok := r.(*Header)
	if !ok {
		return &CorruptError{Path: path, Line: 1, Err: fmt.Errorf("%s record, want the journal.header", r.Kind())}
	}
	want, err := journalFileName(h.AgentExecutionID)
	if err != nil || want != j.name {
		return &CorruptError{Path: path, Line: 1, Err: fmt.Errorf("the header is of agent execution %q, whose journal file is %s", h.AgentExecutionID, want)}
	}
	j.ref = Reference{JournalID: h.JournalID, OwnerEntity: h.Scope, OwnerID: h.OwnerID, AgentExecutionID: h.AgentExecutionID}
	j.headerID = h.RecordID
	if len(j.offsets) > 0 && !sameJournal(j.idxOwner, j.ref) {
		return &CorruptError{Path: s.index.Name(), Line: j.idxFirstLine,
			Err: fmt.Errorf("the index puts %s in journal %s, but its header says %s", path, j.idxOwner, j.ref)}
	}
	return nil
}

func truncateFile(path string, size int64) error {
	f, err := openOwn(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
