package eventstore_test

import (
	"context"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestAppendBatchWithoutDeadline: a batch long enough to be flushed on its
// way is written under a context without a deadline, as the CLI's and a
// request's are.
func TestAppendBatchWithoutDeadline(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "no-deadline")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.AppendBatch(ctx, ref, batchRecords(600)); err != nil {
		t.Fatalf("append a batch of 601 records without a deadline: %v", err)
	}
	if head, err := s.Head(ctx, ref); err != nil || head.LastSequence != 601 {
		t.Fatalf("head after the batch: %+v, %v; want sequence 601", head, err)
	}
}
