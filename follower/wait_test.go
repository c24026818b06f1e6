package follower

import "testing"

// A commit wakes only the waiters whose offset it reached; a change of
// another kind wakes every one; a waiter that gives up is forgotten.
func TestCommitWakesOnlyTheWaitersItReached(t *testing.T) {
	f := &Follower{}
	w5, w10, gone := f.await(5), f.await(10), f.await(3)
	f.forget(gone)
	f.wakeAt(7)
	if !closed(w5.woken) || closed(w10.woken) {
		t.Errorf("after a commit to 7: waiter for 5 woken %t (want true), for 10 woken %t (want false)", closed(w5.woken), closed(w10.woken))
	}
	if len(f.waiters) != 1 || f.waiters[0] != w10 {
		t.Errorf("waiting after a commit to 7: %d waiters, want only the one for 10", len(f.waiters))
	}
	if closed(gone.woken) {
		t.Error("a forgotten waiter was woken")
	}
	w20 := f.await(20)
	f.WakeAll()
	if !closed(w10.woken) || !closed(w20.woken) || len(f.waiters) != 0 {
		t.Errorf("after a change of another kind: waiters for 10 and 20 woken %t and %t, %d left; want both woken, none left",
			closed(w10.woken), closed(w20.woken), len(f.waiters))
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
