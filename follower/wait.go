package follower

import (
	"context"
	"slices"
)

// WaitFor returns when the checkpoint reaches offset: once the record at
// offset, and every one before it, is visible to readers of the sink. It
// returns ctx's error when ctx ends first, and the sink's when reading the
// checkpoint fails (a closed sink).
func (f *Follower) WaitFor(ctx context.Context, offset uint64) error {
	// Reached already: no waiter is registered, which would end a busy
	// follower's linger for nothing.
	if cp, err := f.sink.Checkpoint(); err == nil && cp >= offset {
		return nil
	}
	for {
		// Registered before the checkpoint is read, so that a commit
		// between the two still wakes it.
		w := f.await(offset)
		cp, err := f.sink.Checkpoint()
		if err == nil && cp >= offset {
			f.forget(w)
			return nil
		}
		if err != nil {
			f.forget(w)
			return err
		}
		select {
		case <-ctx.Done():
			f.forget(w)
			return ctx.Err()
		case <-w.woken:
		}
	}
}

// WakeAll wakes every WaitFor call to read the checkpoint from the sink
// again: a sink calls it for a change other than a commit through the
// follower, such as its Close.
func (f *Follower) WakeAll() { f.wake(func(*waiter) bool { return true }) }

// waiter is a WaitFor call waiting for the checkpoint to reach offset.
type waiter struct {
	offset uint64
	woken  chan struct{}
}

// await registers a waiter for offset.
func (f *Follower) await(offset uint64) *waiter {
	w := &waiter{offset: offset, woken: make(chan struct{})}
	f.waitersMu.Lock()
	defer f.waitersMu.Unlock()
	f.waiters = append(f.waiters, w)
	select {
	case f.arrived <- struct{}{}:
	default:
	}
	return w
}

// awaited reports whether a WaitFor call is waiting, after clearing the
// token of any that came before: one that comes later leaves a new one.
func (f *Follower) awaited() bool {
	select {
	case <-f.arrived:
	default:
	}
	f.waitersMu.Lock()
	defer f.waitersMu.Unlock()
	return len(f.waiters) > 0
}

// forget removes a waiter that stops waiting before it is woken.
func (f *Follower) forget(w *waiter) {
	f.waitersMu.Lock()
	defer f.waitersMu.Unlock()
	if i := slices.Index(f.waiters, w); i >= 0 {
		f.waiters = slices.Delete(f.waiters, i, i+1)
	}
}

// wakeAt wakes the waiters whose offset a commit that moved the
// checkpoint to cp reached.
func (f *Follower) wakeAt(cp uint64) { f.wake(func(w *waiter) bool { return w.offset <= cp }) }

func (f *Follower) wake(reached func(*waiter) bool) {
	f.waitersMu.Lock()
	defer f.waitersMu.Unlock()
	f.waiters = slices.DeleteFunc(f.waiters, func(w *waiter) bool {
		if reached(w) {
			close(w.woken)
			return true
		}
		return false
	})
}
