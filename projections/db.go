package projections

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/agentjournal/agentjournal/follower"
)

const (
	// DefaultBatchSize is the most log entries applied per transaction.
	// A follower that has caught up applies what arrives at once, in
	// smaller transactions; large ones pay off when catching up, where
	// each rewrites the pages of every execution it touches: applying a million records took 2.7 µs of CPU per record in
	// transactions of 20000, 3.9 in 5000 and 8.6 in 1000. The entries are
	// read in smaller batches (maxReadBatch) and let go of once applied,
	// so a transaction's size costs little memory.
	DefaultBatchSize = 20000
	// DefaultLockTimeout is how long Open waits for the file lock.
	DefaultLockTimeout = time.Second

	// formatVersion is written into meta; a file of another version is
	// rebuilt, never read. Bump it whenever the layout in doc.go changes.
	// Version 2 moved the processed ids and decisions out of the state
	// into their own bucket; version 3 stores timeline items and decisions
	// in the binary form of codec.go instead of JSON; version 4 adds the
	// runtime contract's runs and the by-session index; version 5 keeps
	// a tool call as one timeline item, its end completing its start's
	// in place, and items for checkpoints and snapshots, which a file of
	// version 4 lacks.
	formatVersion = 5

	// fullCheckMax is the largest file whose every key Open walks. Larger
	// files get the structural check only (buckets, meta, first and last
	// keys), which keeps opening a big projection cheap; damage deeper in
	// them surfaces as a CorruptError from the call that meets it.
	fullCheckMax = 64 << 20
)

// Bucket and key names are persisted: never rename them.
var (
	bucketMeta        = []byte("meta")
	bucketExecutions  = []byte("executions")
	bucketSummaries   = []byte("summaries")
	bucketTimeline    = []byte("timeline")
	bucketProcessed   = []byte("processed")
	bucketByOwner     = []byte("by-owner")
	bucketByLifecycle = []byte("by-lifecycle")
	bucketByAttention = []byte("by-attention")
	bucketContract    = []byte("contract")
	bucketBySession   = []byte("by-session")

	keyFormat     = []byte("format")
	keyCheckpoint = []byte("checkpoint")
	// keyUnsynced, when present, holds the boot id of the system that
	// committed to the file without syncing (Config.SyncCommits).
	keyUnsynced = []byte("unsynced")
)

// dataBuckets are the top-level buckets besides meta.
var dataBuckets = [][]byte{bucketExecutions, bucketSummaries, bucketTimeline, bucketProcessed, bucketByOwner, bucketByLifecycle, bucketByAttention,
	bucketContract, bucketBySession}

// Log attribute keys.
const (
	logKeyPath      = "path"
	logKeyAside     = "aside"
	logKeyOffset    = "offset"
	logKeyKind      = "kind"
	logKeyExecution = "execution"
	logKeyRecord    = "record"
	logKeyErr       = "err"
)

