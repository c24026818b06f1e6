package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/durable"
)

// The queue. A launch whose dispatch context says queued or scheduled is
// journaled at once (header, prompt, and a state.changed saying it waits)
// and started later, when fewer than Config.MaxRunning agents are live
// here and, for a scheduled one, not before its scheduledFor. Interactive
// and remote launches start at once and count toward the limit like any
// live execution. The queue lives in this package, not a package of its
// own, because starting a queued run is the second half of Launch (the
// process, its lane, its hosted file and its prompt's delivery are the
// runtime's), the limit counts the runtime's live executions, and Stop
// has to find a run that is queued as well as one that runs.
//
// What starting a queued run needs (command, environment, directory,
// posture, shape, time limit, prompt) is kept in Config.QueueDir, one
// 0600 file per run: the environment may hold secrets, so it never goes
// in the journal. Requeue reads those files after a restart.

// queueSuffix ends the name of a queued run's file in QueueDir.
const queueSuffix = ".json"

// Reasons of the state.changed records of the queue. The key prefixes are
// persisted in record ids: never change them.
const (
	queuedKey          = "dispatch:queued"
	cancelQueuedReason = "stopped while queued: it never started"
)

// QueuedRun is a launch waiting in the queue.
type QueuedRun struct {
	// Position is 1 for the run that starts next.
	Position         int                        `json:"position"`
	AgentExecutionID string                     `json:"agentExecutionId"`
	Journal          eventstore.Reference       `json:"journal"`
	Agent            string                     `json:"agent"`
	QueuedAt         time.Time                  `json:"queuedAt"`
	ScheduledFor     string                     `json:"scheduledFor,omitempty"`
	DispatchContext  eventstore.DispatchContext `json:"dispatchContext"`
}

// queuedRun is a launch in the queue: its plan, and when it was queued.
type queuedRun struct {
	plan     *launchPlan
	queuedAt time.Time
}

// eligible is when the run may start: at once for a queued one, at its
// time for a scheduled one.
func (q *queuedRun) eligible() time.Time {
	if at := q.plan.req.Dispatch.Scheduled(); at.After(q.queuedAt) {
		return at
	}
	return q.queuedAt
}

// compareQueued orders the queue: who may start first, then who came
// first.
func compareQueued(a, b *queuedRun) int {
	return cmp.Or(a.eligible().Compare(b.eligible()), a.queuedAt.Compare(b.queuedAt),
		strings.Compare(a.plan.ref.AgentExecutionID, b.plan.ref.AgentExecutionID))
}

// queueFile is what QueueDir keeps of a queued run.
type queueFile struct {
	Ref      eventstore.Reference `json:"ref"`
	QueuedAt time.Time            `json:"queuedAt"`
	Request  queuedRequest        `json:"request"`
}

// queuedRequest is the part of a LaunchRequest a queued run keeps: a
// queued launch is never a fork or a resume (checkDispatch).
type queuedRequest struct {
	OwnerEntity eventstore.OwnerEntity      `json:"ownerEntity"`
	OwnerID     string                      `json:"ownerId"`
	Seed        string                      `json:"seed"`
	Agent       string                      `json:"agent"`
	Command     []string                    `json:"command,omitempty"`
	Prompt      string                      `json:"prompt,omitempty"`
	Posture     eventstore.Posture          `json:"posture,omitempty"`
	Shape       eventstore.SessionShape     `json:"shape,omitempty"`
	Dir         string                      `json:"dir,omitempty"`
	Env         []string                    `json:"env,omitempty"`
	Timeout     time.Duration               `json:"timeout,omitempty"`
	SessionID   string                      `json:"sessionId,omitempty"`
	Dispatch    *eventstore.DispatchContext `json:"dispatch"`
	EnvProfile  string                      `json:"envProfile,omitempty"`
	Sandbox     *SandboxRequest             `json:"sandbox,omitempty"`
}

