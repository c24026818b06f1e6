package projections

import "context"

// WaitFor returns when the checkpoint reaches offset: once the record at
// offset, and every one before it, is visible to readers. It returns
// ctx's error when ctx ends first and ErrClosed when the DB closes.
func (db *DB) WaitFor(ctx context.Context, offset uint64) error {
	for {
		changed, at, known := db.changed()
		if !known || at >= offset {
			cp, err := db.Checkpoint()
			if err != nil {
				return err
			}
			if cp >= offset {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// changed returns a channel closed at the next move of the checkpoint,
// and the checkpoint the last commit moved it to, if known.
func (db *DB) changed() (<-chan struct{}, uint64, bool) {
	db.appliedMu.Lock()
	defer db.appliedMu.Unlock()
	return db.applied, db.appliedAt, db.appliedKnown
}

// notify wakes every WaitFor, which reads the checkpoint from the file:
// for a change other than a commit moving it forward (a rebuild's swap,
// Close).
func (db *DB) notify() {
	db.appliedMu.Lock()
	defer db.appliedMu.Unlock()
	db.appliedKnown = false
	close(db.applied)
	db.applied = make(chan struct{})
}

// notifyAt wakes every WaitFor after a commit that moved the checkpoint to
// cp; those waiting for a later offset need not read the file.
func (db *DB) notifyAt(cp uint64) {
	db.appliedMu.Lock()
	defer db.appliedMu.Unlock()
	db.appliedAt, db.appliedKnown = cp, true
	close(db.applied)
	db.applied = make(chan struct{})
}
