//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// File layout under FileConfig.Dir. The names are persisted: never rename one.
const (
	// journalDirName holds every journal file, the log index and the lock.
	journalDirName = "agent-journals"
	// journalSuffix ends the file of one journal:
	// <EscapeID(agentExecutionId)>.interaction.jsonl.
	journalSuffix = ".interaction.jsonl"
	// indexFileName is the global log index: line N describes offset N.
	indexFileName = "log.index.jsonl"
	// lockFileName is flocked while a FileStore is open.
	lockFileName = ".lock"
)

const (
	// maxFileName is the longest file name the store writes (NAME_MAX on
	// the common file systems).
	maxFileName = 255
	// maxOpenWriters bounds the journal files kept open for appending.
	maxOpenWriters = 64
	// maxOpenReaders bounds the journal files one ReadLog keeps open.
	maxOpenReaders = 32
	// readBufferSize is the read-ahead of sequential journal reads.
	readBufferSize = 64 << 10
)

var (
	// ErrCorrupt reports a journal or index file that holds a line the
	// store cannot read back and that a crash cannot explain.
	ErrCorrupt = errors.New("eventstore: corrupt journal file")
	// ErrDirLocked reports a journal directory opened by another FileStore,
	// in this process or another one.
	ErrDirLocked = errors.New("eventstore: journal directory is locked")
)

// CorruptError names the file and line (1-based) that cannot be read back.
// It matches ErrCorrupt with errors.Is.
type CorruptError struct {
	Path string
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt line %d of %s: %v", e.Line, e.Path, e.Err)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }

// FileConfig configures a FileStore.
type FileConfig struct {
	// Dir is the root directory; the store keeps its files in
	// Dir/agent-journals. Required.
	Dir string
	// MaxRecordSize bounds one encoded record; DefaultMaxRecordSize when 0.
	MaxRecordSize int
	// Sync fsyncs the journal file and the log index before an append
	// returns. Without it an acknowledged append survives a crash of the
	// process (kill -9) but not a power loss. The zero value is false;
	// DefaultFileConfig turns it on.
	Sync bool
	// Now is the clock for occurredAt; time.Now when nil.
	Now func() time.Time
}

// DefaultFileConfig returns the configuration callers use unless told
// otherwise: the default record limit and fsync on every append.
func DefaultFileConfig(dir string) FileConfig {
	return FileConfig{Dir: dir, MaxRecordSize: DefaultMaxRecordSize, Sync: true}
}

// Validate reports every problem with the configuration at once.
func (c FileConfig) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("dir is required"))
	}
	if c.MaxRecordSize < 0 {
		errs = append(errs, fmt.Errorf("max record size %d is negative (want 0 for the default, or a byte count)", c.MaxRecordSize))
	}
	return errors.Join(errs...)
}

// FileStore keeps each journal in its own JSONL file, one record per line,
// and the global log order in an index file with one line per append:
//
//	Dir/agent-journals/<EscapeID(agentExecutionId)>.interaction.jsonl
//	Dir/agent-journals/log.index.jsonl
//
// An append writes the record line, then the index line; OpenFile repairs
// what a crash between or during the two writes leaves behind. The store
// holds an exclusive lock on the directory while open.
//
// A journal file is named for the AgentExecution id alone, so one file store
// holds at most one journal per AgentExecution id: EnsureJournal refuses a
// second owner of the same id.
type FileStore struct {
	cfg    FileConfig
	dir    string // Dir/agent-journals
	lock   *os.File
	closed atomic.Bool

	// mu serializes writers: EnsureJournal, Append and Close. The fields
	// below marked "writers" are touched only with mu held.
	mu        sync.Mutex
	index     *os.File   // writers
	indexSize int64      // writers
	writers   *list.List // writers; open journal files, most recent first
	// failed is set when a failed append could not be rolled back; the
	// store refuses writes until it is reopened and recovered.
	failed error // writers

	// state guards what readers see: the journal map, every journal's line
	// and offset slices and the log. Writers change them holding mu and
	// state; readers take state briefly to snapshot slice headers. The
	// slices only grow, so a snapshot's elements never change under it.
	state    sync.RWMutex
	journals map[string]*fileJournal // by file name
	log      []logPos                // log[offset-1]
}

var _ Store = (*FileStore)(nil)

