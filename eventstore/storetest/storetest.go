package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Factory opens stores for the suite.
type Factory struct {
	// Open returns a new, empty store; the suite closes it.
	Open func(t *testing.T) eventstore.Store
	// Reopen closes s and opens it again on the same data. Nil skips the
	// persistence cases, so every real store must set it.
	Reopen func(t *testing.T, s eventstore.Store) eventstore.Store
	// MaxRecordSize is the limit the opened store enforces.
	MaxRecordSize int
	// Undecodable writes to ref's journal, past the store as damage or a
	// foreign writer would, a record that does not decode as its next
	// sequence, and returns the store to go on with (s, or s reopened).
	Undecodable func(t *testing.T, s eventstore.Store, ref eventstore.Reference) eventstore.Store
}

// Run runs the contract suite.
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"EnsureJournal", testEnsureJournal},
		{"AppendAssignsSequence", testAppendAssignsSequence},
		{"AppendWithoutHeader", testAppendWithoutHeader},
		{"AppendRejectsBadRecords", testAppendRejectsBadRecords},
		{"DuplicateRecordID", testDuplicateRecordID},
		{"ReadJournalFromSequence", testReadJournalFromSequence},
		{"ReadLogInterleaved", testReadLogInterleaved},
		{"JournalsAndLookup", testJournalsAndLookup},
		{"ConcurrentAppendsOneJournal", testConcurrentAppends},
		{"ThousandJournals", testThousandJournals},
		{"Reopen", testReopen},
		{"ClosedStore", testClosed},
		{"ForkAndResumeLinks", testForkAndResumeLinks},
		{"InterruptionRecord", testInterruptionRecord},
		{"ReadJournals", testReadJournals},
		{"ReadJournalsUndecodable", testReadJournalsUndecodable},
		{"ReadRecords", testReadRecords},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, f) })
	}
}

func open(t *testing.T, f Factory) eventstore.Store {
	t.Helper()
	s := f.Open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func ensure(t *testing.T, s eventstore.Store, ref eventstore.Reference) eventstore.Reference {
	t.Helper()
	head, err := s.EnsureJournal(context.Background(), ref, Header("fixture"))
	if err != nil {
		t.Fatalf("EnsureJournal(%s): %v", ref, err)
	}
	return head
}

func mustAppend(t *testing.T, s eventstore.Store, ref eventstore.Reference, r eventstore.Record) eventstore.Entry {
	t.Helper()
	e, err := s.Append(context.Background(), ref, r)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", ref, r.Kind(), err)
	}
	return e
}

// Collect reads a whole iterator, failing the test on error.
func Collect(t testing.TB, seq func(func(eventstore.Entry, error) bool)) []eventstore.Entry {
	t.Helper()
	var out []eventstore.Entry
	for e, err := range seq {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, e)
	}
	return out
}

func head(t *testing.T, s eventstore.Store, ref eventstore.Reference) eventstore.Reference {
	t.Helper()
	h, err := s.Head(context.Background(), ref)
	if err != nil {
		t.Fatalf("Head(%s): %v", ref, err)
	}
	return h
}

func testEnsureJournal(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerTask, "task-1", "exec-1")
	h := ensure(t, s, ref)
	if h.LastSequence != 1 || h.RecordCount != 1 || h.JournalID != ref.JournalID {
		t.Fatalf("head after ensure = %+v, want lastSequence 1, recordCount 1, journalId %s", h, ref.JournalID)
	}
	// Idempotent: the same header again is not a second record.
	h2 := ensure(t, s, ref)
	if h2.LastSequence != 1 {
		t.Fatalf("second ensure: lastSequence %d, want 1", h2.LastSequence)
	}
	// A different header for the same journal is refused.
	other := Header("other")
	other.RecordID = "rec-other-header"
	if _, err := s.EnsureJournal(context.Background(), ref, other); !errors.Is(err, eventstore.ErrJournalExists) {
		t.Fatalf("ensure with a different header: got %v, want ErrJournalExists", err)
	}
	entries := Collect(t, s.ReadJournal(context.Background(), ref, 1))
	if len(entries) != 1 {
		t.Fatalf("journal has %d records, want 1", len(entries))
	}
	hd, ok := entries[0].Record.(*eventstore.Header)
	if !ok {
		t.Fatalf("record 1 is %T, want *Header", entries[0].Record)
	}
	b := hd.RecordBase()
	if b.Sequence != 1 || b.AgentExecutionID != "exec-1" || b.OwnerID != "task-1" || b.Scope != eventstore.OwnerTask ||
		b.JournalID != ref.JournalID || hd.JournalKind != "agent-execution-interaction-journal" || b.OccurredAt.IsZero() {
		t.Fatalf("stored header base = %+v kind %q, want it filled from the reference", b, hd.JournalKind)
	}
}

