package projections

import (
	"context"
	"slices"
)

// WaitFor returns when the checkpoint reaches offset: once the record at
// offset, and every one before it, is visible to readers. It returns
// ctx's error when ctx ends first and ErrClosed when the DB closes.
func (db *DB) WaitFor(ctx context.Context, offset uint64) error {
	// Reached already: no waiter is registered, which would end a busy
	// projector's linger for nothing.
	if cp, err := db.Checkpoint(); err == nil && cp >= offset {
		return nil
	}
	for {
		// Registered before the checkpoint is read, so that a commit
		// between the two still wakes it.
		w := db.await(offset)
		cp, err := db.Checkpoint()
		if err == nil && cp >= offset {
			db.forget(w)
			return nil
		}
		if err != nil {
			db.forget(w)
			return err
		}
		select {
		case <-ctx.Done():
			db.forget(w)
			return ctx.Err()
		case <-w.woken:
		}
	}
}

// waiter is a WaitFor call waiting for the checkpoint to reach offset.
type waiter struct {
	offset uint64
	woken  chan struct{}
}

// await registers a waiter for offset.
func (db *DB) await(offset uint64) *waiter {
	w := &waiter{offset: offset, woken: make(chan struct{})}
	db.waitersMu.Lock()
	defer db.waitersMu.Unlock()
	db.waiters = append(db.waiters, w)
	select {
	case db.arrived <- struct{}{}:
	default:
	}
	return w
}

// awaited reports whether a WaitFor call is waiting, after clearing the
// token of any that came before: one that comes later leaves a new one.
func (db *DB) awaited() bool {
	select {
	case <-db.arrived:
	default:
	}
	db.waitersMu.Lock()
	defer db.waitersMu.Unlock()
	return len(db.waiters) > 0
}

// forget removes a waiter that stops waiting before it is woken.
func (db *DB) forget(w *waiter) {
	db.waitersMu.Lock()
	defer db.waitersMu.Unlock()
	if i := slices.Index(db.waiters, w); i >= 0 {
		db.waiters = slices.Delete(db.waiters, i, i+1)
	}
}

// notify wakes every waiter, each to read the checkpoint from the file:
// for a change other than a commit moving it forward (a rebuild's swap,
// Close).
func (db *DB) notify() { db.wake(func(*waiter) bool { return true }) }

// notifyAt wakes the waiters whose offset a commit that moved the
// checkpoint to cp reached.
func (db *DB) notifyAt(cp uint64) { db.wake(func(w *waiter) bool { return w.offset <= cp }) }

func (db *DB) wake(reached func(*waiter) bool) {
	db.waitersMu.Lock()
	defer db.waitersMu.Unlock()
	db.waiters = slices.DeleteFunc(db.waiters, func(w *waiter) bool {
		if reached(w) {
			close(w.woken)
			return true
		}
		return false
	})
}
