package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
)

// MaxTimeout is the longest run time limit a launch takes.
const MaxTimeout = 7 * 24 * time.Hour

// checkTimeout says whether a launch's time limit is accepted: none (0), or
// more than 0 and at most MaxTimeout.
func checkTimeout(d time.Duration) error {
	if d < 0 || d > MaxTimeout {
		return fmt.Errorf("%w: timeout %s: want more than 0 and at most %s (7 days), or 0 for none", ErrBadLaunch, d, MaxTimeout)
	}
	return nil
}

// timeoutMs is the limit as the header keeps it: whole milliseconds,
// rounded up so a limit the runtime enforces is never recorded as none.
func timeoutMs(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// timedOutReason is the lifecycle reason of a run its time limit ended.
func timedOutReason(limit time.Duration) string {
	return "timed out after " + limit.String()
}

// armTimeout starts an execution's time limit: when it passes, the run is
// stopped as Stop stops it. end stops the timer, so an execution that ends
// first leaves nothing behind.
func (rt *Runtime) armTimeout(p *process, limit time.Duration) {
	if limit <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.limit = time.AfterFunc(limit, func() { rt.timeUp(p, limit) })
}

// timeUp stops an execution whose time limit passed, unless it is already
// ending some other way: then that way is the one its journal tells.
func (rt *Runtime) timeUp(p *process, limit time.Duration) {
	p.mu.Lock()
	if p.ended || p.ending.started() {
		p.mu.Unlock()
		return
	}
	p.ending.by(byTimeLimit, limit)
	p.mu.Unlock()
	// Stop returns once the end is recorded, within two grace periods.
	ctx, cancel := context.WithTimeout(context.Background(), 2*rt.cfg.StopGrace+30*time.Second)
	defer cancel()
	if err := rt.stop(ctx, p); err != nil {
		rt.cfg.Logger.Error("stop at the time limit", "execution", p.ref.AgentExecutionID, "err", err)
	}
}

// rearmTimeout starts the rest of a taken-over execution's time limit,
// counted from its launch: a limit that passed while no host ran it stops
// it at once.
func (rt *Runtime) rearmTimeout(p *process, st *execution.State) {
	if st.TimeoutMs <= 0 {
		return
	}
	limit := time.Duration(st.TimeoutMs) * time.Millisecond
	left := max(limit-time.Since(st.CreatedAt), time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.limit = time.AfterFunc(left, func() { rt.timeUp(p, limit) })
}

// stopLimit stops the execution's time limit; it is done with.
func (p *process) stopLimit() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit != nil {
		p.limit.Stop()
	}
}

// endBetweenTurns is how Stop ends a conversation that waits between
// turns: completed, and, when its time limit ended it, interrupted for
// that.
func (rt *Runtime) endBetweenTurns(p *process) {
	p.mu.Lock()
	limit, timedOut := p.ending.limit, p.ending.cause == byTimeLimit
	p.mu.Unlock()
	if !timedOut {
		rt.end(p, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted, Reason: "stopped by the operator between turns"})
		return
	}
	rt.interrupted(p, eventstore.InterruptTimeout, timedOutReason(limit)+" between turns")
	rt.end(p, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted, Reason: timedOutReason(limit) + " between turns"})
}
