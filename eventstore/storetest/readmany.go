package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

func journalsReader(t *testing.T, s eventstore.Store) eventstore.JournalsReader {
	t.Helper()
	jr, ok := s.(eventstore.JournalsReader)
	if !ok {
		t.Fatalf("%T does not implement eventstore.JournalsReader", s)
	}
	return jr
}

// readAll collects a ReadJournals as "execution/sequence" (or "error") with
// offsets, and the errors.
func readAll(jr eventstore.JournalsReader, bounds ...eventstore.JournalBound) (got []string, offsets []uint64, errs []error) {
	for e, err := range jr.ReadJournals(context.Background(), bounds) {
		if err != nil {
			errs = append(errs, err)
			got = append(got, "error")
		} else {
			b := e.Record.RecordBase()
			got = append(got, fmt.Sprintf("%s/%d", b.AgentExecutionID, b.Sequence))
		}
		offsets = append(offsets, e.Offset)
	}
	return got, offsets, errs
}

func testReadJournals(t *testing.T, f Factory) {
	s := open(t, f)
	jr := journalsReader(t, s)
	a, b, c, noise := Ref(eventstore.OwnerTask, "t", "rj-a"), Ref(eventstore.OwnerMission, "m", "rj-b"),
		Ref(eventstore.OwnerSystem, "s", "rj-c"), Ref(eventstore.OwnerTask, "t", "rj-noise")
	for _, r := range []eventstore.Reference{a, noise, b, c} {
		ensure(t, s, r)
	}
	for i := range 6 {
		for _, r := range []eventstore.Reference{a, noise, b, c} {
			mustAppend(t, s, r, Message(fmt.Sprintf("m-%d", i), "x"))
		}
	}
	// What each bound should give, in log order, with the log's offsets.
	keep := map[string]uint64{"rj-a": 4, "rj-b": 7, "rj-c": 7}
	var want []string
	var wantOffsets []uint64
	for _, e := range Collect(t, s.ReadLog(context.Background(), 1)) {
		rb := e.Record.RecordBase()
		if rb.Sequence <= keep[rb.AgentExecutionID] {
			want = append(want, fmt.Sprintf("%s/%d", rb.AgentExecutionID, rb.Sequence))
			wantOffsets = append(wantOffsets, e.Offset)
		}
	}
	// a to sequence 4, b to its head, c past its end, a again to a nearer
	// bound (read once, to the farther).
	got, offsets, errs := readAll(jr,
		eventstore.JournalBound{Ref: c, To: 100}, eventstore.JournalBound{Ref: a, To: 4},
		eventstore.JournalBound{Ref: b}, eventstore.JournalBound{Ref: a, To: 2})
	if len(errs) > 0 {
		t.Fatalf("ReadJournals: %v", errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ReadJournals order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantOffsets, offsets); diff != "" {
		t.Fatalf("ReadJournals offsets (-want +got):\n%s", diff)
	}
	// A single journal to sequence 1 is its header.
	got, _, errs = readAll(jr, eventstore.JournalBound{Ref: b, To: 1})
	if len(errs) > 0 || !cmp.Equal(got, []string{"rj-b/1"}) {
		t.Fatalf("ReadJournals of b to 1: %q %v, want [rj-b/1]", got, errs)
	}
	// Nothing to read is no record and no error.
	if got, _, errs = readAll(jr); len(got) != 0 {
		t.Fatalf("ReadJournals of no journal: %q %v, want nothing", got, errs)
	}
	// A journal the store does not hold is an error; the others are read.
	got, _, errs = readAll(jr, eventstore.JournalBound{Ref: a, To: 2}, eventstore.JournalBound{Ref: Ref(eventstore.OwnerTask, "t", "rj-missing"), To: 3})
	if len(errs) != 1 || !errors.Is(errs[0], eventstore.ErrJournalNotFound) {
		t.Fatalf("ReadJournals with a missing journal: errors %v, want one ErrJournalNotFound", errs)
	}
	for _, g := range got {
		if g != "error" && g != "rj-a/1" && g != "rj-a/2" {
			t.Fatalf("ReadJournals with a missing journal yielded %s", g)
		}
	}
	// Stopping early stops the read.
	n := 0
	for range jr.ReadJournals(context.Background(), []eventstore.JournalBound{{Ref: a}, {Ref: b}}) {
		if n++; n == 3 {
			break
		}
	}
	h, err := jr.JournalHeader(context.Background(), c)
	if err != nil || h.AgentExecutionID != "rj-c" || h.Sequence != 1 {
		t.Fatalf("JournalHeader(c) = %+v, %v; want c's header", h, err)
	}
	if _, err := jr.JournalHeader(context.Background(), Ref(eventstore.OwnerTask, "t", "rj-missing")); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("JournalHeader of a missing journal: %v, want ErrJournalNotFound", err)
	}
}