func testAppendAssignsSequence(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerMission, "m-1", "exec-1")
	ensure(t, s, ref)
	var last uint64
	for i := 2; i <= 20; i++ {
		var r eventstore.Record = Message(fmt.Sprintf("msg-%d", i), "hello")
		if i%2 == 0 {
			r = Progress(fmt.Sprintf("obs-%d", i), "working")
		}
		e := mustAppend(t, s, ref, r)
		if got := e.Record.RecordBase().Sequence; got != uint64(i) {
			t.Fatalf("append %d: sequence %d, want %d", i, got, i)
		}
		if e.Offset <= last {
			t.Fatalf("append %d: offset %d not after %d", i, e.Offset, last)
		}
		last = e.Offset
	}
	if h := head(t, s, ref); h.LastSequence != 20 || h.RecordCount != 20 {
		t.Fatalf("head = %+v, want 20 records", h)
	}
}

func testAppendWithoutHeader(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerSystem, "sys", "nobody")
	if _, err := s.Append(context.Background(), ref, Message("m", "x")); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("append without header: got %v, want ErrJournalNotFound", err)
	}
	if _, err := s.Head(context.Background(), ref); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("head of missing journal: got %v, want ErrJournalNotFound", err)
	}
	if _, err := s.Append(context.Background(), ref, Header("x")); err == nil {
		t.Fatal("Append accepted a header; headers go through EnsureJournal")
	}
}

func testAppendRejectsBadRecords(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerRepository, "repo", "exec-bad")
	ensure(t, s, ref)
	mustAppend(t, s, ref, Message("good", "x"))

	foreign := Message("m-foreign", "x")
	foreign.AgentExecutionID = "someone-else"
	wrongOwner := Message("m-owner", "x")
	wrongOwner.OwnerID = "another-repo"
	badEnum := Message("m-enum", "x")
	badEnum.Source = "stranger"
	noKey := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning}
	huge := Message("m-huge", strings.Repeat("x", f.MaxRecordSize))
	lifecycleInput := &eventstore.StateChanged{Lifecycle: "awaiting-input"}
	lifecycleInput.RecordID = "rec-ai"

	for _, c := range []struct {
		name string
		r    eventstore.Record
		want error
	}{
		{"foreign execution", foreign, eventstore.ErrReferenceMismatch},
		{"foreign owner", wrongOwner, eventstore.ErrReferenceMismatch},
		{"bad enum", badEnum, eventstore.ErrInvalidRecord},
		{"no natural key", noKey, eventstore.ErrInvalidRecord},
		{"awaiting-input lifecycle", lifecycleInput, eventstore.ErrInvalidRecord},
		{"oversize", huge, eventstore.ErrRecordTooLarge},
	} {
		if _, err := s.Append(context.Background(), ref, c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if h := head(t, s, ref); h.LastSequence != 2 {
		t.Fatalf("after rejected appends head = %d, want 2 (nothing stored)", h.LastSequence)
	}
	// The journal stays appendable after rejections.
	if e := mustAppend(t, s, ref, Message("after", "x")); e.Record.RecordBase().Sequence != 3 {
		t.Fatalf("append after rejections: sequence %d, want 3", e.Record.RecordBase().Sequence)
	}
}

func testDuplicateRecordID(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerTask, "t", "exec-dup")
	ensure(t, s, ref)
	first := mustAppend(t, s, ref, Message("m-1", "hello"))
	mustAppend(t, s, ref, Message("m-2", "other"))
	again := mustAppend(t, s, ref, Message("m-1", "hello"))
	if again.Offset != first.Offset || again.Record.RecordBase().Sequence != 2 {
		t.Fatalf("duplicate append = offset %d seq %d, want the stored offset %d seq 2",
			again.Offset, again.Record.RecordBase().Sequence, first.Offset)
	}
	if h := head(t, s, ref); h.LastSequence != 3 {
		t.Fatalf("head after duplicate = %d, want 3", h.LastSequence)
	}
}

