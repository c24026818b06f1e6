package eventstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

// FollowJournal yields one journal's records only, from the sequence
// asked for, each batch ending where the journal ended when it was read,
// and goes on with the records appended after it began.
func TestFollowJournal(t *testing.T) {
	_, s, ctx := startStore(t)
	for _, tc := range []struct {
		name  string
		from  uint64
		first uint64 // the first sequence yielded
		whole int    // how many records the first batch holds
	}{
		{"header", 1, 1, 6},
		{"middle", 4, 4, 3},
		{"past-the-end", 9, 9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ref := storetest.Ref(eventstore.OwnerTask, "t", tc.name)
			other := storetest.Ref(eventstore.OwnerTask, "t", "other-"+tc.name)
			for _, r := range []eventstore.Reference{ref, other} {
				if _, err := s.EnsureJournal(ctx, r, storetest.Header("a")); err != nil {
					t.Fatal(err)
				}
			}
			appendTo := func(r eventstore.Reference, from, to int) {
				for i := from; i < to; i++ {
					if _, err := s.Append(ctx, r, storetest.Message(fmt.Sprint(r.AgentExecutionID, "-", i), "x")); err != nil {
						t.Error(err)
						return
					}
				}
			}
			// Sequences 2 to 6 of the watched journal, the other's between them.
			appendTo(ref, 0, 3)
			appendTo(other, 0, 3)
			appendTo(ref, 3, 5)

			later := make(chan struct{})
			appendLater := func() {
				go func() { defer close(later); appendTo(other, 10, 12); appendTo(ref, 10, 14) }()
			}
			if tc.whole == 0 {
				// Nothing to read first: the records come while it waits.
				appendLater()
			}
			var seqs []uint64
			batches := 0
			for batch, err := range s.FollowJournal(ctx, ref, tc.from) {
				if err != nil {
					t.Fatal(err)
				}
				batches++
				if batches == 1 && tc.whole > 0 && len(batch) != tc.whole {
					t.Errorf("first batch holds %d records, want the %d the journal held", len(batch), tc.whole)
				}
				for _, e := range batch {
					if id := e.Record.RecordBase().AgentExecutionID; id != ref.AgentExecutionID {
						t.Fatalf("record of %s yielded, want only %s's", id, ref.AgentExecutionID)
					}
					seqs = append(seqs, e.Record.RecordBase().Sequence)
				}
				if batches == 1 && tc.whole > 0 {
					// Caught up: what is appended from now on comes too.
					appendLater()
				}
				if len(seqs) > 0 && seqs[len(seqs)-1] >= 10 {
					break
				}
			}
			<-later
			for i, seq := range seqs {
				if want := tc.first + uint64(i); seq != want {
					t.Fatalf("yielded sequences %v, want consecutive from %d", seqs, tc.first)
				}
			}
		})
	}
}

// FollowJournal waits for a journal that does not exist yet, and ends when
// its context does.
func TestFollowJournalWaitsForTheJournal(t *testing.T) {
	_, s, ctx := startStore(t)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "later")
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
			t.Error(err)
		}
	}()
	for batch, err := range s.FollowJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := batch[0].Record.(*eventstore.Header); !ok || len(batch) != 1 {
			t.Fatalf("first batch %v, want the header alone", batch)
		}
		break
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	for batch, err := range s.FollowJournal(short, ref, 2) {
		if err == nil {
			t.Fatalf("batch %v of a journal nothing was appended to", batch)
		}
	}
	if short.Err() == nil {
		t.Fatal("FollowJournal ended before its context did")
	}
}
