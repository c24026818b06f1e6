package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/errtally"
)

// stopStage is how far a stop of an execution's process went. The stages
// follow one another, and the last one reached says what the process's
// exit means.
type stopStage uint8

const (
	notStopped stopStage = iota
	// inputClosed: Stop closed stdin; a clean exit means completed.
	inputClosed
	// signalled: Stop sent SIGTERM; an exit means cancelled.
	signalled
	// killed: the grace ran out and SIGKILL followed; an exit means
	// terminated.
	killed
)

// stopCause is who is ending an execution. The causes are ordered: a
// later one outranks an earlier one, so the daemon shutting down while
// the operator stops a run is told as a shutdown, and a run its time
// limit stopped is told as timed out whoever came after.
type stopCause uint8

const (
	// byOperator: Stop, or the agent itself when nothing was stopped.
	byOperator stopCause = iota
	// byShutdown: Close stops it; the daemon shuts down.
	byShutdown
	// byTimeLimit: its time limit passed.
	byTimeLimit
	// byLeaving: Close leaves it to the next runtime; nothing more is
	// recorded here.
	byLeaving
)

// ending is why and how far an execution is being ended: the one value
// exited reads to tell the lifecycle and the interruption its process's
// exit means. Guarded by process.mu.
type ending struct {
	stage stopStage
	cause stopCause
	// limit is the time limit that stopped the run, with byTimeLimit.
	limit time.Duration
	// midTurn: the stop came while a turn was under way (the agent at
	// work, or waiting on a permission or a question): closing its input
	// cut the turn short, so even a clean exit is a cancellation. A stop
	// between turns, after the turn's result, is a completion.
	midTurn bool
}

// by records a cause of the ending, unless one that outranks it is there.
func (e *ending) by(c stopCause, limit time.Duration) {
	if c > e.cause {
		e.cause, e.limit = c, limit
	}
}

// reach records that the stop went as far as stage.
func (e *ending) reach(stage stopStage) {
	e.stage = max(e.stage, stage)
}

// started reports whether anything began to end the execution.
func (e ending) started() bool { return e.stage > notStopped || e.cause > byOperator }

// timedOut reports whether the run's time limit stopped it, and the limit.
func (e ending) timedOut() (time.Duration, bool) {
	return e.limit, e.cause == byTimeLimit && e.stage > notStopped
}

// exit describes how a process ended.
type exit struct {
	success bool
	desc    string
	// lost: the process's end is unknown (its supervisor died).
	lost bool
}

// exited follows the end of one process of an execution: it records the
// lifecycle transition it means, or, for a conversation whose turns are
// processes, that the execution waits for its next turn.
func (rt *Runtime) exited(p *process, c *child, e exit) {
	defer close(c.exited)
	p.mu.Lock()
	p.child = nil
	end, te := p.ending, c.turnEnd
	between := !p.driver.TurnsOnStdin() && p.shape == eventstore.ShapeConversation && te != nil && end.stage == notStopped
	p.mu.Unlock()
	if between || end.cause == byLeaving {
		// The turn's result is in; the session goes on with the next
		// message. Or the next runtime goes on with the execution.
		return
	}
	rt.snapshotNow(p, "exit")
	st := &eventstore.StateChanged{}
	switch {
	case e.lost:
		st.Lifecycle, st.Reason = eventstore.LifecycleTerminated, "system_restart: "+e.desc
	case end.stage == killed:
		st.Lifecycle, st.Reason = eventstore.LifecycleTerminated, fmt.Sprintf("killed after a %s grace period", rt.cfg.StopGrace)
	case end.stage == signalled:
		st.Lifecycle, st.Reason = eventstore.LifecycleCancelled, "stopped"
	case !e.success && te != nil && te.Failed:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, clipReason(te.Reason)+" ("+e.desc+")"
	case !e.success:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, e.desc
	case end.stage == inputClosed && end.midTurn:
		st.Lifecycle, st.Reason = eventstore.LifecycleCancelled, "stopped by the operator during a turn; "+e.desc
	case end.stage == inputClosed:
		st.Lifecycle, st.Reason = eventstore.LifecycleCompleted, "stopped by the operator; "+e.desc
	case te != nil && te.Failed:
		st.Lifecycle, st.Reason = eventstore.LifecycleFailed, clipReason(te.Reason)
	default:
		st.Lifecycle, st.Reason = eventstore.LifecycleCompleted, e.desc
	}
	// A run its time limit stopped says so, whichever way it ended.
	limit, timedOut := end.timedOut()
	if timedOut {
		st.Reason = timedOutReason(limit) + "; " + strings.TrimPrefix(strings.TrimPrefix(st.Reason, "stopped by the operator during a turn; "), "stopped by the operator; ")
	}
	if reason, ok := interruptionOf(e, end); ok {
		detail := e.desc
		if timedOut {
			detail = timedOutReason(limit) + " (" + e.desc + ")"
		}
		rt.interrupted(p, reason, detail)
	}
	rt.end(p, st)
}