func testReadJournalFromSequence(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerTask, "t", "exec-read")
	other := Ref(eventstore.OwnerTask, "t", "exec-other")
	ensure(t, s, ref)
	ensure(t, s, other)
	for i := 0; i < 30; i++ {
		mustAppend(t, s, ref, Message(fmt.Sprintf("m-%d", i), "x"))
		mustAppend(t, s, other, Message(fmt.Sprintf("o-%d", i), "y"))
	}
	for _, from := range []uint64{0, 1, 2, 17, 31, 32, 100} {
		got := Collect(t, s.ReadJournal(context.Background(), ref, from))
		start := max(from, 1)
		want := 0
		if start <= 31 {
			want = int(31 - start + 1)
		}
		if len(got) != want {
			t.Fatalf("read from %d: %d records, want %d", from, len(got), want)
		}
		for i, e := range got {
			b := e.Record.RecordBase()
			if b.Sequence != start+uint64(i) || b.AgentExecutionID != "exec-read" {
				t.Fatalf("read from %d: record %d is seq %d of %s, want seq %d of exec-read", from, i, b.Sequence, b.AgentExecutionID, start+uint64(i))
			}
		}
	}
	var gotErr error
	for _, err := range s.ReadJournal(context.Background(), Ref(eventstore.OwnerTask, "t", "missing"), 1) {
		gotErr = err
	}
	if !errors.Is(gotErr, eventstore.ErrJournalNotFound) {
		t.Fatalf("read missing journal: got %v, want ErrJournalNotFound", gotErr)
	}
}

func testReadLogInterleaved(t *testing.T, f Factory) {
	s := open(t, f)
	refs := []eventstore.Reference{
		Ref(eventstore.OwnerMission, "m", "a"), Ref(eventstore.OwnerTask, "t", "b"), Ref(eventstore.OwnerSystem, "s", "c"),
	}
	var order []string
	for _, r := range refs {
		ensure(t, s, r)
		order = append(order, r.AgentExecutionID+"/1")
	}
	for i := 0; i < 10; i++ {
		for _, r := range refs {
			e := mustAppend(t, s, r, Message(fmt.Sprintf("m-%d", i), "x"))
			order = append(order, fmt.Sprintf("%s/%d", r.AgentExecutionID, e.Record.RecordBase().Sequence))
		}
	}
	all := Collect(t, s.ReadLog(context.Background(), 1))
	var got []string
	for i, e := range all {
		if i > 0 && e.Offset != all[i-1].Offset+1 {
			t.Fatalf("log offsets jump from %d to %d", all[i-1].Offset, e.Offset)
		}
		b := e.Record.RecordBase()
		got = append(got, fmt.Sprintf("%s/%d", b.AgentExecutionID, b.Sequence))
	}
	if diff := cmp.Diff(order, got); diff != "" {
		t.Fatalf("log order (-want +got):\n%s", diff)
	}
	from := all[10].Offset
	tail := Collect(t, s.ReadLog(context.Background(), from))
	if len(tail) != len(all)-10 || tail[0].Offset != from {
		t.Fatalf("log from %d: %d entries starting at %d, want %d starting at %d", from, len(tail), tail[0].Offset, len(all)-10, from)
	}
	if n := len(Collect(t, s.ReadLog(context.Background(), all[len(all)-1].Offset+1))); n != 0 {
		t.Fatalf("log past the end: %d entries, want 0", n)
	}
}

func testJournalsAndLookup(t *testing.T, f Factory) {
	s := open(t, f)
	hostile := []string{"../../etc/passwd", "a.b.c", "*", ">", "with space", "ünïcode", "%41", "-_-"}
	var want []eventstore.Reference
	for i, id := range hostile {
		ref := Ref(eventstore.OwnerRepository, "repo/with.dots", id)
		ensure(t, s, ref)
		for j := 0; j < i; j++ {
			mustAppend(t, s, ref, Message(fmt.Sprintf("m-%d", j), "x"))
		}
		ref.RecordCount, ref.LastSequence = uint64(i+1), uint64(i+1)
		want = append(want, ref)
	}
	got, err := s.Journals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]eventstore.Reference{}
	for _, r := range got {
		byID[r.AgentExecutionID] = r
	}
	for _, w := range want {
		if diff := cmp.Diff(w, byID[w.AgentExecutionID]); diff != "" {
			t.Errorf("journal %q (-want +got):\n%s", w.AgentExecutionID, diff)
		}
		r, err := s.Lookup(context.Background(), w.AgentExecutionID)
		if err != nil {
			t.Errorf("Lookup(%q): %v", w.AgentExecutionID, err)
		} else if r.JournalID != w.JournalID {
			t.Errorf("Lookup(%q) = %s, want %s", w.AgentExecutionID, r.JournalID, w.JournalID)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Journals: %d, want %d", len(got), len(want))
	}
	if _, err := s.Lookup(context.Background(), "nope"); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("Lookup(nope): got %v, want ErrJournalNotFound", err)
	}
}

