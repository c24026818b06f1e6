package projections

import "testing"

// A commit wakes only the waiters whose offset it reached; a change of
// another kind wakes every one; a waiter that gives up is forgotten.
func TestCommitWakesOnlyTheWaitersItReached(t *testing.T) {
	db := &DB{}
	w5, w10, gone := db.await(5), db.await(10), db.await(3)
	db.forget(gone)
	db.notifyAt(7)
	if !closed(w5.woken) || closed(w10.woken) {
		t.Errorf("after a commit to 7: waiter for 5 woken %t (want true), for 10 woken %t (want false)", closed(w5.woken), closed(w10.woken))
	}
	if len(db.waiters) != 1 || db.waiters[0] != w10 {
		t.Errorf("waiting after a commit to 7: %d waiters, want only the one for 10", len(db.waiters))
	}
	if closed(gone.woken) {
		t.Error("a forgotten waiter was woken")
	}
	w20 := db.await(20)
	db.notify()
	if !closed(w10.woken) || !closed(w20.woken) || len(db.waiters) != 0 {
		t.Errorf("after a change of another kind: waiters for 10 and 20 woken %t and %t, %d left; want both woken, none left",
			closed(w10.woken), closed(w20.woken), len(db.waiters))
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
