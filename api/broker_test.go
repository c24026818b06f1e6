package api

import (
	"testing"

	"github.com/agentjournal/agentjournal/api/wire"
)

func testEvents(offset uint64, execution string) func() []event {
	return func() []event {
		return []event{{offset: offset, name: wire.EventUpdated, execution: execution}, {offset: offset, name: wire.EventDataChanged, execution: execution}}
	}
}

func TestBrokerOverflow(t *testing.T) {
	b := newBroker(4)
	slow, fast, other := b.newSubscriber(""), b.newSubscriber(""), b.newSubscriber("ae-2")
	for _, sub := range []*subscriber{slow, fast, other} {
		if _, ok := b.attach(sub, 0); !ok {
			t.Fatal("attach at position 0 refused")
		}
	}
	for off := uint64(1); off <= 10; off++ {
		b.publish(off, testEvents(off, "ae-1"))
		// fast keeps up, slow never reads.
		for len(fast.ch) > 0 {
			<-fast.ch
		}
	}
	select {
	case <-slow.overflow:
	default:
		t.Fatal("the subscriber that never reads did not overflow")
	}
	select {
	case <-fast.overflow:
		t.Fatal("the subscriber that keeps up overflowed")
	case <-other.overflow:
		t.Fatal("a subscriber of another execution overflowed")
	default:
	}
	if got := b.count(); got != 2 {
		t.Fatalf("%d subscribers attached, want 2", got)
	}
	if got := len(slow.ch); got != 4 {
		t.Fatalf("the dropped subscriber holds %d events, want its full queue of 4", got)
	}
}

func TestBrokerAttach(t *testing.T) {
	b := newBroker(16)
	b.reset(5)
	sub := b.newSubscriber("")
	if pos, ok := b.attach(sub, 3); ok || pos != 5 {
		t.Fatalf("attach after 3 at position 5: %d, %v; want 5, false (catch up first)", pos, ok)
	}
	if _, ok := b.attach(sub, 5); !ok {
		t.Fatal("attach at the position refused")
	}
	b.publish(5, testEvents(5, "ae-1")) // already had: skipped
	b.publish(6, testEvents(6, "ae-1"))
	b.publish(6, testEvents(6, "ae-1")) // twice: once
	if got := len(sub.ch); got != 2 {
		t.Fatalf("%d events queued, want the 2 of offset 6", got)
	}
	// A subscriber ahead of the position (a client that saw more before a
	// restart) gets nothing up to what it has.
	ahead := b.newSubscriber("")
	if _, ok := b.attach(ahead, 8); !ok {
		t.Fatal("attach ahead of the position refused")
	}
	b.publish(7, testEvents(7, "ae-1"))
	b.publish(9, testEvents(9, "ae-1"))
	if got := len(ahead.ch); got != 2 || (<-ahead.ch).offset != 9 {
		t.Fatalf("ahead subscriber: %d events, want only offset 9's", got)
	}
	// Starting the publisher behind an attached subscriber ends its stream.
	b.reset(12)
	select {
	case <-sub.overflow:
	default:
		t.Fatal("a subscriber behind the new position was kept")
	}
}

// With no stream open, a record's events are not made, and the position
// moves on all the same.
func TestBrokerMakesNoEventsForNobody(t *testing.T) {
	b := newBroker(4)
	made := 0
	b.publish(3, func() []event { made++; return testEvents(3, "ae-1")() })
	if made != 0 || b.position() != 3 {
		t.Fatalf("with no stream: events made %d times, position %d; want 0 and 3", made, b.position())
	}
	sub := b.newSubscriber("")
	if _, ok := b.attach(sub, 3); !ok {
		t.Fatal("attach at the position refused")
	}
	b.publish(4, func() []event { made++; return testEvents(4, "ae-1")() })
	if made != 1 || len(sub.ch) != 2 {
		t.Fatalf("with a stream: events made %d times, %d queued; want 1 and 2", made, len(sub.ch))
	}
}
