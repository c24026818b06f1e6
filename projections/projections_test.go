package projections_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

// waitCheckpoint polls until the projection reaches offset.
func waitCheckpoint(t testing.TB, db *projections.DB, offset uint64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cp, err := db.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if cp >= offset {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %d, want %d", cp, offset)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runProject runs Project in the background until the test ends.
func runProject(t testing.TB, db *projections.DB, src projections.Source) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- db.Project(ctx, src) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Project: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestProjectMatchesReplay(t *testing.T) {
	s, rs := writtenLog(t, 6, 70)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db"), BatchSize: 7})
	stop := runProject(t, db, s)
	waitCheckpoint(t, db, lastOffset(t, s))
	checkAgainstReplay(t, db, s, rs, 5)

	// Records appended while Project runs are followed.
	writeJournals(t, s, rs, 70, 30)
	appendRecord(t, s, rs[0], finish(rs[0], eventstore.LifecycleCompleted))
	waitCheckpoint(t, db, lastOffset(t, s))
	stop()
	checkAgainstReplay(t, db, s, rs, 7)
	got, err := db.Execution(rs[0].AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lifecycle != eventstore.LifecycleCompleted || got.EndedAt == nil {
		t.Fatalf("after finish: lifecycle %s, endedAt %v; want completed with an end time", got.Lifecycle, got.EndedAt)
	}

	if _, err := db.Execution("no-such"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("Execution(no-such): got %v, want ErrNotFound", err)
	}
	if _, _, err := db.Timeline("no-such", 0, 10); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("Timeline(no-such): got %v, want ErrNotFound", err)
	}
}

func TestTimelinePaging(t *testing.T) {
	_, s := startLog(t)
	ref := refs(1)[0]
	writeJournals(t, s, []eventstore.Reference{ref}, 0, 200)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	catchUp(t, db, s)
	want := reversed(replay(t, s, ref).Timeline)
	if len(want) <= projections.DefaultTimelineLimit {
		t.Fatalf("fixture has %d timeline items, want more than %d", len(want), projections.DefaultTimelineLimit)
	}
	id := ref.AgentExecutionID

	cases := []struct {
		name      string
		before    uint64
		limit     int
		wantItems []execution.TimelineItem
		wantNext  uint64
	}{
		{"newest three", 0, 3, want[:3], want[2].Sequence},
		{"next page", want[2].Sequence, 3, want[3:6], want[5].Sequence},
		{"default limit", 0, 0, want[:projections.DefaultTimelineLimit], want[projections.DefaultTimelineLimit-1].Sequence},
		{"limit above max", 0, 5000, want, 0},
		{"before between items", want[3].Sequence + 1, 2, want[3:5], want[4].Sequence},
		{"before far above", 1 << 40, 2, want[:2], want[1].Sequence},
		{"last page", want[len(want)-3].Sequence, 10, want[len(want)-2:], 0},
		{"before the first", want[len(want)-1].Sequence, 10, []execution.TimelineItem{}, 0},
		{"exact fit", want[len(want)-4].Sequence, 3, want[len(want)-3:], 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items, next, err := db.QueryTimeline(id, projections.TimelineQuery{Before: c.before, Limit: c.limit, All: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.wantItems, items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if next != c.wantNext {
				t.Errorf("next = %d, want %d", next, c.wantNext)
			}
		})
	}
	for _, limit := range []int{1, 4, 50, 1000} {
		if diff := cmp.Diff(want, fullTimeline(t, db, id, limit)); diff != "" {
			t.Fatalf("pages of %d concatenated (-want +got):\n%s", limit, diff)
		}
	}

	// By default a page leaves the quiet decisions out, and counts only
	// the items it shows.
	var shown []execution.TimelineItem
	for _, it := range want {
		if !it.Quiet() {
			shown = append(shown, it)
		}
	}
	if len(shown) == len(want) {
		t.Fatal("fixture has no quiet items")
	}
	items, next, err := db.Timeline(id, 0, 5)
	if err != nil || next != shown[4].Sequence {
		t.Fatalf("Timeline(%s, 0, 5): next %d, %v; want next %d", id, next, err, shown[4].Sequence)
	}
	if diff := cmp.Diff(shown[:5], items); diff != "" {
		t.Errorf("default page (-want +got):\n%s", diff)
	}
	// A tool call's start and end are one item, completed by the later
	// record; only the newest call may still run.
	tools := 0
	for _, it := range want {
		if it.Kind != execution.ItemTool {
			continue
		}
		tools++
		running := it.Tool.Status == eventstore.ToolCallStarted
		if running && tools > 1 || !running && it.Tool.EndSequence <= it.Sequence {
			t.Errorf("tool item %d: %+v; want it completed by a later record", it.Sequence, it.Tool)
		}
	}
	if tools < 2 {
		t.Error("fixture timeline has no tool items")
	}

	// An execution without timeline items yet has an empty timeline.
	quiet := storetest.Ref(eventstore.OwnerTask, "t", "quiet")
	if _, err := s.EnsureJournal(context.Background(), quiet, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	catchUp(t, db, s)
	items, next, err = db.Timeline("quiet", 0, 10)
	if err != nil || len(items) != 0 || next != 0 {
		t.Fatalf("Timeline(quiet) = %v, %d, %v; want no items", items, next, err)
	}
}

// at stamps a record with an occurrence time.
func at[R eventstore.Record](r R, ts time.Time) R {
	r.RecordBase().OccurredAt = ts
	return r
}

func stateChange(ref eventstore.Reference, key string, sc *eventstore.StateChanged) *eventstore.StateChanged {
	sc.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)
	return sc
}

func ids(ss []projections.Summary) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func TestListFilters(t *testing.T) {
	_, s := startLog(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type exec struct {
		ref       eventstore.Reference
		lifecycle eventstore.Lifecycle
		attention eventstore.Attention
	}
	execs := []exec{
		{storetest.Ref(eventstore.OwnerTask, "t1", "a"), eventstore.LifecycleRunning, eventstore.AttentionAutonomous},
		{storetest.Ref(eventstore.OwnerTask, "t1", "b"), eventstore.LifecycleRunning, eventstore.AttentionAwaitingOperator},
		{storetest.Ref(eventstore.OwnerTask, "t2", "c"), eventstore.LifecycleCompleted, eventstore.AttentionNone},
		{storetest.Ref(eventstore.OwnerMission, "t1", "d"), eventstore.LifecycleRunning, eventstore.AttentionAutonomous},
		{storetest.Ref(eventstore.OwnerMission, "m1", "e"), eventstore.LifecycleFailed, eventstore.AttentionNone},
		// Owner ids that share a prefix must not mix.
		{storetest.Ref(eventstore.OwnerTask, "t1x", "f"), eventstore.LifecycleRunning, eventstore.AttentionAutonomous},
		{storetest.Ref(eventstore.OwnerTask, "t1", "g"), eventstore.LifecycleStarting, eventstore.AttentionNone},
	}
	for i, e := range execs {
		if _, err := s.EnsureJournal(ctx, e.ref, at(storetest.Header("agent"), t0)); err != nil {
			t.Fatal(err)
		}
		if e.lifecycle != eventstore.LifecycleStarting {
			// Every execution is updated at a different time: a first, g last.
			appendRecord(t, s, e.ref, at(stateChange(e.ref, "s", &eventstore.StateChanged{Lifecycle: e.lifecycle, Attention: e.attention}),
				t0.Add(time.Duration(i+1)*time.Minute)))
		}
	}
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	stop := runProject(t, db, s)
	waitCheckpoint(t, db, lastOffset(t, s))

	list := func(f projections.Filter) []string {
		t.Helper()
		got, err := db.List(f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		return ids(got)
	}
	cases := []struct {
		name   string
		filter projections.Filter
		want   []string
	}{
		// g was never updated after its header, so it is the oldest.
		{"all", projections.Filter{}, []string{"f", "e", "d", "c", "b", "a", "g"}},
		{"limit", projections.Filter{Limit: 2}, []string{"f", "e"}},
		{"owner", projections.Filter{OwnerEntity: eventstore.OwnerTask, OwnerID: "t1"}, []string{"b", "a", "g"}},
		{"owner entity", projections.Filter{OwnerEntity: eventstore.OwnerMission}, []string{"e", "d"}},
		{"owner without executions", projections.Filter{OwnerEntity: eventstore.OwnerArtifact, OwnerID: "t1"}, []string{}},
		{"lifecycle", projections.Filter{Lifecycle: eventstore.LifecycleRunning}, []string{"f", "d", "b", "a"}},
		{"attention", projections.Filter{Attention: eventstore.AttentionNone}, []string{"e", "c", "g"}},
		{"owner and lifecycle", projections.Filter{OwnerEntity: eventstore.OwnerTask, OwnerID: "t1", Lifecycle: eventstore.LifecycleRunning}, []string{"b", "a"}},
		{"all three", projections.Filter{OwnerEntity: eventstore.OwnerTask, OwnerID: "t1", Lifecycle: eventstore.LifecycleRunning,
			Attention: eventstore.AttentionAutonomous}, []string{"a"}},
		{"lifecycle and attention", projections.Filter{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous}, []string{"f", "d", "a"}},
		{"no match", projections.Filter{Lifecycle: eventstore.LifecycleCompleted, Attention: eventstore.AttentionBlocked}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, list(c.filter)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}

	// A summary carries the state's fields.
	all, err := db.List(projections.Filter{OwnerEntity: eventstore.OwnerTask, OwnerID: "t1", Attention: eventstore.AttentionAwaitingOperator})
	if err != nil || len(all) != 1 {
		t.Fatalf("List(b) = %v, %v", all, err)
	}
	wantB := projections.Summary{ID: "b", AgentID: "agent", OwnerEntity: eventstore.OwnerTask, OwnerID: "t1",
		Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAwaitingOperator, Activity: eventstore.ActivityIdle,
		CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Minute), RecordCount: 2, LastSequence: 2, SessionID: "b"}
	if diff := cmp.Diff(wantB, all[0]); diff != "" {
		t.Errorf("summary of b (-want +got):\n%s", diff)
	}

	// a completes and g starts: the indexes follow.
	appendRecord(t, s, execs[0].ref, at(finish(execs[0].ref, eventstore.LifecycleCompleted), t0.Add(time.Hour)))
	appendRecord(t, s, execs[6].ref, at(stateChange(execs[6].ref, "again", &eventstore.StateChanged{
		Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAwaitingOperator,
		CurrentInputRequestID: eventstore.SetInputRequest("req-1")}), t0.Add(2*time.Hour)))
	appendRecord(t, s, execs[1].ref, at(&eventstore.ActivityUpdated{Activity: eventstore.ActivityTesting,
		Base: eventstore.Base{RecordID: eventstore.RecordID(execs[1].ref.JournalID, eventstore.KindActivity, "x")}}, t0.Add(30*time.Minute)))
	waitCheckpoint(t, db, lastOffset(t, s))
	stop()
	after := []struct {
		name   string
		filter projections.Filter
		want   []string
	}{
		{"running", projections.Filter{Lifecycle: eventstore.LifecycleRunning}, []string{"g", "b", "f", "d"}},
		{"completed", projections.Filter{Lifecycle: eventstore.LifecycleCompleted}, []string{"a", "c"}},
		{"autonomous", projections.Filter{Attention: eventstore.AttentionAutonomous}, []string{"f", "d"}},
		{"none", projections.Filter{Attention: eventstore.AttentionNone}, []string{"a", "e", "c"}},
		{"awaiting", projections.Filter{Attention: eventstore.AttentionAwaitingOperator}, []string{"g", "b"}},
		{"all", projections.Filter{}, []string{"g", "a", "b", "f", "e", "d", "c"}},
	}
	for _, c := range after {
		t.Run("after/"+c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, list(c.filter)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	got, err := db.List(projections.Filter{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAwaitingOperator})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID != "g" || got[0].CurrentInputRequestID != "req-1" || got[1].LatestActivity != eventstore.ActivityTesting {
		t.Errorf("summaries after the changes: %+v", got)
	}

	refsT1, err := db.JournalsByOwner(eventstore.OwnerTask, "t1")
	if err != nil {
		t.Fatal(err)
	}
	wantRefs := []eventstore.Reference{execs[0].ref, execs[1].ref, execs[6].ref}
	wantRefs[0].RecordCount, wantRefs[0].LastSequence = 3, 3
	wantRefs[1].RecordCount, wantRefs[1].LastSequence = 3, 3
	wantRefs[2].RecordCount, wantRefs[2].LastSequence = 2, 2
	if diff := cmp.Diff(wantRefs, refsT1); diff != "" {
		t.Errorf("JournalsByOwner(Task, t1) (-want +got):\n%s", diff)
	}
	if refs, err := db.JournalsByOwner(eventstore.OwnerArtifact, "none"); err != nil || len(refs) != 0 {
		t.Errorf("JournalsByOwner(Artifact, none) = %v, %v; want none", refs, err)
	}

	for _, f := range []projections.Filter{
		{Lifecycle: "awaiting-input"},
		{Attention: "bored"},
		{OwnerEntity: "Planet"},
		{OwnerID: "t1"},
		{Limit: -1},
	} {
		if _, err := db.List(f); !errors.Is(err, projections.ErrInvalidFilter) {
			t.Errorf("List(%+v): got %v, want ErrInvalidFilter", f, err)
		}
	}
	_, err = db.List(projections.Filter{Lifecycle: "awaiting-input"})
	if err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("List(awaiting-input) error %q does not list the accepted lifecycles", err)
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func readLog(t testing.TB, s *eventstore.JetStreamStore) []eventstore.Entry {
	t.Helper()
	return storetest.Collect(t, s.ReadLog(context.Background(), 1))
}

func TestApplyIsIdempotentAndRefusesGaps(t *testing.T) {
	s, rs := writtenLog(t, 3, 40)
	entries := readLog(t, s)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})

	checkpoint := func() uint64 {
		t.Helper()
		cp, err := db.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	if cp := checkpoint(); cp != 0 {
		t.Fatalf("new file: checkpoint %d, want 0", cp)
	}
	if err := db.Apply(entries[:50]); err != nil {
		t.Fatal(err)
	}
	snapshot := func() []execution.State {
		var out []execution.State
		for _, ref := range rs {
			st, err := db.Execution(ref.AgentExecutionID)
			if errors.Is(err, projections.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, *st)
		}
		return out
	}
	before := snapshot()
	beforeTL := fullTimeline(t, db, rs[0].AgentExecutionID, 1000)

	// The same batch again, and a sub-batch of it, change nothing.
	for _, batch := range [][]eventstore.Entry{entries[:50], entries[10:20], nil} {
		if err := db.Apply(batch); err != nil {
			t.Fatalf("re-apply: %v", err)
		}
		if cp := checkpoint(); cp != 50 {
			t.Fatalf("checkpoint %d after re-applying, want 50", cp)
		}
		if diff := cmp.Diff(before, snapshot()); diff != "" {
			t.Fatalf("re-applying changed the executions:\n%s", diff)
		}
		if diff := cmp.Diff(beforeTL, fullTimeline(t, db, rs[0].AgentExecutionID, 1000)); diff != "" {
			t.Fatalf("re-applying changed the timeline:\n%s", diff)
		}
	}

	// A gap is refused and applies nothing, not even the part before it.
	gap := append(slices.Clone(entries[50:55]), entries[60:70]...)
	if err := db.Apply(gap); !errors.Is(err, projections.ErrGap) {
		t.Fatalf("Apply with a gap: got %v, want ErrGap", err)
	}
	if err := db.Apply(entries[51:60]); !errors.Is(err, projections.ErrGap) {
		t.Fatalf("Apply after the checkpoint + 1: got %v, want ErrGap", err)
	}
	if cp := checkpoint(); cp != 50 {
		t.Fatalf("checkpoint %d after refused batches, want 50", cp)
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Fatalf("a refused batch changed the executions:\n%s", diff)
	}

	// An overlapping batch applies only its new part.
	if err := db.Apply(entries[40:]); err != nil {
		t.Fatal(err)
	}
	if cp := checkpoint(); cp != uint64(len(entries)) {
		t.Fatalf("checkpoint %d, want %d", cp, len(entries))
	}
	checkAgainstReplay(t, db, s, rs, 10)
}

func TestApplySkipsBadRecords(t *testing.T) {
	s, rs := writtenLog(t, 2, 20)
	entries := readLog(t, s)
	var logs syncBuffer
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := db.Apply(entries); err != nil {
		t.Fatal(err)
	}
	last := entries[len(entries)-1].Offset

	// Records that do not fit their execution: one without a header, one
	// that claims another journal's execution, one of a past sequence with
	// another record id. Each is skipped and logged; the checkpoint moves on.
	orphan := storetest.Message("m-x", "x")
	orphan.Base = eventstore.Base{RecordID: "orphan", Sequence: 2, Type: eventstore.KindMessage, SchemaVersion: 1,
		JournalID: "j-none", AgentExecutionID: "nobody", OwnerID: "o", Scope: eventstore.OwnerTask, OccurredAt: time.Now()}
	foreign := storetest.Message("m-y", "y")
	foreign.Base = orphan.Base
	foreign.RecordID, foreign.AgentExecutionID, foreign.Sequence = "foreign", rs[0].AgentExecutionID, 99
	bad := []eventstore.Entry{{Offset: last + 1, Record: orphan}, {Offset: last + 2, Record: foreign}}
	if err := db.Apply(bad); err != nil {
		t.Fatalf("Apply(bad records): %v", err)
	}
	cp, _ := db.Checkpoint()
	if cp != last+2 {
		t.Fatalf("checkpoint %d after skipped records, want %d", cp, last+2)
	}
	if _, err := db.Execution("nobody"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("a record without a header created an execution: %v", err)
	}
	out := logs.String()
	for _, id := range []string{"orphan", "foreign"} {
		if !strings.Contains(out, "record="+id) {
			t.Errorf("skipped record %s not logged:\n%s", id, out)
		}
	}
	checkAgainstReplay(t, db, s, rs, 10)

	// A record already folded into its execution (the data ahead of the
	// checkpoint) is skipped without a word.
	logs.mu.Lock()
	logs.b.Reset()
	logs.mu.Unlock()
	again := make([]eventstore.Entry, 0, len(entries))
	for i, e := range entries {
		again = append(again, eventstore.Entry{Offset: cp + 1 + uint64(i), Record: e.Record})
	}
	if err := db.Apply(again); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); out != "" {
		t.Errorf("re-applied records were logged:\n%s", out)
	}
	checkAgainstReplay(t, db, s, rs, 10)
}

func TestLag(t *testing.T) {
	_, s := startLog(t)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	ctx := context.Background()
	lag, err := db.Lag(ctx, s)
	if err != nil || lag != (projections.Lag{}) {
		t.Fatalf("empty log: Lag = %+v, %v; want zero", lag, err)
	}
	catchUp(t, db, s) // nothing to do on an empty log
	writeJournals(t, s, refs(2), 0, 10)
	last := lastOffset(t, s)
	lag, err = db.Lag(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := (projections.Lag{Checkpoint: 0, LastOffset: last, Records: last}); lag != want {
		t.Fatalf("Lag = %+v, want %+v", lag, want)
	}
	var calls [][2]uint64
	if err := db.CatchUp(ctx, s, func(done, total uint64) { calls = append(calls, [2]uint64{done, total}) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]uint64{last, last} {
		t.Fatalf("progress calls %v, want the last to be [%d %d]", calls, last, last)
	}
	lag, err = db.Lag(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := (projections.Lag{Checkpoint: last, LastOffset: last}); lag != want {
		t.Fatalf("Lag = %+v, want %+v", lag, want)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	db, err := projections.Open(projections.Config{Path: dbPath(t, "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := db.Checkpoint(); !errors.Is(err, projections.ErrClosed) {
		t.Fatalf("Checkpoint after Close: got %v, want ErrClosed", err)
	}
	if err := db.Apply([]eventstore.Entry{}); !errors.Is(err, projections.ErrClosed) {
		t.Fatalf("Apply after Close: got %v, want ErrClosed", err)
	}
}

func TestOpenValidatesConfig(t *testing.T) {
	_, err := projections.Open(projections.Config{BatchSize: -1, LockTimeout: -time.Second})
	if err == nil {
		t.Fatal("Open accepted an empty config")
	}
	for _, want := range []string{"Path", "BatchSize", "LockTimeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestOpenTwiceIsLocked(t *testing.T) {
	path := dbPath(t, "p.db")
	openDB(t, projections.Config{Path: path})
	_, err := projections.Open(projections.Config{Path: path, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, projections.ErrLocked) || errors.Is(err, projections.ErrCorrupt) {
		t.Fatalf("second Open: got %v, want ErrLocked (and not ErrCorrupt)", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name %s", err, path)
	}
}

// A record in the log that no reader can decode, written past the store, is
// logged and passed over: the projector neither stops nor falls behind.
func TestCatchUpPassesOverUndecodableRecord(t *testing.T) {
	b, s := startLog(t)
	rs := refs(2)
	writeJournals(t, s, rs, 0, 10)
	ack, err := b.JetStream().Publish(context.Background(), "journal.foreign.writer", []byte(`{"type":"message.accepted","bogus":1}`))
	if err != nil {
		t.Fatal(err)
	}
	writeJournals(t, s, rs, 10, 10)
	var logs syncBuffer
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db"), BatchSize: 7,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	catchUp(t, db, s)
	if cp, last := checkpointOf(t, db), lastOffset(t, s); cp != last {
		t.Fatalf("checkpoint %d after catching up, want %d", cp, last)
	}
	if want := fmt.Sprintf("msg=\"skip undecodable record\" offset=%d", ack.Sequence); !strings.Contains(logs.String(), want) {
		t.Errorf("log does not say %s:\n%s", want, logs.String())
	}
	checkAgainstReplay(t, db, s, rs, 10)
}

func checkpointOf(t testing.TB, db *projections.DB) uint64 {
	t.Helper()
	cp, err := db.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// A transaction takes BatchSize entries while the log is being caught up
// with, across the smaller batches the log is read in; once caught up, a
// follower commits each record as it comes.
func TestTransactionsSpanReadBatches(t *testing.T) {
	s, rs := writtenLog(t, 10, 250)
	last := lastOffset(t, s)
	if last <= 2000 || last > 3000 {
		t.Fatalf("the log ends at %d, want between 2001 and 3000", last)
	}
	ctx := context.Background()
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db"), BatchSize: 2000})
	var calls [][2]uint64
	src := &batchSizes{Source: s}
	if err := db.CatchUp(ctx, src, func(done, total uint64) { calls = append(calls, [2]uint64{done, total}) }); err != nil {
		t.Fatal(err)
	}
	// A loaded machine may commit early (a transaction waits for the
	// next read batch only so long), never late.
	if want := [][2]uint64{{2000, last}, {last, last}}; !slices.Equal(calls, want) {
		t.Logf("progress after each transaction %v, want %v on an idle machine", calls, want)
		checkTransactions(t, calls, 2000, last)
		if calls[0][0] <= 1000 {
			t.Fatalf("the first transaction took %d entries, no more than one read batch of 1000 (progress %v)", calls[0][0], calls)
		}
	}
	if n := slices.Max(src.sizes); n >= 2000 {
		t.Fatalf("the log was read in batches of up to %d entries (%v), want smaller ones than a transaction", n, src.sizes)
	}
	checkAgainstReplay(t, db, s, rs, 100)

	// A transaction never takes more than BatchSize, even when that is
	// not a whole number of read batches.
	odd := openDB(t, projections.Config{Path: dbPath(t, "odd.db"), BatchSize: 1500})
	calls = nil
	if err := odd.CatchUp(ctx, s, func(done, total uint64) { calls = append(calls, [2]uint64{done, total}) }); err != nil {
		t.Fatal(err)
	}
	checkTransactions(t, calls, 1500, last)

	// A follower projecting a log longer than a transaction catches up,
	// then shows each new record without waiting for more.
	follower := openDB(t, projections.Config{Path: dbPath(t, "f.db"), BatchSize: 2000})
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- follower.Project(pctx, s) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := follower.WaitFor(wctx, last); err != nil {
		t.Fatalf("WaitFor(%d): %v", last, err)
	}
	for i := range 3 {
		appendRecord(t, s, rs[i], finish(rs[i], eventstore.LifecycleCompleted))
		if err := follower.WaitFor(wctx, last+uint64(i)+1); err != nil {
			t.Fatalf("WaitFor(%d) after appending it: %v", last+uint64(i)+1, err)
		}
	}
	checkAgainstReplay(t, follower, s, rs, 100)
}

// batchSizes is a Source that notes the size of each batch it yields.
type batchSizes struct {
	projections.Source
	sizes []int
}

func (b *batchSizes) Follow(ctx context.Context, from uint64, maxBatch int) iter.Seq2[[]eventstore.Entry, error] {
	return func(yield func([]eventstore.Entry, error) bool) {
		for batch, err := range b.Source.Follow(ctx, from, maxBatch) {
			b.sizes = append(b.sizes, len(batch))
			if !yield(batch, err) {
				return
			}
		}
	}
}

// checkTransactions checks the progress CatchUp reported after each
// transaction: none applied more than batchSize entries, and the last
// reached the end of the log.
func checkTransactions(t *testing.T, calls [][2]uint64, batchSize, last uint64) {
	t.Helper()
	prev := uint64(0)
	for _, c := range calls {
		if n := c[0] - prev; n > batchSize {
			t.Fatalf("a transaction applied %d entries, more than BatchSize %d (progress %v)", n, batchSize, calls)
		}
		prev = c[0]
	}
	if prev != last {
		t.Fatalf("progress ends at %d, want %d", prev, last)
	}
}

// TestLingerAfterABusyTransactionEnds: after a transaction of many records
// a caught-up projection waits a little for more before its next commit,
// but not for long: a record that comes alone right after, with nothing
// after it, is still committed.
func TestLingerAfterABusyTransactionEnds(t *testing.T) {
	s, rs := writtenLog(t, 2, 6)
	last := lastOffset(t, s)
	if last < 12 {
		t.Fatalf("the log ends at %d, want at least 12 records", last)
	}
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runProject(t, db, s)
	if err := db.WaitFor(ctx, last); err != nil {
		t.Fatalf("WaitFor(%d): %v", last, err)
	}
	// The commit that reached last took every record so far, more than
	// the projection lingers after; the record appended now comes while
	// it would wait for more. Nothing waits for it (WaitFor would end the
	// linger): the checkpoint is polled (waitCheckpoint).
	for i := range 3 {
		appendRecord(t, s, rs[0], record(rs[0], 100+i))
		waitCheckpoint(t, db, last+uint64(i)+1)
	}
	checkAgainstReplay(t, db, s, rs, 100)
}

// TestWaitForEndsTheLinger: a projection lingering for more of the log
// commits at once for a WaitFor call, here with a linger far longer than
// the test may take.
func TestWaitForEndsTheLinger(t *testing.T) {
	projections.SetMaxLinger(t, time.Hour)
	s, rs := writtenLog(t, 2, 6)
	last := lastOffset(t, s)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runProject(t, db, s)
	waitCheckpoint(t, db, last)
	appendRecord(t, s, rs[0], record(rs[0], 100))
	if err := db.WaitFor(ctx, last+1); err != nil {
		t.Fatalf("WaitFor(%d) of a record appended while the projection lingers for an hour: %v", last+1, err)
	}
}

// TestSessionIDsNewestFirst: sessions come by their first run's start,
// newest first, each once however many runs it has, and a session's runs
// come in the order they started.
func TestSessionIDsNewestFirst(t *testing.T) {
	_, s := startLog(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	rs := refs(4)
	// exec-000 starts first, exec-002 second and exec-003 third; exec-001
	// starts last but joins exec-000's session, which stays the oldest.
	starts := []time.Duration{0, 3 * time.Hour, time.Hour, 2 * time.Hour}
	for i, ref := range rs {
		h := at(storetest.Header("agent"), t0.Add(starts[i]))
		if i == 1 {
			h.SessionID = rs[0].AgentExecutionID
		}
		if _, err := s.EnsureJournal(ctx, ref, h); err != nil {
			t.Fatal(err)
		}
	}
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	catchUp(t, db, s)
	ids, err := db.SessionIDs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{rs[3].AgentExecutionID, rs[2].AgentExecutionID, rs[0].AgentExecutionID}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("SessionIDs (-want +got):\n%s", diff)
	}
	runs, err := db.SessionRuns(rs[0].AgentExecutionID)
	if err != nil || len(runs) != 2 || runs[0].RunID != rs[0].AgentExecutionID || runs[1].RunID != rs[1].AgentExecutionID {
		t.Errorf("SessionRuns(%s) = %d runs, %v; want exec-000 then exec-001", rs[0].AgentExecutionID, len(runs), err)
	}
}
