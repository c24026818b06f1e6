package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// queueRig is a runtime with a queue directory and a limit of running
// agents, over a real log.
type queueRig struct {
	*rig
	queueDir string
}

func newQueueRig(t *testing.T, limit int) *queueRig {
	t.Helper()
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	q := &queueRig{rig: &rig{store: s, agent: fixtures.AgentBinary(t), hosted: filepath.Join(t.TempDir(), "hosted")},
		queueDir: filepath.Join(t.TempDir(), "queue")}
	q.rt = q.open(t, limit)
	return q
}

// open starts a runtime on the rig's store and directories.
func (q *queueRig) open(t *testing.T, limit int) *runtime.Runtime {
	t.Helper()
	rt := runtime.New(runtime.Config{Store: q.store, StopGrace: 500 * time.Millisecond, HostDir: q.hosted,
		QueueDir: q.queueDir, MaxRunning: limit})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.Close(ctx)
	})
	return rt
}

func dispatchAs(mode eventstore.DispatchMode, scheduled time.Time) *eventstore.DispatchContext {
	d := &eventstore.DispatchContext{OriginSurface: eventstore.OriginMobile, OriginProductID: "flowmonk", DispatchMode: mode,
		InitiatedAt: time.Now().UTC().Format(time.RFC3339)}
	if !scheduled.IsZero() {
		d.ScheduledFor = scheduled.UTC().Format(time.RFC3339Nano)
	}
	return d
}

func (q *queueRig) launchDispatched(t *testing.T, d *eventstore.DispatchContext, prompt string, steps ...string) eventstore.Reference {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref, err := q.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-queue", Agent: "generic",
		Command: append([]string{q.agent}, steps...), Prompt: prompt, Env: []string{"QUEUE_SECRET=s3cret"}, Dispatch: d})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// stateRecord finds the state change the runtime wrote under key.
func stateRecord(recs []eventstore.Record, ref eventstore.Reference, key string) *eventstore.StateChanged {
	id := eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)
	for _, r := range recs {
		if st, ok := r.(*eventstore.StateChanged); ok && st.RecordID == id {
			return st
		}
	}
	return nil
}

// checkQueued checks a run journaled and waiting: header with its
// dispatch context, prompt, lifecycle starting with a queued reason, no
// process.
func (q *queueRig) checkQueued(t *testing.T, ref eventstore.Reference, reason string) {
	t.Helper()
	recs := q.records(t, ref)
	h, ok := recs[0].(*eventstore.Header)
	if !ok || h.DispatchContext == nil || !h.DispatchContext.DispatchMode.Waits() {
		t.Fatalf("header %+v, want one with a queued or scheduled dispatch context", recs[0])
	}
	st := q.replay(t, ref)
	if st.Lifecycle != eventstore.LifecycleStarting || !strings.HasPrefix(st.LifecycleReason, reason) {
		t.Fatalf("state %s (%s), want starting (%s…)", st.Lifecycle, st.LifecycleReason, reason)
	}
	if st.DispatchContext == nil || *st.DispatchContext != *h.DispatchContext {
		t.Fatalf("state dispatchContext %+v, want the header's %+v", st.DispatchContext, h.DispatchContext)
	}
	if stateRecord(recs, ref, "lifecycle:running") != nil || q.rt.Done(ref.AgentExecutionID) != nil {
		t.Fatalf("queued run %s has started", ref.AgentExecutionID)
	}
	for _, r := range recs {
		if strings.Contains(string(mustEncode(t, r)), "s3cret") {
			t.Fatalf("the journal holds the launch's environment: %s", mustEncode(t, r))
		}
	}
}