// Config configures a DB. Config{Path: p} is complete: every other zero
// value means its default.
type Config struct {
	// Path is the bbolt file. Its directory is created (0700) if missing and
	// the file is created 0600. Required.
	Path string
	// BatchSize is the most log entries applied in one transaction by
	// Project and CatchUp. Zero means DefaultBatchSize.
	BatchSize int
	// Logger receives skipped records and rebuild notices. Nil discards them.
	Logger *slog.Logger
	// SyncCommits makes each transaction wait for its fsync, so that the
	// file survives a power loss as it was at its last commit.
	//
	// By default a commit is visible without waiting for the disk, which
	// on a busy disk can take tens or hundreds of milliseconds. The file
	// is then marked, durably and before the first such commit, as
	// written without syncing in the current boot of the system; Close
	// syncs it and removes the mark. A process that dies leaves its
	// writes in the system's page cache, so the next Open in the same
	// boot trusts the file; an Open after the system restarted finds the
	// mark and reports the file corrupt, which OpenOrRebuild rebuilds from
	// the log. Where the system names no boot (only Linux does), every
	// commit is synced.
	SyncCommits bool
	// NoSync skips every fsync (bbolt's NoSync), Close's too, which speeds
	// up a rebuild's scratch file; a crash can then lose or damage the
	// file. False by default.
	NoSync bool
	// LockTimeout is how long Open waits for another holder of the file to
	// let go before failing with ErrLocked. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Now is the clock that names moved-aside files. Nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns the configuration for a projection file at path with
// every default spelled out.
func DefaultConfig(path string) Config {
	return Config{Path: path, BatchSize: DefaultBatchSize, LockTimeout: DefaultLockTimeout}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("projections: no Path (want the projection file, e.g. <data dir>/projections.db)"))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("projections: BatchSize %d is negative (want 1 or more, or 0 for %d)", c.BatchSize, DefaultBatchSize))
	}
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("projections: LockTimeout %s is negative (want a positive duration, or 0 for %s)", c.LockTimeout, DefaultLockTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// DB is an open projection file. Its methods are safe for concurrent use:
// any number of readers run alongside one writer (Apply, Project, CatchUp).
type DB struct {
	cfg Config
	log *slog.Logger

	// mu guards bolt: every read and write holds it shared; Close and the
	// rebuild swap hold it exclusively, so they wait for calls in flight
	// and no call ever sees a closed handle.
	mu   sync.RWMutex
	bolt *bolt.DB // nil once closed

	// wedged says a memory fault inside bbolt may have left its locks
	// held (see guarded).
	wedged atomic.Bool

	// writing serializes the writers (Apply, Project, CatchUp), so that
	// the states cache is folded by one batch at a time. It is taken
	// before mu.
	writing sync.Mutex
	// states keeps the executions the last batches touched, decoded and
	// folded up to the checkpoint. It is used with writing and mu (shared)
	// held; a batch that fails empties it, since its states may then be
	// ahead of the file, and so does a swap, with mu held exclusively.
	states *stateCache
	// lineage reads the parent journals of forks (fork.go); set from the
	// source when it can, nil otherwise.
	lineage atomic.Pointer[lineageSource]

	// boot is the system's boot id when commits go unsynced, "" when each
	// is synced. marked says the file durably holds the running boot's id
	// as keyUnsynced, which Close removes; until it does, an unsynced DB's
	// commit syncs and writes the mark. Both are used with writing held,
	// or mu held exclusively.
	boot   string
	marked bool

	// slab is the last transaction's newest slab of kept values, which
	// the next transaction reuses (applier.keep); used with writing held.
	slab []byte

	// f follows the log into the file (Project, CatchUp, Rebuild) and
	// tells WaitFor calls of its commits.
	f *follower.Follower
}

// Open opens the projection file at cfg.Path, creating it when missing. An
// existing file must open within cfg.LockTimeout (ErrLocked otherwise), hold
// the buckets of this format version and pass a sanity check; when it does
// not, Open returns an error matching ErrCorrupt that names the file and the
// problem. A corrupt file is left as it is.
func Open(cfg Config) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, fmt.Errorf("open projection %s: %w", cfg.Path, err)
	}
	db := &DB{cfg: cfg, log: cfg.Logger, states: newStateCache(stateCacheSize)}
	f, err := follower.New(liveSink{sink{db}}, followerConfig(cfg))
	if err != nil {
		return nil, err
	}
	db.f = f
	if boot, ok := bootID(); ok && !cfg.SyncCommits && !cfg.NoSync {
		db.boot = boot
	}
	if db.bolt, db.marked, err = openBolt(cfg, db.boot != ""); err != nil {
		return nil, err
	}
	return db, nil
}

