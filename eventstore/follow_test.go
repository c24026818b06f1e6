package eventstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

func TestFollowSeesLaterAppends(t *testing.T) {
	_, s, ctx := startStore(t)
	ref := messageJournal(t, ctx, s, "follow", 10)
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

// A record that does not decode is reported with its offset after the
// records before it, and following goes on with the ones after it.
func TestFollowReportsUndecodableRecordInOrder(t *testing.T) {
	b, s, ctx := startStore(t)
	ref := messageJournal(t, ctx, s, "follow-bad", 3)
	// Written past the store, as a foreign writer could.
	if _, err := b.JetStream().Publish(ctx, "journal.bad.subject", []byte(`{"type":"message.accepted","bogus":1}`)); err != nil {
		t.Fatal(err)
	}
	appendMessages(t, ctx, s, ref, 3, 6)
	var got []string
	var bad error
	for batch, err := range s.Follow(ctx, 1, 100) {
		if err != nil {
			got = append(got, "error")
			bad = err
			continue
		}
		for _, e := range batch {
			got = append(got, fmt.Sprint(e.Offset))
		}
		if batch[len(batch)-1].Offset == 8 {
			break
		}
	}
	if want := []string{"1", "2", "3", "4", "error", "6", "7", "8"}; !slices.Equal(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
	var oe *eventstore.OffsetError
	if !errors.Is(bad, eventstore.ErrInvalidRecord) || !errors.As(bad, &oe) || oe.Offset != 5 || !strings.Contains(bad.Error(), "record at offset 5") {
		t.Errorf("error %q: want an OffsetError at 5 matching ErrInvalidRecord", bad)
	}
}