// end records how the execution ended and lets go of it.
func (rt *Runtime) end(p *process, st *eventstore.StateChanged) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	p.mu.Unlock()
	p.stopLimit()
	st.Attention, st.Activity, st.CurrentInputRequestID = eventstore.AttentionNone, eventstore.ActivityIdle, eventstore.ClearInputRequest()
	// Behind the output held for the log, if any: the end is recorded
	// after it, or, when Close gives up on it, not here at all.
	st.RecordID = eventstore.RecordID(p.ref.JournalID, eventstore.KindStateChanged, "lifecycle:final")
	// A turn's checkpoint (bounded by checkpointTimeout) is recorded
	// before the end, which is the journal's last word on the run.
	p.turnCheckpoints.Wait()
	if f, ok := rt.cfg.Store.(JournalFollower); ok && rt.cfg.DecisionsBeforeEnd > 0 {
		// Whatever is left undecided when the wait ends is decided
		// after the end, as before.
		ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.DecisionsBeforeEnd)
		_, _ = AwaitDecisions(ctx, f, p.ref)
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := rt.journalAwait(ctx, p, st)
	cancel()
	if err != nil {
		// The file stays: Recover ends the journal after a restart.
		rt.cfg.Logger.Error("record exit", "execution", p.ref.AgentExecutionID, "err", err)
	} else {
		rt.unmarkHosted(p.ref.AgentExecutionID)
		rt.forgetLaunch(p.ref.AgentExecutionID)
	}
	p.outputMu.Lock()
	p.closeOutput()
	p.outputMu.Unlock()
	// Gone from live before done closes: whoever waited on done (Stop)
	// and then asks Done must hear that it is not live any more.
	rt.mu.Lock()
	delete(rt.live, p.ref.AgentExecutionID)
	rt.mu.Unlock()
	close(p.done)
	if rt.cfg.Ended != nil {
		rt.cfg.Ended(p.ref)
	}
	// A slot is free.
	rt.dispatch()
}

// journalState is appendState for a live execution: through its hold, in
// order behind what of its output waits for the log (hold.go).
func (rt *Runtime) journalState(p *process, key string, st *eventstore.StateChanged) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st.RecordID = eventstore.RecordID(p.ref.JournalID, eventstore.KindStateChanged, key)
	return rt.journal(ctx, p, st)
}

func (rt *Runtime) appendState(ref eventstore.Reference, key string, st *eventstore.StateChanged) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, key)
	_, err := rt.cfg.Store.Append(ctx, ref, st)
	return err
}

// Done returns a channel closed when the execution has ended and its
// lifecycle is recorded; nil when it is not live here.
func (rt *Runtime) Done(id string) <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if p, ok := rt.live[id]; ok {
		return p.done
	}
	return nil
}

// IsRunning reports whether the execution has a live process here that has
// not begun to end: false from the moment its ending is being recorded,
// so that a reader who sees its final lifecycle never sees it running.
func (rt *Runtime) IsRunning(id string) bool {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.ended
}