func (r queuedRequest) launch() LaunchRequest {
	return LaunchRequest{OwnerEntity: r.OwnerEntity, OwnerID: r.OwnerID, Seed: r.Seed, Agent: r.Agent, Command: r.Command,
		Prompt: r.Prompt, Posture: r.Posture, Shape: r.Shape, Dir: r.Dir, Env: r.Env, Timeout: r.Timeout,
		SessionID: r.SessionID, Dispatch: r.Dispatch, EnvProfile: r.EnvProfile, Sandbox: r.Sandbox}
}

// checkDispatch checks a launch's dispatch context, and that a launch that
// waits is one the queue can start later.
func checkDispatch(req LaunchRequest) error {
	d := req.Dispatch
	if d == nil {
		return nil
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLaunch, err)
	}
	if d.DispatchMode.Waits() && (req.ForkedFrom != nil || req.Resumes != nil || req.Continue != nil || req.Restored != nil || req.refused != "") {
		return fmt.Errorf("%w: a fork or a resume starts at once (dispatchMode %s or %s, got %s)", ErrBadLaunch,
			eventstore.DispatchInteractive, eventstore.DispatchRemote, d.DispatchMode)
	}
	return nil
}

// maxRunning is the limit of live executions the queue starts up to.
func (rt *Runtime) maxRunning() int {
	if rt.cfg.MaxRunning > 0 {
		return rt.cfg.MaxRunning
	}
	return goruntime.NumCPU()
}

// queuePath is the file of a queued run in QueueDir.
func (rt *Runtime) queuePath(id string) (string, error) {
	esc, err := eventstore.EscapeID(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(rt.cfg.QueueDir, esc+queueSuffix), nil
}

// keepQueued writes a queued run's file, synced, before its journal is;
// without a QueueDir the run is queued in memory only.
func (rt *Runtime) keepQueued(pl *launchPlan) error {
	pl.queuedAt = rt.cfg.Now().UTC()
	// A launch again of a run already queued (the same seed) must neither
	// replace its file nor queue it twice.
	if rt.queued(pl.ref.AgentExecutionID) {
		return fmt.Errorf("%w: execution %s is queued already", ErrBadLaunch, pl.ref.AgentExecutionID)
	}
	if rt.cfg.QueueDir == "" {
		return nil
	}
	if err := os.MkdirAll(rt.cfg.QueueDir, 0o700); err != nil {
		return err
	}
	path, err := rt.queuePath(pl.ref.AgentExecutionID)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%w: execution %s is queued already", ErrBadLaunch, pl.ref.AgentExecutionID)
	}
	r := pl.req
	data, err := json.Marshal(queueFile{Ref: pl.ref, QueuedAt: pl.queuedAt, Request: queuedRequest{
		OwnerEntity: r.OwnerEntity, OwnerID: r.OwnerID, Seed: r.Seed, Agent: r.Agent, Command: r.Command, Prompt: r.Prompt,
		Posture: r.Posture, Shape: r.Shape, Dir: r.Dir, Env: r.Env, Timeout: r.Timeout, SessionID: r.SessionID, Dispatch: r.Dispatch,
		EnvProfile: r.EnvProfile, Sandbox: r.Sandbox}})
	if err != nil {
		return err
	}
	return durable.WriteFile(path, data, 0o600)
}

// forgetQueued removes a queued run's file once it started or ended.
func (rt *Runtime) forgetQueued(id string) {
	if rt.cfg.QueueDir == "" {
		return
	}
	path, err := rt.queuePath(id)
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rt.cfg.Logger.Warn("forget a queued run", "execution", id, "err", err)
	}
}

