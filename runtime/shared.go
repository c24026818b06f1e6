package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// The shared queue. With Config.Shared, a launch that waits goes to a
// queue the runtimes of several hosts share (the fleet's) instead of this
// runtime's own: its journal is written here as always, its environment
// is kept here (QueueDir, 0600) and nowhere else, and whichever host has
// room starts it with StartShared, once. Before it starts a process, the
// starting runtime writes the run's placement in its journal, a
// state.changed (starting) naming its host under one record id; the first
// such record is the fence: a runtime that finds another host named there
// first starts nothing.

// SharedQueue is a queue of launches that several runtimes share.
type SharedQueue interface {
	// Enqueue adds a run; an error leaves it out.
	Enqueue(ctx context.Context, r SharedRun) error
	// Cancel takes a run that waits out and reports whether it did;
	// startingOn names the host starting it when it did not.
	Cancel(ctx context.Context, id string) (cancelled bool, startingOn string, err error)
	// Queued lists the runs, the next to start first.
	Queued() []SharedRun
	// Kick says that room may have been made here: a run ended.
	Kick()
}

// SharedRun is a launch in the shared queue: all it needs to start but
// its environment.
type SharedRun struct {
	ID    string
	Agent string
	// Host and On are its placement; EnvProfile the environment profile
	// its host must have.
	Host       string
	On         map[string]string
	EnvProfile string
	// QueuedAt is when it was queued; Eligible when it may start.
	QueuedAt time.Time
	Eligible time.Time
	// AcceptedBy is the host whose runtime took the launch and keeps its
	// environment; StartingOn the host starting it, if any.
	AcceptedBy string
	StartingOn string
	// HasEnv says the launch gave an environment, which AcceptedBy keeps.
	HasEnv bool
	// Launch is the launch but its environment, as this package writes it.
	Launch json.RawMessage
}

// placedKey is the record key of the state.changed that places a shared
// run on a host. Persisted in record ids: never change it.
const placedKey = "dispatch:placed"

// ErrPlacedElsewhere is returned by StartShared for a run whose journal
// places it on another host: that host started it, or was to.
var ErrPlacedElsewhere = errors.New("the run is placed on another host")

// queueShared puts a journaled launch that waits in the shared queue.
func (rt *Runtime) queueShared(ctx context.Context, pl *launchPlan, p SharedPlacement) error {
	r := pl.req
	launch, err := json.Marshal(queuedRequest{
		OwnerEntity: r.OwnerEntity, OwnerID: r.OwnerID, Seed: r.Seed, Agent: r.Agent, Command: r.Command, Prompt: r.Prompt,
		Posture: r.Posture, Shape: r.Shape, Dir: r.Dir, Timeout: r.Timeout, SessionID: r.SessionID, Dispatch: r.Dispatch,
		EnvProfile: r.EnvProfile, Sandbox: r.Sandbox})
	if err != nil {
		return err
	}
	run := SharedRun{ID: pl.ref.AgentExecutionID, Agent: pl.adapter.ID(), Host: p.Host, On: p.On, EnvProfile: r.EnvProfile, QueuedAt: pl.queuedAt,
		Eligible: pl.queuedAt, HasEnv: len(r.Env) > 0, Launch: launch}
	if at := r.Dispatch.Scheduled(); at.After(pl.queuedAt) {
		run.Eligible = at
	}
	ahead := 0
	for _, o := range rt.cfg.Shared.Queued() {
		if o.Eligible.Before(run.Eligible) || o.Eligible.Equal(run.Eligible) && o.QueuedAt.Before(run.QueuedAt) {
			ahead++
		}
	}
	reason := fmt.Sprintf("queued: position %d in the fleet's queue, waiting for a host with a free slot", ahead+1)
	if r.Dispatch.DispatchMode == eventstore.DispatchScheduled {
		reason = fmt.Sprintf("scheduled for %s: starts then, or once a host has a free slot after it", r.Dispatch.ScheduledFor)
	}
	if err := rt.appendState(pl.ref, queuedKey, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleStarting, Reason: reason}); err != nil {
		rt.forgetQueued(pl.ref.AgentExecutionID)
		rt.failLaunch(pl.ref, "the queueing was not recorded: "+err.Error())
		return fmt.Errorf("launch %s: queue it: %w", pl.ref.AgentExecutionID, err)
	}
	if err := rt.cfg.Shared.Enqueue(ctx, run); err != nil {
		rt.forgetQueued(pl.ref.AgentExecutionID)
		rt.failLaunch(pl.ref, "the run could not be queued: "+err.Error())
		return fmt.Errorf("launch %s: queue it: %w", pl.ref.AgentExecutionID, err)
	}
	return nil
}

