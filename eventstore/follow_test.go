package eventstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

func TestFollowSeesLaterAppends(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := openJetStream(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := storetest.Ref(eventstore.OwnerTask, "t", "follow")
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := s.Append(ctx, ref, storetest.Message(fmt.Sprint("m-", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		time.Sleep(200 * time.Millisecond)
		for i := 10; i < 30; i++ {
			if _, err := s.Append(ctx, ref, storetest.Message(fmt.Sprint("m-", i), "x")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var offsets []uint64
	for batch, err := range s.Follow(ctx, 5, 4) {
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 || len(batch) > 4 {
			t.Fatalf("batch of %d entries, want 1 to 4", len(batch))
		}
		for _, e := range batch {
			offsets = append(offsets, e.Offset)
		}
		if len(offsets) >= 27 {
			break
		}
	}
	<-appended
	for i, off := range offsets {
		if off != uint64(5+i) {
			t.Fatalf("entry %d at offset %d, want %d", i, off, 5+i)
		}
	}
}