// enqueue records that a journaled launch waits, and queues it.
func (rt *Runtime) enqueue(pl *launchPlan) error {
	q := &queuedRun{plan: pl, queuedAt: pl.queuedAt}
	rt.mu.Lock()
	ahead := 0
	for _, o := range rt.queue {
		if compareQueued(o, q) < 0 {
			ahead++
		}
	}
	limit := rt.maxRunning()
	rt.mu.Unlock()
	reason := fmt.Sprintf("queued: position %d, waiting for a free slot (limit %d running)", ahead+1, limit)
	if d := pl.req.Dispatch; d.DispatchMode == eventstore.DispatchScheduled {
		reason = fmt.Sprintf("scheduled for %s: starts then, or once a slot is free after it (limit %d running)", d.ScheduledFor, limit)
	}
	// Written before the run can start, so the journal reads starting,
	// queued, then running.
	if err := rt.appendState(pl.ref, queuedKey, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleStarting, Reason: reason}); err != nil {
		rt.forgetQueued(pl.ref.AgentExecutionID)
		rt.failLaunch(pl.ref, "the queueing was not recorded: "+err.Error())
		return fmt.Errorf("launch %s: queue it: %w", pl.ref.AgentExecutionID, err)
	}
	rt.mu.Lock()
	rt.queue = append(rt.queue, q)
	slices.SortStableFunc(rt.queue, compareQueued)
	rt.mu.Unlock()
	rt.dispatch()
	return nil
}

// dispatch starts as many eligible queued runs as the limit lets, and
// sets a timer for the next scheduled one. It is called whenever that may
// have changed: a run queued, an execution ended, a scheduled time come.
func (rt *Runtime) dispatch() {
	if rt.cfg.Shared != nil {
		// Room may have been made: the shared queue's dispatcher looks.
		rt.cfg.Shared.Kick()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.queueClosed {
		return
	}
	now := rt.cfg.Now()
	free := rt.maxRunning() - len(rt.live) - len(rt.starting)
	var next time.Time
	kept := rt.queue[:0]
	for _, q := range rt.queue {
		at := q.eligible()
		switch {
		case at.After(now):
			if next.IsZero() || at.Before(next) {
				next = at
			}
			kept = append(kept, q)
		case free > 0:
			free--
			started := make(chan struct{})
			rt.starting[q.plan.ref.AgentExecutionID] = started
			rt.starts.Add(1)
			go rt.startQueued(q, started)
		default:
			kept = append(kept, q)
		}
	}
	clear(rt.queue[len(kept):])
	rt.queue = kept
	if rt.wake != nil {
		rt.wake.Stop()
		rt.wake = nil
	}
	if !next.IsZero() {
		rt.wake = time.AfterFunc(next.Sub(now), rt.dispatch)
	}
}

// startQueued starts a run the queue let go, then lets the queue go on.
func (rt *Runtime) startQueued(q *queuedRun, started chan struct{}) {
	defer rt.starts.Done()
	id := q.plan.ref.AgentExecutionID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := rt.startFromQueue(ctx, q.plan)
	cancel()
	if err != nil {
		rt.cfg.Logger.Error("start a queued run", "execution", id, "err", err)
	}
	rt.forgetQueued(id)
	rt.mu.Lock()
	delete(rt.starting, id)
	rt.mu.Unlock()
	close(started)
	rt.dispatch()
}

// startFromQueue starts a queued run whose journal still says it is to
// start, with its prompt, accepted at launch and not delivered yet.
func (rt *Runtime) startFromQueue(ctx context.Context, pl *launchPlan) error {
	ref := pl.ref
	st := &execution.State{}
	var prompt accepted
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return fmt.Errorf("read the journal of queued %s: %w", ref.AgentExecutionID, err)
		}
		if _, err := st.Apply(e.Record); err != nil {
			return fmt.Errorf("read the journal of queued %s: %w", ref.AgentExecutionID, err)
		}
		switch r := e.Record.(type) {
		case *eventstore.MessageAccepted:
			if r.MessageID == "prompt" {
				prompt.stored = r
			}
		case *eventstore.MessageDelivery:
			if r.MessageID == "prompt" {
				prompt.stored = nil
			}
		}
	}
	if st.Journal.RecordCount == 0 || st.Lifecycle != eventstore.LifecycleStarting {
		// Ended while it waited (stopped, or by another host): it never
		// starts.
		return nil
	}
	if prompt.stored != nil {
		prompt.md, _ = pl.desc.Message("prompt")
	}
	return rt.start(ctx, pl, prompt)
}

