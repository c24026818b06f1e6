package runtime

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

// readCounter is a Store that counts the records its ReadJournal yields.
type readCounter struct {
	Store
	mu   sync.Mutex
	read int
}

func (c *readCounter) ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error] {
	return func(yield func(eventstore.Entry, error) bool) {
		for e, err := range c.Store.ReadJournal(ctx, ref, fromSeq) {
			c.mu.Lock()
			c.read++
			c.mu.Unlock()
			if !yield(e, err) {
				return
			}
		}
	}
}

// A running execution's turn checkpoints read only the records since the
// last one, and capture what a fold of the whole journal captures; one
// asked for again is handed back, not appended twice.
func TestTurnCheckpointsFoldOnlyWhatIsNew(t *testing.T) {
	ctx := t.Context()
	s := internalStore(t)
	counter := &readCounter{Store: s}
	rt := internalRuntime(t, Config{Store: counter})
	ref, err := s.EnsureJournal(ctx, storetest.Ref(eventstore.OwnerTask, "t", "cp-fold"), storetest.Header("a"))
	if err != nil {
		t.Fatal(err)
	}
	var fold checkpointFold
	const turns, perTurn = 5, 20
	for turn := 1; turn <= turns; turn++ {
		for i := range perTurn {
			if _, err := s.Append(ctx, ref, storetest.Message(fmt.Sprintf("m-%d-%d", turn, i), "text")); err != nil {
				t.Fatal(err)
			}
		}
		got, err := rt.checkpointFrom(ctx, &fold, ref, fmt.Sprintf("turn-%d", turn), eventstore.CheckpointTurnEnd, eventstore.SourceDaemon, "", "")
		if err != nil {
			t.Fatal(err)
		}
		// What a fold of the whole journal before it captures.
		whole := &contract.Run{}
		for _, e := range storetest.Collect(t, s.ReadJournal(ctx, ref, 1)) {
			if e.Record.RecordBase().Sequence < got.Sequence {
				whole.Apply(e.Record)
			}
		}
		want := whole.Capture(got.CheckpointID, got.Trigger, got.Source, "", "")
		if diff := cmp.Diff(want.StateSummary, got.StateSummary); diff != "" || want.AtSequence != got.AtSequence {
			t.Errorf("turn %d: capture at %d, want %d; summary (-whole +incremental):\n%s", turn, got.AtSequence, want.AtSequence, diff)
		}
	}
	again, err := rt.checkpointFrom(ctx, &fold, ref, "turn-2", eventstore.CheckpointTurnEnd, eventstore.SourceDaemon, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if again.AtSequence != 1+2*perTurn+1 {
		t.Errorf("turn-2 asked again captured at %d, want the first capture's %d", again.AtSequence, 1+2*perTurn+1)
	}
	// Header, messages and checkpoints, each read once (the last call
	// reads the last checkpoint): not the square of the journal.
	total := 1 + turns*perTurn + turns
	if counter.read != total {
		t.Errorf("records read by %d checkpoints = %d, want %d, each once", turns+1, counter.read, total)
	}
}
