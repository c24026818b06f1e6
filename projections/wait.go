package projections

import "context"

// WaitFor returns when the checkpoint reaches offset: once the record at
// offset, and every one before it, is visible to readers. It returns
// ctx's error when ctx ends first and ErrClosed when the DB closes.
func (db *DB) WaitFor(ctx context.Context, offset uint64) error {
	for {
		changed := db.changed()
		cp, err := db.Checkpoint()
		if err != nil {
			return err
		}
		if cp >= offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// changed returns a channel closed at the next move of the checkpoint.
func (db *DB) changed() <-chan struct{} {
	db.appliedMu.Lock()
	defer db.appliedMu.Unlock()
	return db.applied
}

// notify wakes every WaitFor.
func (db *DB) notify() {
	db.appliedMu.Lock()
	defer db.appliedMu.Unlock()
	close(db.applied)
	db.applied = make(chan struct{})
}