func mustEncode(t *testing.T, r eventstore.Record) []byte {
	t.Helper()
	data, err := eventstore.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestQueuedRunWaitsForASlot: with a limit of one running agent, a queued
// launch is journaled at once and starts only once the running one ends.
func TestQueuedRunWaitsForASlot(t *testing.T) {
	q := newQueueRig(t, 1)
	first := q.launchDispatched(t, nil, "", "sleep:60s")
	q.waitState(t, first, "first running", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleRunning })
	second := q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "hello", "echo:1")
	q.checkQueued(t, second, "queued: position 1")
	list := q.rt.Queue()
	if len(list) != 1 || list[0].AgentExecutionID != second.AgentExecutionID || list[0].Position != 1 || list[0].DispatchContext.OriginProductID != "flowmonk" {
		t.Fatalf("Queue() = %+v, want %s at position 1", list, second.AgentExecutionID)
	}
	third := q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "", "say:third")
	q.checkQueued(t, third, "queued: position 2")
	if list := q.rt.Queue(); len(list) != 2 || list[1].AgentExecutionID != third.AgentExecutionID || list[1].Position != 2 {
		t.Fatalf("Queue() = %+v, want %s second", list, third.AgentExecutionID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.rt.Stop(ctx, first.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	st := q.waitState(t, second, "second completed", func(st *execution.State) bool { return st.Lifecycle.Final() })
	if st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("second ended %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	q.waitState(t, third, "third completed", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleCompleted })
	// The order is the journals': the first ended before the second
	// started, and the second before the third.
	firstEnd := stateRecord(q.records(t, first), first, "lifecycle:final")
	secondRecs := q.records(t, second)
	secondRun, secondEnd := stateRecord(secondRecs, second, "lifecycle:running"), stateRecord(secondRecs, second, "lifecycle:final")
	thirdRun := stateRecord(q.records(t, third), third, "lifecycle:running")
	if firstEnd == nil || secondRun == nil || thirdRun == nil || secondRun.OccurredAt.Before(firstEnd.OccurredAt) || thirdRun.OccurredAt.Before(secondEnd.OccurredAt) {
		t.Fatalf("first ended %v, second ran %v and ended %v, third ran %v: want each to start after the one before ended", firstEnd, secondRun, secondEnd, thirdRun)
	}
	delivered := false
	for _, r := range secondRecs {
		if d, ok := r.(*eventstore.MessageDelivery); ok && d.MessageID == "prompt" && d.Status == eventstore.DeliveryDelivered {
			delivered = true
		}
	}
	if !delivered {
		t.Fatal("the queued run's prompt was not delivered when it started")
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 0 {
		t.Fatalf("queue dir holds %d files after every run started, want none", len(entries))
	}
}

// TestScheduledRunWaitsForItsTime: a scheduled run does not start before
// its time even with a slot free; a queued one launched after it does.
func TestScheduledRunWaitsForItsTime(t *testing.T) {
	q := newQueueRig(t, 2)
	at := time.Now().Add(1500 * time.Millisecond)
	scheduled := q.launchDispatched(t, dispatchAs(eventstore.DispatchScheduled, at), "", "say:scheduled")
	q.checkQueued(t, scheduled, "scheduled for ")
	queued := q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "", "say:queued")
	q.waitState(t, queued, "queued completed", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleCompleted })
	if st := q.replay(t, scheduled); st.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("scheduled run is %s before its time (%s), want starting", st.Lifecycle, st.LifecycleReason)
	}
	q.waitState(t, scheduled, "scheduled completed", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleCompleted })
	recs := q.records(t, scheduled)
	run := stateRecord(recs, scheduled, "lifecycle:running")
	queuedEnd := stateRecord(q.records(t, queued), queued, "lifecycle:final")
	if run == nil || run.OccurredAt.Before(at.Truncate(time.Millisecond)) || run.OccurredAt.Before(queuedEnd.OccurredAt) {
		t.Fatalf("scheduled run started %v, want not before its time %v nor before the queued run ended %v", run, at, queuedEnd.OccurredAt)
	}
}

// queueBehindOne launches a run that takes the one slot and a queued run
// behind it, and returns both.
func (q *queueRig) queueBehindOne(t *testing.T) (first, queued eventstore.Reference) {
	t.Helper()
	first = q.launchDispatched(t, nil, "", "sleep:60s")
	q.waitState(t, first, "first running", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleRunning })
	queued = q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "hello", "echo:1")
	q.checkQueued(t, queued, "queued:")
	return first, queued
}