// unsyncedMark reads the file's unsynced mark: a file another boot of the
// system committed to without syncing may have lost any of those commits,
// in any order, and is corrupt. It returns whether the file holds the mark
// of the running boot, which Close then removes.
func unsyncedMark(tx *bolt.Tx, path string) (marked bool, err error) {
	v := tx.Bucket(bucketMeta).Get(keyUnsynced)
	if v == nil {
		return false, nil
	}
	now, ok := bootID()
	if ok && string(v) == now {
		return true, nil
	}
	return false, corrupt(path, fmt.Sprintf("it was written without syncing before the system restarted (boot %s, now %s), so it may have lost writes", v, cmp.Or(now, "unknown")), nil)
}

// Path returns the projection file's path.
func (db *DB) Path() string { return db.cfg.Path }

// Close waits for the calls in flight and closes the file. It is safe to
// call more than once.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.bolt == nil {
		return nil
	}
	var err error
	if db.wedged.Load() {
		// The file and its mapping stay until the process exits; the next
		// Open checks the file, and a file still marked unsynced is
		// rebuilt.
		err = errWedged
	} else {
		err = errors.Join(db.unmark(), db.bolt.Close())
	}
	db.bolt = nil
	db.states.purge()
	db.f.WakeAll()
	if err != nil {
		return fmt.Errorf("close projection %s: %w", db.cfg.Path, err)
	}
	return nil
}

// unmark syncs a file written without syncing and removes its mark. It
// runs with mu held exclusively. A file that fails to sync may have lost
// writes the system could not put on disk, even within this boot, so it
// is moved aside as corrupt and the next Open starts a new one. When only
// removing the mark fails, the mark stays: the file is synced, and trusted
// until the system restarts.
func (db *DB) unmark() error {
	if !db.marked {
		return nil
	}
	if err := syncBolt(db.bolt); err != nil {
		aside, mvErr := moveAside(db.cfg)
		if mvErr != nil {
			return fmt.Errorf("sync projection %s: %w; moving it aside failed: %w", db.cfg.Path, err, mvErr)
		}
		db.log.Error("the projection file could not be synced: moved it aside, the next start rebuilds it",
			logKeyPath, db.cfg.Path, logKeyAside, aside, logKeyErr, err)
		return fmt.Errorf("sync projection %s (moved aside to %s): %w", db.cfg.Path, aside, err)
	}
	db.bolt.NoSync = false
	err := db.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyUnsynced) })
	if err != nil {
		return fmt.Errorf("remove the unsynced mark of projection %s: %w", db.cfg.Path, err)
	}
	db.marked = false
	return nil
}

// syncBolt flushes a bbolt file to disk; tests replace it to fail.
var syncBolt = (*bolt.DB).Sync

// view runs fn in a read transaction.
func (db *DB) view(fn func(tx *bolt.Tx) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return ErrClosed
	}
	return db.guarded(func() error { return db.bolt.View(fn) })
}

// errWedged is returned once a memory fault inside bbolt has wedged the
// DB.
var errWedged = errors.New("bbolt faulted reading the file, which may have changed under it (a lost disk, a file cut short), and may hold its locks: the file is no longer read or written, and its handle is left to the process's exit")

// update runs fn in a write transaction.
func (db *DB) update(fn func(tx *bolt.Tx) error) error {
	return db.guarded(func() error { return db.bolt.Update(fn) })
}

// guarded is guard for an open DB. A memory fault inside bbolt can break
// off a transaction's begin or rollback with bbolt's locks held, after
// which any call into bbolt, Close included, waits forever: the first
// fault wedges the DB, and no call reaches bbolt again. A panic of the
// caller's own leaves bbolt to unlock as it unwinds.
func (db *DB) guarded(fn func() error) error {
	if db.wedged.Load() {
		return fmt.Errorf("projection %s: %w", db.cfg.Path, errWedged)
	}
	return guard(db.cfg.Path, func() error {
		defer func() {
			if r := recover(); r != nil {
				if _, fault := r.(interface{ Addr() uintptr }); fault {
					db.wedged.Store(true)
				}
				panic(r)
			}
		}()
		return fn()
	})
}