// A record that does not decode holds its place in a read of several
// journals, named by its offset, and the read goes on, as in ReadJournal.
func testReadJournalsUndecodable(t *testing.T, f Factory) {
	if f.Undecodable == nil {
		t.Fatal("the factory has no Undecodable: every real store must set it")
	}
	s := open(t, f)
	a, b := Ref(eventstore.OwnerTask, "t", "rjb-a"), Ref(eventstore.OwnerTask, "t", "rjb-b")
	ensure(t, s, a)
	ensure(t, s, b)
	mustAppend(t, s, a, Message("a-1", "x"))
	mustAppend(t, s, b, Message("b-1", "x"))
	s = f.Undecodable(t, s, a) // a/3
	t.Cleanup(func() { s.Close() })
	mustAppend(t, s, b, Message("b-2", "x"))
	var wantOffset uint64
	for e, err := range s.ReadJournal(context.Background(), a, 3) {
		if err == nil {
			t.Fatalf("ReadJournal of a from 3: %s, want an error", e.Record.Kind())
		}
		wantOffset = e.Offset
	}
	got, offsets, errs := readAll(journalsReader(t, s), eventstore.JournalBound{Ref: a}, eventstore.JournalBound{Ref: b})
	if want := []string{"rjb-a/1", "rjb-b/1", "rjb-a/2", "rjb-b/2", "error", "rjb-b/3"}; !cmp.Equal(got, want) {
		t.Fatalf("ReadJournals: %q, want %q (errors %v)", got, want, errs)
	}
	var oe *eventstore.OffsetError
	if !errors.As(errs[0], &oe) || oe.Offset != wantOffset || offsets[4] != wantOffset || wantOffset == 0 {
		t.Fatalf("undecodable record: %v at offset %d, want an OffsetError at %d", errs[0], offsets[4], wantOffset)
	}
}

// testReadRecords: ReadRecords gives what ReadJournal gives, records only,
// to a bound or to the head, with other journals' records interleaved in
// the log, across more than one page; an unknown journal is
// ErrJournalNotFound.
func testReadRecords(t *testing.T, f Factory) {
	s := open(t, f)
	rr, ok := s.(eventstore.RecordsReader)
	if !ok {
		t.Fatalf("%T does not implement eventstore.RecordsReader", s)
	}
	ctx := context.Background()
	a, noise := Ref(eventstore.OwnerTask, "t", "rr-a"), Ref(eventstore.OwnerTask, "t", "rr-noise")
	ensure(t, s, a)
	ensure(t, s, noise)
	for i := range 40 {
		mustAppend(t, s, a, Message(fmt.Sprintf("m-%d", i), "x"))
		mustAppend(t, s, noise, Message(fmt.Sprintf("m-%d", i), "y"))
	}
	var all []eventstore.Record
	for _, e := range Collect(t, s.ReadJournal(ctx, a, 1)) {
		all = append(all, e.Record)
	}
	for _, to := range []uint64{0, 1, 7, 41, 1000} {
		got, err := rr.ReadRecords(ctx, eventstore.JournalBound{Ref: a, To: to})
		if err != nil {
			t.Fatalf("ReadRecords to %d: %v", to, err)
		}
		want := all
		if to > 0 && to < uint64(len(all)) {
			want = all[:to]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("ReadRecords to %d (-ReadJournal +ReadRecords):\n%s", to, diff)
		}
	}
	if _, err := rr.ReadRecords(ctx, eventstore.JournalBound{Ref: Ref(eventstore.OwnerTask, "t", "rr-none")}); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("ReadRecords of no journal: %v, want ErrJournalNotFound", err)
	}
}