// fileJournal is the in-memory view of one journal file.
type fileJournal struct {
	name     string    // file name inside the journal directory
	ref      Reference // from the header; counters unused
	headerID string

	// ends[i] is the byte offset just past the newline of sequence i+1;
	// offsets[i] is the log offset of sequence i+1. Guarded by state.
	ends    []int64
	offsets []uint64

	// Writers only.
	w    *os.File
	elem *list.Element
	// ids maps record ids to sequences; nil until the first append after
	// the store was opened, then complete.
	ids map[string]uint64

	// Set while opening only.
	idxOwner     Reference // owner named by the journal's index lines
	idxFirstLine int       // first and last index line of the journal
	idxLastLine  int
}

type logPos struct {
	j   *fileJournal
	seq uint64
}

// indexLine is one line of the log index. Its field names are persisted.
type indexLine struct {
	Offset           uint64      `json:"offset"`
	OwnerEntity      OwnerEntity `json:"ownerEntity"`
	OwnerID          string      `json:"ownerId"`
	AgentExecutionID string      `json:"agentExecutionId"`
	Sequence         uint64      `json:"sequence"`
}

// journalFileName names the file of an AgentExecution's journal. An id
// whose escaped form would make the name longer than a file system accepts
// keeps a readable prefix and ends in '~' and a hash of the whole id; '~' is
// never produced by EscapeID, so the two forms cannot meet.
func journalFileName(agentExecutionID string) (string, error) {
	esc, err := EscapeID(agentExecutionID)
	if err != nil {
		return "", err
	}
	if len(esc)+len(journalSuffix) <= maxFileName {
		return esc + journalSuffix, nil
	}
	sum := hashID("", 16, "journal-file", agentExecutionID)
	prefix := esc[:maxFileName-len(journalSuffix)-1-len(sum)]
	// Do not end the prefix inside a %XX escape.
	if i := strings.LastIndexByte(prefix, escapeMark); i >= 0 && i > len(prefix)-3 {
		prefix = prefix[:i]
	}
	return prefix + "~" + sum + journalSuffix, nil
}

// OpenFile opens the file store under cfg.Dir, creating it when needed, and
// recovers from a crash: a torn last line of a journal file or of the index
// is cut off, and records written to a journal but missing from the index
// are indexed. A line that a crash cannot explain is a *CorruptError.
func OpenFile(cfg FileConfig) (*FileStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open file journal store: %w", err)
	}
	if cfg.MaxRecordSize == 0 {
		cfg.MaxRecordSize = DefaultMaxRecordSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &FileStore{
		cfg:      cfg,
		dir:      filepath.Join(cfg.Dir, journalDirName),
		writers:  list.New(),
		journals: map[string]*fileJournal{},
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("open file journal store: %w", err)
	}
	if err := checkOwnDir(s.dir); err != nil {
		return nil, fmt.Errorf("open file journal store: %w", err)
	}
	lock, err := lockJournalDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("open file journal store: %w", err)
	}
	s.lock = lock
	if err := s.recover(); err != nil {
		s.closed.Store(true)
		return nil, errors.Join(fmt.Errorf("open file journal store %s: %w", s.dir, err), s.closeFiles())
	}
	return s, nil
}

func sameJournal(a, b Reference) bool {
	return a.OwnerEntity == b.OwnerEntity && a.OwnerID == b.OwnerID && a.AgentExecutionID == b.AgentExecutionID
}

func (s *FileStore) path(j *fileJournal) string { return filepath.Join(s.dir, j.name) }

// Close releases the directory lock and closes the files. Reads already
// under way finish on their own files.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return s.closeFiles()
}

