package runtime

import (
	"context"
	"fmt"
	"iter"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// JournalFollower is a store that follows one journal as it grows
// (eventstore.JetStreamStore.FollowJournal).
type JournalFollower interface {
	FollowJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[[]eventstore.Entry, error]
}

// AwaitDecisions waits until the journal of ref holds a decision for every
// observation, or ctx ends. It returns how many observations are still
// undecided.
func AwaitDecisions(ctx context.Context, s JournalFollower, ref eventstore.Reference) (int, error) {
	st := &execution.State{}
	undecided := -1 // not read yet
	var err error
	for batch, ferr := range s.FollowJournal(ctx, ref, 1) {
		if err = ferr; err != nil {
			break
		}
		for _, e := range batch {
			if _, err := st.Apply(e.Record); err != nil {
				return 0, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
			}
		}
		// A batch ends where the journal did: the count is of the whole.
		undecided = 0
		for id := range st.ProcessedObservations {
			if _, ok := st.Decisions[id]; !ok {
				undecided++
			}
		}
		if undecided == 0 {
			return 0, nil
		}
	}
	if ctx.Err() != nil {
		if undecided >= 0 {
			return undecided, nil
		}
		err = ctx.Err()
	}
	return 0, fmt.Errorf("replay %s: %w", ref.AgentExecutionID, err)
}
