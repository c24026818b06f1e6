package eventstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

// startStore starts a NATS server of the test's own and opens the journal
// store on it. The context it returns ends with the test, or after 30
// seconds, so that a read that never ends fails the test instead of
// hanging it.
func startStore(t *testing.T) (*bus.Bus, *eventstore.JetStreamStore, context.Context) {
	t.Helper()
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return b, s, ctx
}

// messageJournal starts the journal of execution name (task t's) with
// storetest's header and appends the messages m-0 … m-(n-1) to it.
func messageJournal(t *testing.T, ctx context.Context, s eventstore.Store, name string, n int) eventstore.Reference {
	t.Helper()
	ref := storetest.Ref(eventstore.OwnerTask, "t", name)
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	appendMessages(t, ctx, s, ref, 0, n)
	return ref
}

// appendMessages appends the messages m-from … m-(to-1) to ref's journal.
func appendMessages(t *testing.T, ctx context.Context, s eventstore.Store, ref eventstore.Reference, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := s.Append(ctx, ref, storetest.Message(fmt.Sprint("m-", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
}