func testConcurrentAppends(t *testing.T, f Factory) {
	s := open(t, f)
	ref := Ref(eventstore.OwnerTask, "t", "exec-concurrent")
	ensure(t, s, ref)
	const writers, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Append(context.Background(), ref, Message(fmt.Sprintf("w%d-%d", w, i), "x")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := Collect(t, s.ReadJournal(context.Background(), ref, 1))
	if len(entries) != writers*each+1 {
		t.Fatalf("%d records, want %d", len(entries), writers*each+1)
	}
	seen := map[string]bool{}
	for i, e := range entries {
		b := e.Record.RecordBase()
		if b.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d: gap or duplicate", i, b.Sequence)
		}
		if seen[b.RecordID] {
			t.Fatalf("record id %s stored twice", b.RecordID)
		}
		seen[b.RecordID] = true
	}
}

func testThousandJournals(t *testing.T, f Factory) {
	s := open(t, f)
	const journals, rounds = 1000, 3
	refs := make([]eventstore.Reference, journals)
	for i := range refs {
		refs[i] = Ref(eventstore.OwnerMission, fmt.Sprintf("m-%d", i%7), fmt.Sprintf("exec-%04d", i))
		ensure(t, s, refs[i])
	}
	for r := 0; r < rounds; r++ {
		for _, ref := range refs {
			mustAppend(t, s, ref, Message(fmt.Sprintf("m-%d", r), "x"))
		}
	}
	got, err := s.Journals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != journals {
		t.Fatalf("Journals: %d, want %d", len(got), journals)
	}
	for _, r := range got {
		if r.LastSequence != rounds+1 {
			t.Fatalf("journal %s has %d records, want %d", r, r.LastSequence, rounds+1)
		}
	}
	// Each journal's own stream is gapless while the log interleaves them.
	next := map[string]uint64{}
	var n int
	for e, err := range s.ReadLog(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		b := e.Record.RecordBase()
		if b.Sequence != next[b.JournalID]+1 {
			t.Fatalf("journal %s: sequence %d after %d", b.JournalID, b.Sequence, next[b.JournalID])
		}
		next[b.JournalID] = b.Sequence
		n++
	}
	if n != journals*(rounds+1) {
		t.Fatalf("log has %d records, want %d", n, journals*(rounds+1))
	}
	one := Collect(t, s.ReadJournal(context.Background(), refs[500], 2))
	if len(one) != rounds || one[0].Record.RecordBase().AgentExecutionID != "exec-0500" {
		t.Fatalf("journal 500 from seq 2: %d records, want %d of exec-0500", len(one), rounds)
	}
}

func testReopen(t *testing.T, f Factory) {
	if f.Reopen == nil {
		t.Fatal("the factory has no Reopen: every store must survive a reopen")
	}
	s := f.Open(t)
	ref := Ref(eventstore.OwnerTask, "t", "exec-reopen")
	ensure(t, s, ref)
	for i := 0; i < 50; i++ {
		mustAppend(t, s, ref, Progress(fmt.Sprintf("obs-%d", i), "step"))
		mustAppend(t, s, ref, Activity(ref.JournalID, i))
	}
	before := Collect(t, s.ReadLog(context.Background(), 1))
	s = f.Reopen(t, s)
	t.Cleanup(func() { s.Close() })
	after := Collect(t, s.ReadLog(context.Background(), 1))
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("records after reopen (-before +after):\n%s", diff)
	}
	// Appending after a reopen continues the journal.
	e := mustAppend(t, s, ref, Message("after-reopen", "x"))
	if e.Record.RecordBase().Sequence != 102 {
		t.Fatalf("append after reopen: sequence %d, want 102", e.Record.RecordBase().Sequence)
	}
}

func testClosed(t *testing.T, f Factory) {
	s := f.Open(t)
	ref := Ref(eventstore.OwnerTask, "t", "exec-closed")
	ensure(t, s, ref)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Append(context.Background(), ref, Message("m", "x")); !errors.Is(err, eventstore.ErrClosed) {
		t.Fatalf("append after close: got %v, want ErrClosed", err)
	}
}
