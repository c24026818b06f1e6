package projections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/projections"
)

// withID gives a record an explicit record id, so that the store keeps a
// record whose message, observation or decision id repeats an earlier one.
func withID[R eventstore.Record](r R, ref eventstore.Reference, key string) R {
	r.RecordBase().RecordID = eventstore.RecordID(ref.JournalID, r.Kind(), key)
	return r
}

// duplicates appends, after a few ordinary records, records that repeat a
// message id, an observation id and the ids a decision is keyed by, each
// under a new record id: replay folds them without effect, and so must the
// projection, whichever batch first saw the id.
func duplicates(t *testing.T, s *eventstore.JetStreamStore, ref eventstore.Reference, round int) {
	t.Helper()
	answer, _ := json.Marshal(map[string]string{"text": "yes", "requestId": "req-1"})
	recs := []eventstore.Record{
		withID(storetest.Message(fmt.Sprint("m-", round), "first"), ref, fmt.Sprint("m-", round, "-a")),
		withID(storetest.Progress(fmt.Sprint("o-", round), "first"), ref, fmt.Sprint("o-", round, "-a")),
		withID(&eventstore.Decision{DecisionID: fmt.Sprint("d-", round), ObservationID: fmt.Sprint("o-", round), Action: eventstore.ActionRecordOnly}, ref, fmt.Sprint("d-", round, "-a")),
		withID(&eventstore.MessageAccepted{MessageID: fmt.Sprint("answer-", round), Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: answer, MutatesContext: true}, ref, fmt.Sprint("answer-", round, "-a")),
		withID(&eventstore.Decision{DecisionID: fmt.Sprint("d-answer-", round), MessageID: fmt.Sprint("answer-", round), Action: eventstore.ActionRecordOnly,
			Reason: "first"}, ref, fmt.Sprint("d-answer-", round, "-a")),
		storetest.Activity(ref.JournalID, round),
		// The repeats.
		withID(storetest.Message(fmt.Sprint("m-", round), "again"), ref, fmt.Sprint("m-", round, "-b")),
		withID(storetest.Progress(fmt.Sprint("o-", round), "again"), ref, fmt.Sprint("o-", round, "-b")),
		withID(&eventstore.Decision{DecisionID: fmt.Sprint("d-", round, "-again"), ObservationID: fmt.Sprint("o-", round), Action: eventstore.ActionUpdateState},
			ref, fmt.Sprint("d-", round, "-b")),
		withID(&eventstore.Decision{DecisionID: fmt.Sprint("d-answer-", round, "-again"), MessageID: fmt.Sprint("answer-", round), Action: eventstore.ActionReject,
			Reason: "again"}, ref, fmt.Sprint("d-answer-", round, "-b")),
		withID(storetest.Message(fmt.Sprint("answer-", round), "an id used by a message before"), ref, fmt.Sprint("answer-", round, "-b")),
		// Ids of an earlier round.
		withID(storetest.Message("m-0", "from the first round"), ref, fmt.Sprint("m-0-", round)),
		withID(storetest.Progress("o-0", "from the first round"), ref, fmt.Sprint("o-0-", round)),
	}
	for _, r := range recs {
		appendRecord(t, s, ref, r)
	}
}

func TestDuplicateIdsFoldLikeReplay(t *testing.T) {
	s, rs := writtenLog(t, 3, 10)
	for round := range 3 {
		for _, ref := range rs {
			duplicates(t, s, ref, round)
		}
	}
	for _, batch := range []int{1, 4, 1000} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			path := dbPath(t, "p.db")
			db := openDB(t, projections.Config{Path: path, BatchSize: batch})
			catchUp(t, db, s)
			checkAgainstReplay(t, db, s, rs, 100)
		})
	}

	// A DB opened on a file that holds the ids, with nothing decoded yet,
	// still recognizes them.
	path := dbPath(t, "reopened.db")
	first := openDB(t, projections.Config{Path: path})
	catchUp(t, first, s)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ref := range rs {
		duplicates(t, s, ref, 3)
	}
	second := openDB(t, projections.Config{Path: path, BatchSize: 5})
	catchUp(t, second, s)
	checkAgainstReplay(t, second, s, rs, 100)
	st, err := second.Execution(rs[0].AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Decisions["answer-1"].Reason; got != "first" {
		t.Errorf("decision on answer-1 has reason %q, want the first decision's %q", got, "first")
	}
}

func TestWaitFor(t *testing.T) {
	s, rs := writtenLog(t, 2, 5)
	db := openDB(t, projections.Config{Path: dbPath(t, "p.db")})
	ctx := context.Background()

	// Reached already: at once.
	if err := db.WaitFor(ctx, 0); err != nil {
		t.Fatalf("WaitFor(0): %v", err)
	}
	// Not reached: until ctx ends.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.WaitFor(cancelled, 1); err != context.Canceled {
		t.Fatalf("WaitFor with an ended ctx: got %v, want context.Canceled", err)
	}

	// Reached while waiting: when the projector applies it.
	last := lastOffset(t, s)
	waited := make(chan error, 1)
	go func() { waited <- db.WaitFor(ctx, last+1) }()
	stop := runProject(t, db, s)
	appendRecord(t, s, rs[0], storetest.Message("late", "late"))
	if err := <-waited; err != nil {
		t.Fatalf("WaitFor(%d): %v", last+1, err)
	}
	if cp, _ := db.Checkpoint(); cp < last+1 {
		t.Fatalf("WaitFor returned at checkpoint %d, want %d or more", cp, last+1)
	}
	got, err := db.Execution(rs[0].AgentExecutionID)
	if err != nil || got.ProcessedMessages["late"] == 0 {
		t.Fatalf("after WaitFor: Execution = %v, %v; want the late message processed", got, err)
	}
	stop()

	// Closing wakes a waiter with ErrClosed.
	go func() { waited <- db.WaitFor(ctx, 1<<40) }()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != projections.ErrClosed {
		t.Fatalf("WaitFor across Close: got %v, want ErrClosed", err)
	}
}
