package eventstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

// batchRecords returns a header and n messages numbered from sequence 1,
// as an export holds them.
func batchRecords(n int) []eventstore.Record {
	records := []eventstore.Record{storetest.Header("a")}
	for i := range n {
		records = append(records, storetest.Message(fmt.Sprint("m-", i), "x"))
	}
	for i, r := range records {
		r.RecordBase().Sequence = uint64(i + 1)
		r.RecordBase().OccurredAt = time.Unix(int64(1000+i), 0).UTC()
	}
	return records
}

func TestAppendBatch(t *testing.T) {
	_, s, ctx := startStore(t)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "batch")
	records := batchRecords(600) // more than one flush of the connection

	if err := s.AppendBatch(ctx, ref, records[:10]); err != nil {
		t.Fatal(err)
	}
	// The rest continues the journal; the records keep their times.
	if err := s.AppendBatch(ctx, ref, records[10:]); err != nil {
		t.Fatal(err)
	}
	got := storetest.Collect(t, s.ReadJournal(ctx, ref, 1))
	if len(got) != len(records) {
		t.Fatalf("journal holds %d records, want %d", len(got), len(records))
	}
	for i, e := range got {
		if w, g := records[i].RecordBase(), e.Record.RecordBase(); g.RecordID != w.RecordID || !g.OccurredAt.Equal(w.OccurredAt) {
			t.Fatalf("record %d: id %s at %s, want %s at %s", i+1, g.RecordID, g.OccurredAt, w.RecordID, w.OccurredAt)
		}
	}

	// Refused batches write nothing.
	other := storetest.Ref(eventstore.OwnerTask, "t", "batch-refused")
	more := batchRecords(3)
	for _, tc := range []struct {
		name    string
		ref     eventstore.Reference
		records []eventstore.Record
		want    string
	}{
		{"no header first", other, more[1:], "a journal starts with its header"},
		{"a gap", other, []eventstore.Record{more[0], more[2]}, "has sequence 3, want 2"},
		{"behind the journal", ref, more[1:], "has sequence 2, want 602"},
	} {
		err := s.AppendBatch(ctx, tc.ref, tc.records)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := s.Head(ctx, other); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Errorf("a refused batch created the journal: %v", err)
	}
	if head, err := s.Head(ctx, ref); err != nil || head.LastSequence != 601 {
		t.Errorf("a refused batch changed the journal: %+v, %v", head, err)
	}
	// The store's own appends continue after a batch.
	if e, err := s.Append(ctx, ref, storetest.Message("after", "x")); err != nil || e.Record.RecordBase().Sequence != 602 {
		t.Errorf("append after the batches: %+v, %v; want sequence 602", e, err)
	}
}