// SharedPlacement is where a launch that waits in the shared queue may
// start: the host that must start it, the labels its host must have.
type SharedPlacement struct {
	Host string
	On   map[string]string
}

// QueuedEnv is the environment of a launch this runtime took and queued in
// the shared queue, for the host that starts it; ErrNotQueuedHere when it
// keeps none.
func (rt *Runtime) QueuedEnv(id string) ([]string, error) {
	f, err := rt.readQueued(id)
	if err != nil {
		return nil, err
	}
	return f.Request.Env, nil
}

// ErrNotQueuedHere is returned by QueuedEnv for a run this runtime did
// not queue, or has forgotten.
var ErrNotQueuedHere = errors.New("no queued run of that id is kept here")

// ForgetQueued forgets what this runtime keeps of a queued run (its
// environment) once the run left the shared queue.
func (rt *Runtime) ForgetQueued(id string) { rt.forgetQueued(id) }

// StartShared starts a run of the shared queue that this host claimed,
// with its environment: it places the run here in its journal, unless the
// journal places it on another host already (ErrPlacedElsewhere), then
// starts it as a run of its own queue starts. A run that cannot start is
// journaled as failed.
func (rt *Runtime) StartShared(ctx context.Context, run SharedRun, env []string) error {
	var req queuedRequest
	if err := json.Unmarshal(run.Launch, &req); err != nil {
		return fmt.Errorf("start queued %s: its launch does not read: %w", run.ID, err)
	}
	req.Env = env
	pl, err := rt.plan(req.launch())
	if err == nil && pl.ref.AgentExecutionID != run.ID {
		err = fmt.Errorf("the queued launch names execution %s, not %s", pl.ref.AgentExecutionID, run.ID)
	}
	if err != nil {
		if ref, lerr := rt.cfg.Store.Lookup(ctx, run.ID); lerr == nil {
			rt.failLaunch(ref, "the queued launch can no longer start: "+err.Error())
		}
		return fmt.Errorf("start queued %s: %w", run.ID, err)
	}
	started := make(chan struct{})
	rt.mu.Lock()
	if rt.queueClosed {
		rt.mu.Unlock()
		return fmt.Errorf("start queued %s: the runtime is closing", run.ID)
	}
	rt.starting[run.ID] = started
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.starting, run.ID)
		rt.mu.Unlock()
		close(started)
	}()
	host, err := rt.place(ctx, pl.ref)
	if err != nil {
		return fmt.Errorf("start queued %s: %w", run.ID, err)
	}
	if host != rt.cfg.Host {
		return fmt.Errorf("start queued %s: %w (%s)", run.ID, ErrPlacedElsewhere, host)
	}
	return rt.startFromQueue(ctx, pl)
}

// place writes that this host starts the run, and returns the host the
// journal's first placement names: this one, or one that came first.
func (rt *Runtime) place(ctx context.Context, ref eventstore.Reference) (string, error) {
	if first, err := rt.PlacedOn(ctx, ref); err != nil || first != "" {
		return first, err
	}
	if err := rt.appendState(ref, placedKey, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleStarting, Host: rt.cfg.Host,
		Reason: "placed on host " + rt.cfg.Host}); err != nil {
		return "", err
	}
	return rt.PlacedOn(ctx, ref)
}

// PlacedOn returns the host the first placement in a journal names; ""
// when none does (the run never left the queue for a host).
func (rt *Runtime) PlacedOn(ctx context.Context, ref eventstore.Reference) (string, error) {
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return "", err
		}
		if sc, ok := e.Record.(*eventstore.StateChanged); ok && sc.Host != "" {
			return sc.Host, nil
		}
	}
	return "", nil
}

