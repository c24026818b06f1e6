package projections

import "context"

// WaitFor returns when the checkpoint reaches offset: once the record at
// offset, and every one before it, is visible to readers. It returns
// ctx's error when ctx ends first and ErrClosed when the DB closes.
func (db *DB) WaitFor(ctx context.Context, offset uint64) error {
	return db.f.WaitFor(ctx, offset)
}