// dequeue takes a run out of the queue, if it is there.
func (rt *Runtime) dequeue(id string) (*queuedRun, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for i, q := range rt.queue {
		if q.plan.ref.AgentExecutionID == id {
			rt.queue = slices.Delete(rt.queue, i, i+1)
			return q, true
		}
	}
	return nil, false
}

// waitStarting waits for a queued run being started right now to be
// live, so that a stop finds its process.
func (rt *Runtime) waitStarting(ctx context.Context, id string) error {
	rt.mu.Lock()
	started, ok := rt.starting[id]
	rt.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cancelQueued ends a run stopped while it waited: cancelled, with an
// interruption of cause canceled, and its prompt never delivered.
func (rt *Runtime) cancelQueued(ctx context.Context, q *queuedRun) error {
	return rt.cancelWaiting(ctx, q.plan, func() { rt.putBack(q) })
}

// cancelWaiting records the end of a run stopped while it waited, in this
// runtime's queue or the shared one; back puts it back in its queue when
// the end could not be recorded.
func (rt *Runtime) cancelWaiting(ctx context.Context, pl *launchPlan, back func()) error {
	ref := pl.ref
	in := &eventstore.Interruption{Reason: eventstore.InterruptCanceled, Detail: cancelQueuedReason}
	if pl.req.Prompt != "" {
		in.MessageID = "prompt"
	}
	if _, err := rt.cfg.Store.Append(ctx, ref, in); err != nil {
		back()
		return fmt.Errorf("stop queued %s: %w", ref.AgentExecutionID, err)
	}
	if err := rt.settleUndelivered(ctx, ref, eventstore.DeliveryFailed, eventstore.TransportNone, cancelQueuedReason); err != nil {
		rt.cfg.Logger.Error("record the prompt of a cancelled queued run", "execution", ref.AgentExecutionID, "err", err)
	}
	if err := rt.appendState(ref, "lifecycle:final", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCancelled,
		Attention: eventstore.AttentionNone, Activity: eventstore.ActivityIdle, CurrentInputRequestID: eventstore.ClearInputRequest(),
		Reason: cancelQueuedReason}); err != nil {
		back()
		return fmt.Errorf("stop queued %s: %w", ref.AgentExecutionID, err)
	}
	rt.forgetQueued(ref.AgentExecutionID)
	return nil
}

// putBack returns a run to the queue after a stop that failed to record.
func (rt *Runtime) putBack(q *queuedRun) {
	rt.mu.Lock()
	rt.queue = append(rt.queue, q)
	slices.SortStableFunc(rt.queue, compareQueued)
	rt.mu.Unlock()
}

// Queue lists the runs waiting to start, the next one first.
func (rt *Runtime) Queue() []QueuedRun {
	if rt.cfg.Shared != nil {
		return rt.sharedQueue()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]QueuedRun, len(rt.queue))
	// Listed in the order the queue keeps: who starts next first.
	for i, q := range rt.queue {
		d := *q.plan.req.Dispatch
		out[i] = QueuedRun{Position: i + 1, AgentExecutionID: q.plan.ref.AgentExecutionID, Journal: q.plan.ref,
			Agent: q.plan.adapter.ID(), QueuedAt: q.queuedAt, ScheduledFor: d.ScheduledFor, DispatchContext: d}
	}
	return out
}

// MaxRunning is the limit of live executions the queue starts up to.
func (rt *Runtime) MaxRunning() int { return rt.maxRunning() }

// Running counts the executions live here.
func (rt *Runtime) Running() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.live)
}

// RunningIDs lists the executions live here, sorted.
func (rt *Runtime) RunningIDs() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Sorted(maps.Keys(rt.live))
}

