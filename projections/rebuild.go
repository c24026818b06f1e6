package projections

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/follower"
	"github.com/agentjournal/agentjournal/internal/durable"
)

// OpenOrRebuild opens the projection file and catches it up with src. When
// the file is corrupt (ErrCorrupt) it is moved aside to
// <path>.corrupt-<unix time>, never deleted, and a new file is built from
// offset 1; rebuilt then reports it. A missing file is created and caught up
// like any other. progress, when not nil, follows the catch-up (see CatchUp).
func OpenOrRebuild(ctx context.Context, cfg Config, src Source, progress func(done, total uint64)) (db *DB, rebuilt bool, err error) {
	db, err = Open(cfg)
	if errors.Is(err, ErrCorrupt) {
		cfg = cfg.withDefaults()
		aside, mvErr := moveAside(cfg)
		if mvErr != nil {
			return nil, false, fmt.Errorf("%w; moving it aside failed: %w", err, mvErr)
		}
		cfg.Logger.Warn("projection file is corrupt: moved it aside and rebuilding from the log",
			logKeyPath, cfg.Path, logKeyAside, aside, logKeyErr, err)
		rebuilt = true
		db, err = Open(cfg)
	}
	if err != nil {
		return nil, rebuilt, err
	}
	if err := db.CatchUp(ctx, src, progress); err != nil {
		_ = db.Close()
		return nil, rebuilt, err
	}
	return db, rebuilt, nil
}

// moveAside renames a corrupt file to <path>.corrupt-<unix time>, with a
// counter appended should that name be taken.
func moveAside(cfg Config) (string, error) {
	base := cfg.Path + ".corrupt-" + strconv.FormatInt(cfg.Now().Unix(), 10)
	aside := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = base + "-" + strconv.Itoa(i)
	}
	if err := os.Rename(cfg.Path, aside); err != nil {
		return "", err
	}
	return aside, durable.SyncDir(filepath.Dir(cfg.Path))
}

// Rebuild builds a fresh projection from offset 1 in <live path>.rebuild,
// checks it and swaps it in for live: the file is renamed over live's path
// and live serves from it. progress, when not nil, follows the build as
// each read batch is applied, not only after each transaction (see
// follower.Rebuild): one transaction may take the whole log.
//
// Readers of live keep working throughout; during the swap itself they wait
// for it. A projector running on live (Project) may keep running: before the
// swap the new file is caught up to at least live's checkpoint while live's
// writers are held off, so live's next batch continues from the new file's
// checkpoint (entries it already holds are skipped). If Rebuild fails, live
// is untouched and the partial file is removed. A second Rebuild of live
// while one runs fails with ErrRebuilding.
func Rebuild(ctx context.Context, src Source, live *DB, progress func(done, total uint64)) error {
	live.useLineage(src)
	return live.f.Rebuild(ctx, src, progress)
}

// liveSink is a DB that a rebuild replaces.
type liveSink struct{ sink }

// freshSink is the DB a rebuild builds beside the live one.
type freshSink struct{ sink }

// Beside implements follower.Rebuilder: it opens a new file at
// <path>.rebuild, written without syncing until the swap.
func (s liveSink) Beside() (follower.Replacement, error) {
	live := s.db
	path := live.cfg.Path + ".rebuild"
	// The live file's lock keeps any other process out, so a file here is
	// what a failed rebuild left behind.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale %s: %w", path, err)
	}
	cfg := live.cfg
	cfg.Path = path
	cfg.NoSync = true // synced once before the swap
	fresh, err := Open(cfg)
	if err != nil {
		// bbolt may have created the file before failing to lay it out
		// (a full disk, say): what is there is ours and half made.
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w; removing %s failed: %w", err, path, rmErr)
		}
		return nil, err
	}
	fresh.lineage.Store(live.lineage.Load())
	return freshSink{sink{fresh}}, nil
}

// Discard implements follower.Replacement: it closes the new file and
// removes it.
func (s freshSink) Discard() error {
	_ = s.db.Close()
	path := s.db.cfg.Path
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// Verify implements follower.Verifier: the new file reached target and
// its summaries and indexes agree with its executions.
func (s freshSink) Verify(target uint64) error {
	db := s.db
	return db.view(func(tx *bolt.Tx) error {
		if cp := checkpoint(tx); cp < target {
			return fmt.Errorf("checkpoint %d is below the target offset %d", cp, target)
		}
		return checkData(tx, db.cfg.Path)
	})
}

// Swap implements follower.Rebuilder: it makes the live DB serve from the
// new file. It holds the DB's lock, so calls in flight finish first and
// new ones wait; the new file is caught up to the DB's checkpoint under
// it, so no record the DB applied is missing afterwards.
func (s liveSink) Swap(ctx context.Context, r follower.Replacement, catchUp func(context.Context, uint64) error) error {
	db, fresh := s.db, r.(freshSink).db
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.bolt == nil {
		return ErrClosed
	}
	var liveCP uint64
	err := db.guarded(func() error {
		return db.bolt.View(func(tx *bolt.Tx) error {
			liveCP = checkpoint(tx)
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := catchUp(ctx, liveCP); err != nil {
		return err
	}
	if err := fresh.sync(); err != nil {
		return err
	}
	if err := fresh.Close(); err != nil {
		return err
	}
	if err := os.Rename(fresh.cfg.Path, db.cfg.Path); err != nil {
		return fmt.Errorf("swap in %s: %w", fresh.cfg.Path, err)
	}
	if err := durable.SyncDir(filepath.Dir(db.cfg.Path)); err != nil {
		return err
	}
	// The old handle still reads the old, now unlinked, file; keep it until
	// the new one is open so a failure here leaves db serving.
	b, marked, err := openBolt(db.cfg, db.boot != "")
	if err != nil {
		return fmt.Errorf("reopen after swap: %w", err)
	}
	// The old file's mark goes with it: it was unlinked in one piece.
	old := db.bolt
	db.bolt, db.marked = b, marked
	// The cached states are of the old file, which may be behind the new.
	db.states.purge()
	if err := old.Close(); err != nil {
		db.log.Warn("close the replaced projection file", logKeyPath, db.cfg.Path, logKeyErr, err)
	}
	return nil
}

// sync flushes a NoSync file to disk.
func (db *DB) sync() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return ErrClosed
	}
	if db.wedged.Load() {
		return fmt.Errorf("sync %s: %w", db.cfg.Path, errWedged)
	}
	if err := db.bolt.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", db.cfg.Path, err)
	}
	return nil
}