// TestStopWhileQueued: a queued run stopped ends cancelled with an
// interruption of cause canceled, and its process never starts.
func TestStopWhileQueued(t *testing.T) {
	q := newQueueRig(t, 1)
	first, queued := q.queueBehindOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.rt.Stop(ctx, queued.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if list := q.rt.Queue(); len(list) != 0 {
		t.Fatalf("Queue() = %+v after the stop, want empty", list)
	}
	if err := q.rt.Stop(ctx, first.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	q.wait(t, first)
	st := q.replay(t, queued)
	if st.Lifecycle != eventstore.LifecycleCancelled || st.Interrupted == nil || st.Interrupted.Reason != eventstore.InterruptCanceled {
		t.Fatalf("stopped queued run: %s (%s), interrupted %+v; want cancelled, interrupted canceled", st.Lifecycle, st.LifecycleReason, st.Interrupted)
	}
	recs := q.records(t, queued)
	if stateRecord(recs, queued, "lifecycle:running") != nil {
		t.Fatal("the stopped queued run started")
	}
	for _, r := range recs {
		if d, ok := r.(*eventstore.MessageDelivery); ok && d.Status != eventstore.DeliveryFailed {
			t.Fatalf("prompt delivery %+v, want failed: the run never started", d)
		}
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 0 {
		t.Fatalf("queue dir holds %d files after the stop, want none", len(entries))
	}
}

// TestQueuedRunSurvivesRestart: a run queued behind a running one, kept
// in the queue directory, starts under the next runtime on the same log;
// a queued run whose journal ended meanwhile is dropped.
func TestQueuedRunSurvivesRestart(t *testing.T) {
	q := newQueueRig(t, 1)
	first := q.launchDispatched(t, nil, "", "sleep:60s")
	q.waitState(t, first, "first running", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleRunning })
	queued := q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "hello", "echo:1")
	ended := q.launchDispatched(t, dispatchAs(eventstore.DispatchQueued, time.Time{}), "", "say:never")
	q.checkQueued(t, queued, "queued:")
	entries, err := os.ReadDir(q.queueDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("queue dir: %d files (%v), want 2", len(entries), err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("queue file %s mode %v (%v), want 0600: it holds the environment", e.Name(), info.Mode(), err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := q.replay(t, queued); st.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("queued run is %s after the runtime closed, want still starting", st.Lifecycle)
	}
	// Another host ends one of the queued runs while no runtime runs.
	fin := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleFailed, Reason: "ended elsewhere"}
	fin.RecordID = eventstore.RecordID(ended.JournalID, eventstore.KindStateChanged, "elsewhere")
	if _, err := q.store.Append(ctx, ended, fin); err != nil {
		t.Fatal(err)
	}

	q.rt = q.open(t, 1)
	ids, err := q.rt.Requeue(ctx)
	if err != nil || len(ids) != 1 || ids[0] != queued.AgentExecutionID {
		t.Fatalf("Requeue() = %v, %v; want [%s]", ids, err, queued.AgentExecutionID)
	}
	if _, err := q.rt.Recover(ctx, runtime.RecoverAll); err != nil {
		t.Fatal(err)
	}
	st := q.waitState(t, queued, "queued run completed", func(st *execution.State) bool { return st.Lifecycle.Final() })
	if st.Lifecycle != eventstore.LifecycleCompleted || st.Interrupted != nil {
		t.Fatalf("requeued run ended %s (%s), interrupted %+v; want completed", st.Lifecycle, st.LifecycleReason, st.Interrupted)
	}
	if got := q.replay(t, ended); got.Lifecycle != eventstore.LifecycleFailed || stateRecord(q.records(t, ended), ended, "lifecycle:running") != nil {
		t.Fatalf("run ended elsewhere is %s, want failed and never started", got.Lifecycle)
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 0 {
		t.Fatalf("queue dir holds %d files, want none", len(entries))
	}
}

// TestDispatchRefused: a launch with a bad dispatch context is refused,
// naming the field, and nothing is journaled.
func TestDispatchRefused(t *testing.T) {
	q := newQueueRig(t, 1)
	good := func() *eventstore.DispatchContext { return dispatchAs(eventstore.DispatchQueued, time.Time{}) }
	for _, tc := range []struct {
		name  string
		edit  func(d *eventstore.DispatchContext)
		field string
	}{
		{"unknown surface", func(d *eventstore.DispatchContext) { d.OriginSurface = "fax" }, "originSurface"},
		{"empty product", func(d *eventstore.DispatchContext) { d.OriginProductID = "" }, "originProductId"},
		{"unsafe product", func(d *eventstore.DispatchContext) { d.OriginProductID = "a b" }, "originProductId"},
		{"unknown mode", func(d *eventstore.DispatchContext) { d.DispatchMode = "soon" }, "dispatchMode"},
		{"bad initiatedAt", func(d *eventstore.DispatchContext) { d.InitiatedAt = "now" }, "initiatedAt"},
		{"scheduled without time", func(d *eventstore.DispatchContext) { d.DispatchMode = eventstore.DispatchScheduled }, "scheduledFor"},
		{"time without schedule", func(d *eventstore.DispatchContext) { d.ScheduledFor = "2026-01-01T00:00:00Z" }, "scheduledFor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good()
			tc.edit(d)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			seed := "refused-" + strings.ReplaceAll(tc.name, " ", "-")
			_, err := q.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-queue", Seed: seed,
				Agent: "generic", Command: []string{q.agent, "say:x"}, Dispatch: d})
			if !errors.Is(err, runtime.ErrBadLaunch) || !strings.Contains(err.Error(), "dispatchContext."+tc.field) {
				t.Fatalf("Launch = %v, want ErrBadLaunch naming dispatchContext.%s", err, tc.field)
			}
			id, _ := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-queue", seed)
			if _, err := q.store.Lookup(ctx, id); !errors.Is(err, eventstore.ErrJournalNotFound) {
				t.Fatalf("Lookup(%s) = %v, want ErrJournalNotFound: nothing journaled", id, err)
			}
		})
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 0 {
		t.Fatalf("queue dir holds %d files, want none", len(entries))
	}
}

// TestRemoteAndInteractiveStartAtOnce: dispatch modes remote and
// interactive start whatever the count of running agents, and count
// toward the limit themselves.
func TestRemoteAndInteractiveStartAtOnce(t *testing.T) {
	q := newQueueRig(t, 1)
	first := q.launchDispatched(t, dispatchAs(eventstore.DispatchRemote, time.Time{}), "", "sleep:60s")
	second := q.launchDispatched(t, dispatchAs(eventstore.DispatchInteractive, time.Time{}), "", "sleep:60s")
	for _, ref := range []eventstore.Reference{first, second} {
		st := q.waitState(t, ref, "running at once", func(st *execution.State) bool { return st.Lifecycle != eventstore.LifecycleStarting })
		if st.Lifecycle != eventstore.LifecycleRunning || st.DispatchContext == nil {
			t.Fatalf("%s is %s (%s), want running with its dispatch context", ref.AgentExecutionID, st.Lifecycle, st.LifecycleReason)
		}
	}
	at := time.Now().Add(time.Hour)
	scheduled := q.launchDispatched(t, dispatchAs(eventstore.DispatchScheduled, at), "", "say:later")
	list := q.rt.Queue()
	if len(list) != 1 || list[0].AgentExecutionID != scheduled.AgentExecutionID || list[0].ScheduledFor == "" {
		t.Fatalf("Queue() = %+v, want the scheduled run with its time", list)
	}
	if got := q.rt.Running(); got != 2 {
		t.Fatalf("Running() = %d, want 2: both immediate launches count", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ref := range []eventstore.Reference{first, second} {
		if err := q.rt.Stop(ctx, ref.AgentExecutionID); err != nil {
			t.Fatal(err)
		}
	}
	// Slots are free, but its time has not come.
	if st := q.replay(t, scheduled); st.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("scheduled run is %s an hour early, want starting", st.Lifecycle)
	}
	if err := q.rt.Stop(ctx, scheduled.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := q.replay(t, scheduled); st.Lifecycle != eventstore.LifecycleCancelled {
		t.Fatalf("stopped scheduled run is %s, want cancelled", st.Lifecycle)
	}
}

// TestQueuedTwice: launching a queued run's seed again is refused; the
// first stays queued once, with its file.
func TestQueuedTwice(t *testing.T) {
	q := newQueueRig(t, 1)
	first := q.launchDispatched(t, nil, "", "sleep:60s")
	q.waitState(t, first, "first running", func(st *execution.State) bool { return st.Lifecycle == eventstore.LifecycleRunning })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := dispatchAs(eventstore.DispatchQueued, time.Time{})
	req := runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-queue", Seed: "twice", Agent: "generic",
		Command: []string{q.agent, "say:once"}, Dispatch: d}
	ref, err := q.rt.Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.rt.Launch(ctx, req); !errors.Is(err, runtime.ErrBadLaunch) || !strings.Contains(err.Error(), "queued already") {
		t.Fatalf("second Launch = %v, want ErrBadLaunch, queued already", err)
	}
	if list := q.rt.Queue(); len(list) != 1 || list[0].AgentExecutionID != ref.AgentExecutionID {
		t.Fatalf("Queue() = %+v, want %s once", list, ref.AgentExecutionID)
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 1 {
		t.Fatalf("queue dir holds %d files, want the first's", len(entries))
	}
}

// TestQueuedRunStartedBeforeACrashIsNotStartedAgain: a runtime that had let
// a queued run go, and marked it hosted (which comes before its process
// starts), died before the journal said it ran. After the restart, the
// queue does not start it a second time: recovery deals with it.
func TestQueuedRunStartedBeforeACrashIsNotStartedAgain(t *testing.T) {
	q := newQueueRig(t, 1)
	_, queued := q.queueBehindOne(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// What a runtime that died starting it leaves: a host directory, its
	// lock free, naming the run.
	gone := filepath.Join(q.hosted, "host-gone")
	if err := os.MkdirAll(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(queued)
	esc, err := eventstore.EscapeID(queued.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, esc+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}

	q.rt = q.open(t, 1)
	ids, err := q.rt.Requeue(ctx)
	if err != nil || len(ids) != 0 {
		t.Fatalf("Requeue() = %v, %v; want nothing requeued", ids, err)
	}
	if entries, _ := os.ReadDir(q.queueDir); len(entries) != 0 {
		t.Fatalf("queue dir holds %d files, want none", len(entries))
	}
	if _, err := q.rt.Recover(ctx, runtime.RecoverHosted); err != nil {
		t.Fatal(err)
	}
	st := q.replay(t, queued)
	if !st.Lifecycle.Final() || stateRecord(q.records(t, queued), queued, "lifecycle:running") != nil {
		t.Fatalf("the run is %s (%s); want it ended by recovery, never started again", st.Lifecycle, st.LifecycleReason)
	}
}
