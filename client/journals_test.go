package client_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/journalfile"
)

// journal builds the records of execution id's journal, its header and
// n-1 activity updates, as a file store writes them.
func journal(t *testing.T, id string, n int) []eventstore.Record {
	t.Helper()
	return fixtures.ActivityJournal(t, "t-client", id, n)
}

func file(t *testing.T, records []eventstore.Record) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	if err := journalfile.Write(&b, records); err != nil {
		t.Fatal(err)
	}
	return &b
}

// TestJournals: a journal imported through the client is listed, looked
// up and read back whole across pages, in the journal and in the log, as
// the store holds it; a second import writes nothing, a bad file and a
// different journal are refused with their sentinels.
func TestJournals(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)
	// More records than one page holds.
	records := journal(t, "ae-client", 1100)
	res, err := c.ImportJournal(ctx, file(t, records))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Written != 1100 || res.Records != 1100 || res.Journal.AgentExecutionID != "ae-client" {
		t.Fatalf("import: %+v, want 1100 records written", res)
	}
	if res, err := c.ImportJournal(ctx, file(t, records)); err != nil || res.Written != 0 {
		t.Fatalf("second import: %+v, %v; want nothing written", res, err)
	}

	want, err := s.Store.Journals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Journals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Journals differs from the store (-store +client):\n%s", diff)
	}
	ref, err := c.Journal(ctx, "ae-client")
	if err != nil || ref.RecordCount != 1100 {
		t.Fatalf("Journal: %+v, %v; want 1100 records", ref, err)
	}
	if _, err := c.Journal(ctx, "ae-nosuch"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Journal of an unknown id: %v, want ErrNotFound", err)
	}

	var stored []eventstore.Entry
	for e, err := range s.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, e)
	}
	var read []eventstore.Entry
	for e, err := range c.Entries(ctx, "ae-client", 1) {
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		read = append(read, eventstore.Entry{Offset: e.Offset, Record: e.Record})
	}
	if diff := cmp.Diff(stored, read); diff != "" {
		t.Errorf("Entries differs from the store (-store +client):\n%s", diff)
	}
	n := 0
	for e, err := range c.Entries(ctx, "ae-client", 1050) {
		if err != nil {
			t.Fatal(err)
		}
		if want := uint64(1050 + n); e.Record.RecordBase().Sequence != want {
			t.Fatalf("Entries from 1050: sequence %d, want %d", e.Record.RecordBase().Sequence, want)
		}
		n++
	}
	if n != 51 {
		t.Errorf("Entries from 1050 read %d records, want 51", n)
	}
	for _, err := range c.Entries(ctx, "ae-nosuch", 1) {
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("Entries of an unknown id: %v, want ErrNotFound", err)
		}
	}
	n = 0
	for e, err := range c.LogEntries(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Offset != stored[n].Offset || e.Record.RecordBase().RecordID != stored[n].Record.RecordBase().RecordID {
			t.Fatalf("LogEntries entry %d: offset %d %s, want %d %s", n, e.Offset, e.Record.RecordBase().RecordID,
				stored[n].Offset, stored[n].Record.RecordBase().RecordID)
		}
		n++
	}
	if n != 1100 {
		t.Errorf("LogEntries read %d entries, want 1100", n)
	}

	bad := file(t, records[:5])
	broken := strings.Replace(bad.String(), `"sequence":3`, `"sequence":9`, 1)
	if _, err := c.ImportJournal(ctx, strings.NewReader(broken)); !errors.Is(err, client.ErrInvalidField) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("import of a bad file: %v, want ErrInvalidField naming line 3", err)
	}
	other := journal(t, "ae-client", 1100)
	other[1099].RecordBase().RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindActivity, "another")
	if _, err := c.ImportJournal(ctx, file(t, other)); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "differs at sequence 1100") {
		t.Errorf("import of a different journal: %v, want ErrConflict naming sequence 1100", err)
	}
}

// TestFollowLog: FollowLog yields the log there is, then each journal as it
// is imported, passes over a record that does not decode, and ends
// without an error when its context does.
func TestFollowLog(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)
	if _, err := c.ImportJournal(ctx, file(t, journal(t, "ae-before", 3))); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type batch struct {
		entries []client.LogEntry
		err     error
	}
	got := make(chan batch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b, err := range c.FollowLog(fctx, 1, 20*time.Millisecond) {
			select {
			case got <- batch{b, err}:
			case <-fctx.Done():
			}
		}
	}()
	next := func() batch {
		t.Helper()
		select {
		case b := <-got:
			return b
		case <-ctx.Done():
			t.Fatal("FollowLog yielded nothing in time")
		}
		return batch{}
	}
	offsets := func(want int) []uint64 {
		t.Helper()
		var out []uint64
		for len(out) < want {
			b := next()
			if b.err != nil {
				t.Fatalf("FollowLog: %v", b.err)
			}
			for _, e := range b.entries {
				out = append(out, e.Offset)
			}
		}
		return out
	}
	if diff := cmp.Diff([]uint64{1, 2, 3}, offsets(3)); diff != "" {
		t.Errorf("the log there was (-want +got):\n%s", diff)
	}
	if _, err := c.ImportJournal(ctx, file(t, journal(t, "ae-after", 2))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{4, 5}, offsets(2)); diff != "" {
		t.Errorf("the journal imported while following (-want +got):\n%s", diff)
	}
	ack, err := s.Bus.JetStream().Publish(ctx, "journal.foreign.writer", []byte(`not json`))
	if err != nil {
		t.Fatal(err)
	}
	var oe *eventstore.OffsetError
	if b := next(); !errors.As(b.err, &oe) || oe.Offset != ack.Sequence {
		t.Errorf("after a record that does not decode: %+v, want an *eventstore.OffsetError at offset %d", b, ack.Sequence)
	}
	if _, err := c.ImportJournal(ctx, file(t, journal(t, "ae-last", 1))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{ack.Sequence + 1}, offsets(1)); diff != "" {
		t.Errorf("following after the record that does not decode (-want +got):\n%s", diff)
	}
	cancel()
	select {
	case b := <-got:
		t.Errorf("FollowLog yielded %+v after its context ended", b)
	case <-done:
	case <-ctx.Done():
		t.Fatal("FollowLog did not end with its context")
	}
}