func (s *FileStore) closeFiles() error {
	var errs []error
	for e := s.writers.Front(); e != nil; e = e.Next() {
		j := e.Value.(*fileJournal)
		errs = append(errs, j.w.Close())
		j.w, j.elem = nil, nil
	}
	s.writers.Init()
	if s.index != nil {
		errs = append(errs, s.index.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// resolve checks a reference and returns it with its journal id and the
// name of its file.
func (s *FileStore) resolve(ref Reference) (Reference, string, error) {
	if s.closed.Load() {
		return ref, "", ErrClosed
	}
	if err := ref.validate(); err != nil {
		return ref, "", err
	}
	ref.JournalID = JournalIDFor(ref.OwnerEntity, ref.OwnerID, ref.AgentExecutionID)
	name, err := journalFileName(ref.AgentExecutionID)
	return ref, name, err
}

// journal returns the journal of ref, or nil. Hold state or mu.
func (s *FileStore) journal(ref Reference, name string) *fileJournal {
	j := s.journals[name]
	if j == nil || !sameJournal(j.ref, ref) {
		return nil
	}
	return j
}

// EnsureJournal implements Store. A header without a record id gets its
// deterministic one first, so ensuring a journal twice with equal headers is
// a no-op.
func (s *FileStore) EnsureJournal(ctx context.Context, ref Reference, h *Header) (Reference, error) {
	ref, name, err := s.resolve(ref)
	if err != nil {
		return ref, err
	}
	if h == nil {
		return ref, fmt.Errorf("ensure journal %s: %w: the header is nil", ref, ErrInvalidRecord)
	}
	if h.RecordID == "" {
		h.RecordID = RecordID(ref.JournalID, KindHeader, NaturalKey(h))
	}
	if err := ctx.Err(); err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	if err := CheckLinks(ctx, s, h); err != nil {
		// Checked before the lock: the check reads the parent journal.
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ref, ErrClosed
	}
	if j := s.journals[name]; j != nil {
		if !sameJournal(j.ref, ref) {
			return ref, fmt.Errorf("ensure journal %s: %w: agent execution %q already has the journal of %s (a file store keeps one journal per agent execution id)",
				ref, ErrJournalExists, ref.AgentExecutionID, j.ref)
		}
		if h.RecordID != j.headerID {
			return ref, fmt.Errorf("ensure journal %s: %w with header %s (this one is %s)", ref, ErrJournalExists, j.headerID, h.RecordID)
		}
		ref.RecordCount, ref.LastSequence = uint64(len(j.ends)), uint64(len(j.ends))
		return ref, nil
	}
	if s.failed != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, s.failed)
	}
	data, err := prepare(ref, h, 1, s.cfg.Now, s.cfg.MaxRecordSize)
	if err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	j := &fileJournal{name: name, ref: ref, headerID: h.RecordID, ids: map[string]uint64{}}
	j.ref.RecordCount, j.ref.LastSequence = 0, 0
	if _, err := s.write(j, h.RecordID, data); err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	ref.RecordCount, ref.LastSequence = 1, 1
	return ref, nil
}

// Append implements Store. A record whose id is already in the journal,
// however long ago it was appended, returns the stored entry.
func (s *FileStore) Append(ctx context.Context, ref Reference, r Record) (Entry, error) {
	ref, name, err := s.resolve(ref)
	if err != nil {
		return Entry{}, err
	}
	if err := refuseHeader(ref, r); err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return Entry{}, ErrClosed
	}
	j := s.journal(ref, name)
	if j == nil {
		return Entry{}, fmt.Errorf("append to %s: %w (ensure the journal with its header first)", ref, ErrJournalNotFound)
	}
	if s.failed != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, s.failed)
	}
	if err := s.loadIDs(j); err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	data, err := prepare(ref, r, uint64(len(j.ends))+1, s.cfg.Now, s.cfg.MaxRecordSize)
	if err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	if seq, ok := j.ids[r.RecordBase().RecordID]; ok {
		stored, err := s.readRecord(j, j.ends, seq)
		if err != nil {
			return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
		}
		return Entry{Offset: j.offsets[seq-1], Record: stored}, nil
	}
	off, err := s.write(j, r.RecordBase().RecordID, data)
	if err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	return Entry{Offset: off, Record: r}, nil
}

// loadIDs reads the record ids of a journal the first time it is appended
// to after the store was opened. Hold mu.
func (s *FileStore) loadIDs(j *fileJournal) error {
	if j.ids != nil {
		return nil
	}
	ids := make(map[string]uint64, len(j.ends))
	lr := s.newLineReader(j, j.ends)
	defer lr.close()
	var peek struct {
		RecordID string `json:"recordId"`
		Sequence uint64 `json:"sequence"`
	}
	for seq := uint64(1); seq <= uint64(len(j.ends)); seq++ {
		data, err := lr.line(seq)
		if err != nil {
			return err
		}
		peek.RecordID, peek.Sequence = "", 0
		if err := json.Unmarshal(data, &peek); err != nil {
			return &CorruptError{Path: s.path(j), Line: int(seq), Err: err}
		}
		if peek.Sequence != seq || peek.RecordID == "" {
			return &CorruptError{Path: s.path(j), Line: int(seq), Err: fmt.Errorf("record %q has sequence %d, want %d", peek.RecordID, peek.Sequence, seq)}
		}
		ids[peek.RecordID] = seq
	}
	j.ids = ids
	return nil
}

