package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

// fastSync trades the embedded server's power-loss safety for speed; these
// tests are about the projection file, not the log's durability.
func fastSync(c *bus.Config) { c.Sync = bus.SyncInterval }

// startLog starts an embedded server and returns the store on it.
func startLog(t testing.TB, opts ...func(*bus.Config)) (*bus.Bus, *eventstore.JetStreamStore) {
	t.Helper()
	b := fixtures.StartNATS(t, append([]func(*bus.Config){fastSync}, opts...)...)
	return b, fixtures.OpenStore(t, b)
}

// writtenLog starts a log and writes journals journals (refs) of
// perJournal records each to it.
func writtenLog(t testing.TB, journals, perJournal int) (*eventstore.JetStreamStore, []eventstore.Reference) {
	t.Helper()
	_, s := startLog(t)
	rs := refs(journals)
	writeJournals(t, s, rs, 0, perJournal)
	return s, rs
}

func openDB(t testing.TB, cfg projections.Config) *projections.DB {
	t.Helper()
	db, err := projections.Open(cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.Path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close(%s): %v", cfg.Path, err)
		}
	})
	return db
}

func dbPath(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), "projections", name)
}

// refs returns n journal references spread over owners.
func refs(n int) []eventstore.Reference {
	owners := []eventstore.OwnerEntity{eventstore.OwnerTask, eventstore.OwnerMission, eventstore.OwnerRepository}
	out := make([]eventstore.Reference, n)
	for i := range out {
		out[i] = storetest.Ref(owners[i%len(owners)], fmt.Sprint("owner-", i%4), fmt.Sprintf("exec-%03d", i))
	}
	return out
}

// record returns the i-th record (i >= 0, after the header) of a varied
// journal: messages with deliveries, observations with signals (progress,
// needs_input, message, completed_claim), their decisions, state changes
// that open and answer input requests, activity updates with tool calls
// and owner effects.
func record(ref eventstore.Reference, i int) eventstore.Record {
	r, k := i/12, i%12
	id := func(kind eventstore.Kind, key string) string { return eventstore.RecordID(ref.JournalID, kind, key) }
	obs := func(oid string, p eventstore.SignalPayload) *eventstore.Observation {
		return &eventstore.Observation{ObservationID: oid, Source: eventstore.ObservedMCP,
			Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
	}
	state := func(key string, sc *eventstore.StateChanged) *eventstore.StateChanged {
		sc.RecordID = id(eventstore.KindStateChanged, key)
		return sc
	}
	switch k {
	case 0:
		if r == 0 {
			return state("start", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
				Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityPlanning})
		}
		return storetest.Message(fmt.Sprint("m-", r), fmt.Sprint("do step ", r))
	case 1:
		if r%3 == 2 {
			return &eventstore.MessageDelivery{MessageID: fmt.Sprint("m-", r), Status: eventstore.DeliveryFailed,
				Transport: eventstore.TransportPTY, Reason: "pty closed"}
		}
		return &eventstore.MessageDelivery{MessageID: fmt.Sprint("m-", r), Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportPTY}
	case 2:
		return obs(fmt.Sprintf("o-%d-p", r), &eventstore.ProgressSignal{Summary: fmt.Sprint("working on ", r)})
	case 3:
		return &eventstore.Decision{DecisionID: fmt.Sprintf("d-%d-p", r), ObservationID: fmt.Sprintf("o-%d-p", r), Action: eventstore.ActionRecordOnly}
	case 4:
		n := int64(100 * r)
		a := &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting,
			Progress:  &eventstore.Progress{Summary: fmt.Sprint("step ", r)},
			Telemetry: &eventstore.Telemetry{TotalTokens: &n, ActiveToolName: "bash"}}
		// A tool call starts in one round and ends in the next, so that
		// its item is completed in place, often in a later batch.
		switch {
		case r%2 == 0:
			a.CurrentTarget = &eventstore.Target{Kind: eventstore.TargetCommand, Path: fmt.Sprint("make step-", r)}
			a.ToolCall = &eventstore.ToolCall{ID: fmt.Sprint("call-", r), Name: "bash", Status: eventstore.ToolCallStarted}
		case r%4 == 3:
			exit := int64(2)
			a.ToolCall = &eventstore.ToolCall{ID: fmt.Sprint("call-", r-1), Name: "bash", Status: eventstore.ToolCallFailed,
				Error: "exit status 2", ExitCode: &exit, Output: fmt.Sprint("step ", r-1, " failed\n")}
		default:
			a.ToolCall = &eventstore.ToolCall{ID: fmt.Sprint("call-", r-1), Name: "bash", Status: eventstore.ToolCallSucceeded,
				Output: fmt.Sprint("step ", r-1, " ok\n")}
		}
		a.RecordID = id(eventstore.KindActivity, fmt.Sprint("a-", r))
		return a
	case 5:
		return obs(fmt.Sprintf("o-%d-n", r), &eventstore.NeedsInputSignal{RequestID: fmt.Sprint("req-", r),
			Question: fmt.Sprintf("proceed with step %d?", r), Choices: []string{"yes", "no"}})
	case 6:
		return &eventstore.Decision{DecisionID: fmt.Sprintf("d-%d-n", r), ObservationID: fmt.Sprintf("o-%d-n", r),
			Action: eventstore.ActionUpdateState, Reason: "needs input"}
	case 7:
		return state(fmt.Sprint("open-", r), &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator,
			CurrentInputRequestID: eventstore.SetInputRequest(fmt.Sprint("req-", r))})
	case 8:
		payload, _ := json.Marshal(map[string]string{"text": "yes", "requestId": fmt.Sprint("req-", r)})
		return &eventstore.MessageAccepted{MessageID: fmt.Sprint("answer-", r), Source: eventstore.SourceOperator,
			MessageType: "prompt", Payload: payload, MutatesContext: true}
	case 9:
		return state(fmt.Sprint("answered-", r), &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous,
			Activity:              []eventstore.Activity{eventstore.ActivityExecuting, eventstore.ActivityReasoning}[r%2],
			CurrentInputRequestID: eventstore.ClearInputRequest()})
	case 10:
		if r%2 == 1 {
			return obs(fmt.Sprintf("o-%d-c", r), &eventstore.CompletedClaimSignal{Summary: fmt.Sprint("step ", r, " done")})
		}
		return obs(fmt.Sprintf("o-%d-m", r), &eventstore.MessageSignal{Text: fmt.Sprint("note ", r)})
	default:
		return &eventstore.OwnerEffect{EffectID: fmt.Sprint("e-", r), OwnerEntity: ref.OwnerEntity, EffectType: "step-finished"}
	}
}