// guard turns a panic or a memory fault inside bbolt, which is how it reacts
// to a damaged page, into a CorruptError. bbolt rolls the transaction back on
// the way out.
func guard(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = corrupt(path, "bbolt failed reading it", fmt.Errorf("panic: %v", r))
		}
	}()
	return fn()
}

// openBolt opens and checks the file, and says whether it holds the
// running boot's unsynced mark (see unsyncedMark); unsynced says commits
// will skip their fsync.
func openBolt(cfg Config, unsynced bool) (*bolt.DB, bool, error) {
	path := cfg.Path
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, fmt.Errorf("open projection %s: %w", path, err)
	case !info.Mode().IsRegular():
		return nil, false, fmt.Errorf("open projection %s: not a regular file (%s)", path, info.Mode().Type())
	case info.Size() == 0:
		// bbolt would quietly initialize an empty file; an empty projection
		// file is one whose creation was cut short, or a truncated one.
		return nil, false, corrupt(path, "the file is empty", nil)
	}
	size := int64(0)
	if info != nil {
		size = info.Size()
	}

	var file *os.File
	opts := &bolt.Options{
		Timeout: cfg.LockTimeout,
		NoSync:  cfg.NoSync,
		// Unsynced commits leave the file's growth unsynced too; a file
		// whose writes were lost is rebuilt either way.
		NoGrowSync:   unsynced,
		FreelistType: bolt.FreelistMapType,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	var b *bolt.DB
	err = guard(path, func() error {
		var err error
		b, err = bolt.Open(path, 0o600, opts)
		return err
	})
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		// bbolt panicked half way through Open: release the file and its
		// lock ourselves. The memory mapping of the damaged file, if bbolt
		// made one, stays until the process exits.
		if file != nil {
			release(file)
		}
		return nil, false, err
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, false, fmt.Errorf("%w: %s is held by another process or DB (waited %s); stop the other daemon or pick another file", ErrLocked, path, cfg.LockTimeout)
	case err != nil && ioError(err):
		return nil, false, fmt.Errorf("open projection %s: %w", path, err)
	case err != nil:
		return nil, false, corrupt(path, "bbolt cannot open it", err)
	}
	marked, err := prepare(b, path, size)
	if err != nil {
		// Closing a damaged file can panic half way through too; releasing
		// the descriptor as well makes sure its lock goes with it.
		if guard(path, b.Close) != nil {
			release(file)
		}
		return nil, false, err
	}
	return b, marked, nil
}