// write appends one encoded record, whose id is id, to a journal: the
// record line, then the index line, each fsynced when cfg.Sync. A journal not
// yet in the store is created (its record is the header). Readers see the
// record only once both lines are written. On failure both files are cut
// back; if that fails too, the store refuses writes until reopened. Hold mu.
func (s *FileStore) write(j *fileJournal, id string, data []byte) (uint64, error) {
	seq := uint64(len(j.ends)) + 1
	created := seq == 1
	w, err := s.writer(j, created)
	if err != nil {
		return 0, err
	}
	var end int64
	if n := len(j.ends); n > 0 {
		end = j.ends[n-1]
	}
	line := append(data, '\n')
	indexEnd := s.indexSize
	var off uint64
	if _, err = w.Write(line); err == nil && s.cfg.Sync {
		err = w.Sync()
		if err == nil && created {
			err = durable.SyncDir(s.dir)
		}
	}
	if err == nil {
		off, err = s.writeIndexLine(j, seq)
	}
	if err == nil && s.cfg.Sync {
		err = s.index.Sync()
	}
	if err != nil {
		// What a crash leaves is repaired at open, but a running store
		// must not keep lines it did not acknowledge.
		s.indexSize = indexEnd
		rerr := errors.Join(w.Truncate(end), s.index.Truncate(indexEnd))
		if rerr == nil && created {
			s.closeWriter(j)
			rerr = os.Remove(s.path(j))
		}
		if rerr != nil {
			s.failed = fmt.Errorf("an earlier failed write could not be rolled back (reopen the store to recover): %w", errors.Join(err, rerr))
		}
		return 0, err
	}
	s.state.Lock()
	j.ends = append(j.ends, end+int64(len(line)))
	j.offsets = append(j.offsets, off)
	s.log = append(s.log, logPos{j: j, seq: seq})
	if created {
		s.journals[j.name] = j
	}
	s.state.Unlock()
	if j.ids != nil {
		j.ids[id] = seq
	}
	return off, nil
}

// writeIndexLine appends the index line of sequence seq of j, which the
// caller publishes at the returned offset. Hold mu (or be opening).
func (s *FileStore) writeIndexLine(j *fileJournal, seq uint64) (uint64, error) {
	off := uint64(len(s.log)) + 1
	b, err := json.Marshal(indexLine{
		Offset:           off,
		OwnerEntity:      j.ref.OwnerEntity,
		OwnerID:          j.ref.OwnerID,
		AgentExecutionID: j.ref.AgentExecutionID,
		Sequence:         seq,
	})
	if err != nil {
		return 0, err
	}
	b = append(b, '\n')
	if _, err := s.index.Write(b); err != nil {
		return 0, fmt.Errorf("write %s: %w", s.index.Name(), err)
	}
	s.indexSize += int64(len(b))
	return off, nil
}

// writer returns the journal's file open for appending, keeping at most
// maxOpenWriters open. Hold mu.
func (s *FileStore) writer(j *fileJournal, create bool) (*os.File, error) {
	if j.w != nil {
		s.writers.MoveToFront(j.elem)
		return j.w, nil
	}
	for s.writers.Len() >= maxOpenWriters {
		s.closeWriter(s.writers.Back().Value.(*fileJournal))
	}
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := openOwn(s.path(j), flag, 0o600)
	if err != nil {
		return nil, err
	}
	if create {
		// A file the store does not know holds nothing: a torn header is
		// removed at open, a failed creation is removed at once.
		if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
			f.Close()
			if err == nil {
				err = fmt.Errorf("%s exists and is not empty, but holds no journal the store knows", f.Name())
			}
			return nil, err
		}
	}
	j.w = f
	j.elem = s.writers.PushFront(j)
	return f, nil
}

func (s *FileStore) closeWriter(j *fileJournal) {
	if j.w == nil {
		return
	}
	s.writers.Remove(j.elem)
	j.w.Close() // read-write handle with nothing buffered: only fsync reports write errors
	j.w, j.elem = nil, nil
}