// queued reports whether an execution waits in the queue, so that Recover
// leaves it to Requeue rather than ending it.
func (rt *Runtime) queued(id string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	_, starting := rt.starting[id]
	return starting || slices.ContainsFunc(rt.queue, func(q *queuedRun) bool { return q.plan.ref.AgentExecutionID == id })
}

// neverStarted reports a journal of a queued or scheduled run that has
// not started: Recover leaves it to the queue.
func neverStarted(st *execution.State) bool {
	return st.Lifecycle == eventstore.LifecycleStarting && st.DispatchContext != nil && st.DispatchContext.DispatchMode.Waits()
}

// Requeue queues again the runs a runtime before this one kept in
// QueueDir, those whose journals still say they are to start; a file
// whose journal is missing or has ended is dropped. Call it before
// Recover, and only where this runtime is to start them (the daemon).
func (rt *Runtime) Requeue(ctx context.Context) ([]string, error) {
	if rt.cfg.QueueDir == "" {
		return nil, nil
	}
	if rt.cfg.Shared != nil {
		return rt.requeueShared(ctx)
	}
	entries, err := os.ReadDir(rt.cfg.QueueDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("requeue: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), queueSuffix) {
			continue
		}
		path := filepath.Join(rt.cfg.QueueDir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return ids, fmt.Errorf("requeue: %w", err)
		}
		var f queueFile
		if err := json.Unmarshal(data, &f); err != nil || f.Ref.AgentExecutionID == "" {
			rt.cfg.Logger.Warn("requeue: skip a queue file that names no run", "path", path, "err", err)
			continue
		}
		id := f.Ref.AgentExecutionID
		st, err := rt.replay(ctx, f.Ref)
		switch {
		case errors.Is(err, eventstore.ErrJournalNotFound) || err == nil && st.Journal.RecordCount == 0:
			rt.cfg.Logger.Warn("requeue: drop a queued run whose journal is not in the log", "execution", id)
			rt.forgetQueued(id)
			continue
		case err != nil:
			return ids, fmt.Errorf("requeue %s: %w", id, err)
		case st.Lifecycle != eventstore.LifecycleStarting:
			rt.forgetQueued(id)
			continue
		}
		// A run the queue had let go, whose process was started (it is
		// marked hosted before its process starts) but whose start the
		// journal does not hold yet, is not started a second time:
		// Recover attaches to it or ends it.
		if hosted, err := rt.hostedAnywhere(id); err != nil {
			return ids, fmt.Errorf("requeue %s: %w", id, err)
		} else if hosted {
			rt.cfg.Logger.Warn("requeue: a queued run was being started when its runtime stopped; left to recovery", "execution", id)
			rt.forgetQueued(id)
			continue
		}
		pl, err := rt.plan(f.Request.launch())
		if err == nil && pl.ref.JournalID != f.Ref.JournalID {
			err = fmt.Errorf("the queued request names journal %s, not %s", pl.ref.JournalID, f.Ref.JournalID)
		}
		if err != nil {
			rt.failLaunch(f.Ref, "the queued launch can no longer start: "+err.Error())
			rt.forgetQueued(id)
			continue
		}
		pl.queuedAt = f.QueuedAt
		rt.mu.Lock()
		rt.queue = append(rt.queue, &queuedRun{plan: pl, queuedAt: f.QueuedAt})
		slices.SortStableFunc(rt.queue, compareQueued)
		rt.mu.Unlock()
		ids = append(ids, id)
	}
	rt.dispatch()
	return ids, nil
}

// closeQueue stops the queue starting runs and waits for the starts under
// way; the runs still queued stay in QueueDir for the next runtime.
func (rt *Runtime) closeQueue() {
	rt.mu.Lock()
	rt.queueClosed = true
	if rt.wake != nil {
		rt.wake.Stop()
		rt.wake = nil
	}
	rt.mu.Unlock()
	rt.starts.Wait()
}