// ioError reports an error of the operating system (permissions, disk) as
// opposed to one about the file's content.
func ioError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// prepare lays out a new file (one without buckets) or checks an existing
// one, and says whether it holds the running boot's unsynced mark.
func prepare(b *bolt.DB, path string, size int64) (marked bool, err error) {
	empty := true
	err = guard(path, func() error {
		return b.View(func(tx *bolt.Tx) error {
			k, _ := tx.Cursor().First()
			empty = k == nil
			return nil
		})
	})
	if err != nil {
		return false, err
	}
	if empty {
		err := b.Update(func(tx *bolt.Tx) error {
			meta, err := tx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			if err := meta.Put(keyFormat, u64(formatVersion)); err != nil {
				return err
			}
			if err := meta.Put(keyCheckpoint, u64(0)); err != nil {
				return err
			}
			for _, name := range dataBuckets {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("create projection %s: %w", path, err)
		}
		return false, nil
	}
	err = guard(path, func() error {
		return b.View(func(tx *bolt.Tx) error {
			if err := check(tx, path, size <= fullCheckMax); err != nil {
				return err
			}
			marked, err = unsyncedMark(tx, path)
			return err
		})
	})
	return marked, err
}

// check verifies the file's shape: the meta bucket with this format version
// and a checkpoint, every data bucket and nothing else. With full it also
// walks every key and checks that the summaries and indexes agree with the
// executions; otherwise it touches the first and last key of each bucket.
func check(tx *bolt.Tx, path string, full bool) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return corrupt(path, "no meta bucket (not an agentjournal projection file)", nil)
	}
	v := meta.Get(keyFormat)
	if len(v) != 8 {
		return corrupt(path, fmt.Sprintf("meta format version is %d bytes (want 8)", len(v)), nil)
	}
	if got := binary.BigEndian.Uint64(v); got != formatVersion {
		return corrupt(path, fmt.Sprintf("format version %d (this build reads %d)", got, formatVersion), nil)
	}
	if v := meta.Get(keyCheckpoint); len(v) != 8 {
		return corrupt(path, fmt.Sprintf("checkpoint is %d bytes (want 8)", len(v)), nil)
	}
	known := map[string]bool{string(bucketMeta): true}
	for _, name := range dataBuckets {
		known[string(name)] = true
		if tx.Bucket(name) == nil {
			return corrupt(path, fmt.Sprintf("no %s bucket", name), nil)
		}
	}
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !known[string(name)] {
			return corrupt(path, fmt.Sprintf("unexpected bucket %q", name), nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !full {
		for _, name := range dataBuckets {
			c := tx.Bucket(name).Cursor()
			c.First()
			c.Last()
		}
		return nil
	}
	return checkData(tx, path)
}

// checkData walks every key and checks that each execution has exactly one
// summary and one entry in each index, and that every timeline and every
// set of processed ids belongs to an execution and is well formed.
func checkData(tx *bolt.Tx, path string) error {
	execs := tx.Bucket(bucketExecutions)
	sums := tx.Bucket(bucketSummaries)
	n := 0
	err := execs.ForEach(func(k, v []byte) error {
		n++
		if len(v) == 0 || v[0] != '{' {
			return corrupt(path, fmt.Sprintf("execution %q is not a JSON object", k), nil)
		}
		if s := sums.Get(k); len(s) == 0 || s[0] != '{' {
			return corrupt(path, fmt.Sprintf("execution %q has no summary", k), nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if got := sums.Stats().KeyN; got != n {
		return corrupt(path, fmt.Sprintf("%d summaries for %d executions", got, n), nil)
	}
	runs := 0
	err = tx.Bucket(bucketContract).ForEachBucket(func(id []byte) error {
		runs++
		if execs.Get(id) == nil {
			return corrupt(path, fmt.Sprintf("contract run of unknown execution %q", id), nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if runs != n {
		return corrupt(path, fmt.Sprintf("%d contract runs for %d executions", runs, n), nil)
	}
	for _, name := range [][]byte{bucketByOwner, bucketByLifecycle, bucketByAttention, bucketBySession} {
		count := 0
		err := tx.Bucket(name).ForEach(func(k, v []byte) error {
			count++
			i := bytes.LastIndexByte(k, 0)
			if i < 0 || len(v) != 0 {
				return corrupt(path, fmt.Sprintf("%s key %q is not <value>\\x00<execution id> -> empty", name, k), nil)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if count != n {
			return corrupt(path, fmt.Sprintf("%d %s entries for %d executions", count, name, n), nil)
		}
	}
	err = tx.Bucket(bucketTimeline).ForEachBucket(func(id []byte) error {
		if execs.Get(id) == nil {
			return corrupt(path, fmt.Sprintf("timeline of unknown execution %q", id), nil)
		}
		return tx.Bucket(bucketTimeline).Bucket(id).ForEach(func(k, v []byte) error {
			if len(k) < 8 || len(v) == 0 || v[0] != itemFormat {
				return corrupt(path, fmt.Sprintf("timeline of %q has a bad item at key %x", id, k), nil)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketProcessed).ForEachBucket(func(id []byte) error {
		if execs.Get(id) == nil {
			return corrupt(path, fmt.Sprintf("processed ids of unknown execution %q", id), nil)
		}
		return tx.Bucket(bucketProcessed).Bucket(id).ForEach(func(k, v []byte) error {
			if !validProcessed(k, v) {
				return corrupt(path, fmt.Sprintf("processed ids of %q have a bad entry at key %q", id, k), nil)
			}
			return nil
		})
	})
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