// finish is the state change that ends a journal.
func finish(ref eventstore.Reference, lc eventstore.Lifecycle) *eventstore.StateChanged {
	sc := &eventstore.StateChanged{Lifecycle: lc, Attention: eventstore.AttentionNone, Reason: "exit status 0"}
	sc.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "finish")
	return sc
}

// writeJournals creates the journals and appends perJournal records to
// each, one goroutine per journal, so their records interleave in the log.
func writeJournals(t testing.TB, s *eventstore.JetStreamStore, rs []eventstore.Reference, from, perJournal int) {
	t.Helper()
	if err := appendJournals(s, rs, from, perJournal); err != nil {
		t.Fatal(err)
	}
}

// appendJournals is writeJournals for any goroutine.
func appendJournals(s *eventstore.JetStreamStore, rs []eventstore.Reference, from, perJournal int) error {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, len(rs))
	for j, ref := range rs {
		wg.Go(func() {
			if from == 0 {
				if _, err := s.EnsureJournal(ctx, ref, storetest.Header("agent-"+ref.OwnerID)); err != nil {
					errs[j] = fmt.Errorf("ensure %s: %w", ref, err)
					return
				}
			}
			for i := from; i < from+perJournal; i++ {
				if _, err := s.Append(ctx, ref, record(ref, i)); err != nil {
					errs[j] = fmt.Errorf("append %d to %s: %w", i, ref, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func appendRecord(t testing.TB, s *eventstore.JetStreamStore, ref eventstore.Reference, r eventstore.Record) {
	t.Helper()
	if _, err := s.Append(context.Background(), ref, r); err != nil {
		t.Fatalf("append %s to %s: %v", r.Kind(), ref, err)
	}
}

func lastOffset(t testing.TB, s *eventstore.JetStreamStore) uint64 {
	t.Helper()
	last, err := s.LastOffset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func catchUp(t testing.TB, db *projections.DB, s projections.Source) {
	t.Helper()
	if err := db.CatchUp(context.Background(), s, nil); err != nil {
		t.Fatalf("CatchUp(%s): %v", db.Path(), err)
	}
}

// replay folds a journal read from the store.
func replay(t testing.TB, s *eventstore.JetStreamStore, ref eventstore.Reference) *execution.State {
	t.Helper()
	var recs []eventstore.Record
	for _, e := range storetest.Collect(t, s.ReadJournal(context.Background(), ref, 1)) {
		recs = append(recs, e.Record)
	}
	st, err := execution.Replay(recs)
	if err != nil {
		t.Fatalf("replay %s: %v", ref, err)
	}
	return st
}

// withoutTimeline returns a copy of s with the timeline left out.
func withoutTimeline(s *execution.State) execution.State {
	c := *s
	c.Timeline = nil
	return c
}

// fullTimeline pages through an execution's whole timeline, quiet items
// included, newest first, checking the cursors on the way.
func fullTimeline(t testing.TB, db *projections.DB, id string, limit int) []execution.TimelineItem {
	t.Helper()
	var all []execution.TimelineItem
	before := uint64(0)
	for page := 0; ; page++ {
		items, next, err := db.QueryTimeline(id, projections.TimelineQuery{Before: before, Limit: limit, All: true})
		if err != nil {
			t.Fatalf("Timeline(%s, %d, %d): %v", id, before, limit, err)
		}
		for _, it := range items {
			if before != 0 && it.Sequence >= before {
				t.Fatalf("Timeline(%s, %d): item at sequence %d, want below %d", id, before, it.Sequence, before)
			}
		}
		if len(items) > limit {
			t.Fatalf("Timeline(%s, %d, %d) returned %d items", id, before, limit, len(items))
		}
		all = append(all, items...)
		if next == 0 {
			return all
		}
		if len(items) == 0 || next != items[len(items)-1].Sequence {
			t.Fatalf("Timeline(%s, %d): next %d, want the last item's sequence", id, before, next)
		}
		before = next
		if page > 100000 {
			t.Fatal("Timeline paging does not end")
		}
	}
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// checkAgainstReplay compares every execution and its whole timeline with
// a replay of its journal.
func checkAgainstReplay(t testing.TB, db *projections.DB, s *eventstore.JetStreamStore, rs []eventstore.Reference, pageLimit int) {
	t.Helper()
	for _, ref := range rs {
		want := replay(t, s, ref)
		got, err := db.Execution(ref.AgentExecutionID)
		if err != nil {
			t.Fatalf("Execution(%s): %v", ref.AgentExecutionID, err)
		}
		if len(got.Timeline) != 0 {
			t.Errorf("Execution(%s) has %d timeline items, want none", ref.AgentExecutionID, len(got.Timeline))
		}
		if diff := cmp.Diff(withoutTimeline(want), withoutTimeline(got)); diff != "" {
			t.Fatalf("Execution(%s) differs from its replay (-replay +projection):\n%s", ref.AgentExecutionID, diff)
		}
		items := fullTimeline(t, db, ref.AgentExecutionID, pageLimit)
		if diff := cmp.Diff(reversed(want.Timeline), items); diff != "" {
			t.Fatalf("Timeline(%s) differs from its replay reversed (-replay +projection):\n%s", ref.AgentExecutionID, diff)
		}
		checkRun(t, db, s, ref)
	}
}

// checkRun compares an execution's contract run with a fold of its
// journal, and finds it among its session's runs.
func checkRun(t testing.TB, db *projections.DB, s *eventstore.JetStreamStore, ref eventstore.Reference) {
	t.Helper()
	var recs []eventstore.Record
	for _, e := range storetest.Collect(t, s.ReadJournal(context.Background(), ref, 1)) {
		recs = append(recs, e.Record)
	}
	want := contract.Fold(recs)
	got, err := db.Run(ref.AgentExecutionID)
	if err != nil {
		t.Fatalf("Run(%s): %v", ref.AgentExecutionID, err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(contract.Run{})); diff != "" {
		t.Fatalf("Run(%s) differs from a fold of its journal (-fold +projection):\n%s", ref.AgentExecutionID, diff)
	}
	runs, err := db.SessionRuns(want.SessionID)
	if err != nil || !slices.ContainsFunc(runs, func(r *contract.Run) bool { return r.RunID == ref.AgentExecutionID }) {
		t.Fatalf("SessionRuns(%s) = %d runs, %v: want %s among them", want.SessionID, len(runs), err, ref.AgentExecutionID)
	}
}

// checkSameAs compares every execution and timeline of two projections.
func checkSameAs(t testing.TB, got, want *projections.DB, rs []eventstore.Reference) {
	t.Helper()
	for _, ref := range rs {
		id := ref.AgentExecutionID
		sameView(t, "Execution", id, want.Execution, got.Execution)
		sameView(t, "Run", id, want.Run, got.Run, cmpopts.IgnoreUnexported(contract.Run{}))
		if diff := cmp.Diff(fullTimeline(t, want, id, projections.MaxTimelineLimit), fullTimeline(t, got, id, projections.MaxTimelineLimit)); diff != "" {
			t.Fatalf("Timeline(%s) differs (-incremental +rebuilt):\n%s", id, diff)
		}
	}
	sameView(t, "List", projections.Filter{}, want.List, got.List)
}

// sameView fails t unless the view what, read for key, is the same in the
// rebuilt projection (got) as in the incremental one (want).
func sameView[K, V any](t testing.TB, what string, key K, want, got func(K) (V, error), opts ...cmp.Option) {
	t.Helper()
	w, err := want(key)
	if err != nil {
		t.Fatalf("reference %s(%v): %v", what, key, err)
	}
	g, err := got(key)
	if err != nil {
		t.Fatalf("%s(%v): %v", what, key, err)
	}
	if diff := cmp.Diff(w, g, opts...); diff != "" {
		t.Fatalf("%s(%v) differs (-incremental +rebuilt):\n%s", what, key, diff)
	}
}