// Stop ends an execution. One still queued ends cancelled at once, its
// process never started (dispatch.go). A conversation between turns ends at once,
// completed. A CLI that reads its turns on stdin is first asked to finish
// by closing its input, and ends completed when it exits cleanly within the
// grace period. Otherwise, and after that, SIGTERM goes to its process
// group, then SIGKILL after the grace period; the journal records
// cancelled, or terminated when the process had to be killed.
func (rt *Runtime) Stop(ctx context.Context, id string) error {
	if q, ok := rt.dequeue(id); ok {
		return rt.cancelQueued(ctx, q)
	}
	if rt.cfg.Shared != nil && !rt.IsRunning(id) {
		if handled, err := rt.cancelShared(ctx, id); handled {
			return err
		}
	}
	if err := rt.waitStarting(ctx, id); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return fmt.Errorf("stop %s: %w", id, ErrNotRunning)
	}
	return rt.stop(ctx, p)
}

// stop ends a live execution as Stop says; its time limit stops it the
// same way.
func (rt *Runtime) stop(ctx context.Context, p *process) error {
	t := time.NewTimer(rt.cfg.StopGrace)
	defer t.Stop()
	p.mu.Lock()
	c := p.child
	// A CLI that reads its turns on stdin is asked to finish by closing it;
	// a turn process whose result is in is let finish by itself.
	graceful := c != nil && c.term() == nil && p.shape != "" && (p.driver.TurnsOnStdin() || c.turnEnd != nil)
	if graceful {
		p.ending.reach(inputClosed)
		// A conversation is between turns while it awaits the next
		// message; any other run, until its turn's result is in.
		if p.shape == eventstore.ShapeConversation {
			p.ending.midTurn = p.ending.midTurn || !p.awaiting
		} else {
			p.ending.midTurn = p.ending.midTurn || c.turnEnd == nil
		}
	}
	p.mu.Unlock()
	if c == nil {
		rt.endBetweenTurns(p)
		return nil
	}
	if graceful {
		hangup(p)
		c.closeInput()
		select {
		case <-p.done:
			return nil
		case <-t.C:
			t.Reset(rt.cfg.StopGrace)
		case <-ctx.Done():
		}
	}
	p.escalate(c, signalled, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	p.escalate(c, killed, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// escalate records the stage before it sends its signal to c, so that the
// exit the signal brings is told by that stage.
func (p *process) escalate(c *child, stage stopStage, sig syscall.Signal) {
	p.mu.Lock()
	p.ending.reach(stage)
	p.mu.Unlock()
	_ = c.signal(sig)
}

// closeStops is how many processes Close stops at once. A stop mostly
// waits for its process to end, but then reads the execution's journal and
// appends its end: a few dozen at a time keep a loaded store answering.
const closeStops = 16

// stopAll stops the live processes ps (of the executions ids) for Close,
// closeStops at a time, and returns their failures, each kind said once.
//
// Stopped one after another under one deadline, processes that wait out
// their grace period took a grace each, and every stop after the deadline
// failed on its own. Here each stop, as it starts, gets its fair share of
// what is left of ctx: the rest over the rounds of closeStops still to
// start. A process whose share runs out is killed sooner than its grace,
// and its end is then waited for within ctx itself.
func (rt *Runtime) stopAll(ctx context.Context, ids []string, ps []*process) error {
	slots := make(chan struct{}, closeStops)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		slots <- struct{}{}
		share, cancel := fairShare(ctx, len(ids)-i)
		wg.Go(func() {
			defer func() { cancel(); <-slots }()
			err := rt.Stop(share, id)
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				select {
				case <-ps[i].done:
					err = nil
				case <-ctx.Done():
					err = ctx.Err()
				}
			}
			if err != nil && !errors.Is(err, ErrNotRunning) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return joinAlike(errs, len(ids))
}

// fairShare bounds ctx, for a stop with left stops (itself included) yet
// to start, by what is left of its deadline over the rounds of closeStops
// those make. Without a deadline, there is nothing to share.
func fairShare(ctx context.Context, left int) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	rounds := time.Duration((left + closeStops - 1) / closeStops)
	return context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/rounds))
}

// joinAlike joins the errors of n stops, each message once, with how many
// stops failed with it: past a deadline every stop fails alike, and one line
// says so instead of one per process.
func joinAlike(errs []error, n int) error {
	var out []error
	for _, c := range errtally.Tally(errs) {
		out = append(out, fmt.Errorf("stop %d of %d executions: %w", c.N, n, c.Err))
	}
	return errors.Join(out...)
}