// cancelShared stops a run that waits in the shared queue: it leaves the
// queue and ends cancelled; handled is false for a run the queue does not
// hold, or that this host is starting (Stop waits for it to run). One that
// another host is starting is refused: that host stops it once it runs.
func (rt *Runtime) cancelShared(ctx context.Context, id string) (handled bool, err error) {
	cancelled, on, err := rt.cfg.Shared.Cancel(ctx, id)
	switch {
	case err != nil:
		return true, fmt.Errorf("stop queued %s: %w", id, err)
	case on == rt.cfg.Host:
		return false, nil
	case on != "":
		return true, fmt.Errorf("stop %s: %w: host %s is starting it; stop it once it runs", id, ErrNotRunning, on)
	case !cancelled:
		return false, nil
	}
	ref, err := rt.cfg.Store.Lookup(ctx, id)
	if err != nil {
		return true, err
	}
	st, err := rt.replay(ctx, ref)
	if err != nil {
		return true, err
	}
	pl := &launchPlan{ref: ref}
	if _, ok := st.ProcessedMessages["prompt"]; ok {
		pl.req.Prompt = "prompt"
	}
	return true, rt.cancelWaiting(ctx, pl, func() {
		rt.cfg.Logger.Error("a queued run was stopped but its end was not recorded; it left the queue", "execution", id)
	})
}

// readQueued reads what QueueDir keeps of a queued run.
func (rt *Runtime) readQueued(id string) (queueFile, error) {
	var f queueFile
	if rt.cfg.QueueDir == "" {
		return f, ErrNotQueuedHere
	}
	path, err := rt.queuePath(id)
	if err != nil {
		return f, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, fmt.Errorf("%s: %w", id, ErrNotQueuedHere)
	}
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(data, &f)
}

// sharedQueue lists the shared queue as this runtime's own is listed.
func (rt *Runtime) sharedQueue() []QueuedRun {
	runs := rt.cfg.Shared.Queued()
	out := make([]QueuedRun, 0, len(runs))
	for _, r := range runs {
		if r.StartingOn != "" {
			// Being started: it waits no more, as a run this runtime's
			// own queue let go.
			continue
		}
		var req queuedRequest
		if json.Unmarshal(r.Launch, &req) != nil || req.Dispatch == nil {
			continue
		}
		ref, err := eventstore.NewReference(req.OwnerEntity, req.OwnerID, r.ID)
		if err != nil {
			continue
		}
		out = append(out, QueuedRun{Position: len(out) + 1, AgentExecutionID: r.ID, Journal: ref, Agent: r.Agent,
			QueuedAt: r.QueuedAt, ScheduledFor: req.Dispatch.ScheduledFor, DispatchContext: *req.Dispatch})
	}
	return out
}

// requeueShared deals with what QueueDir keeps when the queue is shared:
// the environment of a run still in the shared queue stays for the host
// that starts it; a run its file names that waits but is in no queue (kept
// by this runtime's own queue before the queue was shared) joins the
// shared queue; the file of one that was placed or ended is forgotten.
func (rt *Runtime) requeueShared(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(rt.cfg.QueueDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("requeue: %w", err)
	}
	inQueue := map[string]bool{}
	for _, r := range rt.cfg.Shared.Queued() {
		inQueue[r.ID] = true
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), queueSuffix)
		if e.IsDir() || !ok {
			continue
		}
		f, err := rt.readQueued(id)
		if err != nil || f.Ref.AgentExecutionID == "" {
			rt.cfg.Logger.Warn("requeue: skip a queue file that names no run", "file", e.Name(), "err", err)
			continue
		}
		id = f.Ref.AgentExecutionID
		if inQueue[id] {
			continue
		}
		st, err := rt.replay(ctx, f.Ref)
		if err != nil || st.Journal.RecordCount == 0 || st.Lifecycle != eventstore.LifecycleStarting || st.Host != "" {
			rt.forgetQueued(id)
			continue
		}
		pl, err := rt.plan(f.Request.launch())
		if err != nil {
			rt.failLaunch(f.Ref, "the queued launch can no longer start: "+err.Error())
			rt.forgetQueued(id)
			continue
		}
		pl.queuedAt = f.QueuedAt
		if err := rt.queueShared(ctx, pl, SharedPlacement{}); err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// FailQueued ends a run of the shared queue that can never start, failed
// with reason; one that is no longer starting is left as it is.
func (rt *Runtime) FailQueued(ctx context.Context, id, reason string) error {
	ref, err := rt.cfg.Store.Lookup(ctx, id)
	if err != nil {
		return err
	}
	st, err := rt.replay(ctx, ref)
	if err != nil || st.Lifecycle != eventstore.LifecycleStarting {
		return err
	}
	rt.failLaunch(ref, reason)
	return nil
}
