package runtime_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// TestCloseStopsAtOnce: Close stops its executions together. Agents that
// wait out the grace period after SIGTERM are all signalled before the
// first of them is killed, and all end within a deadline that stopping
// them one after another, a grace period each, could not meet.
func TestCloseStopsAtOnce(t *testing.T) {
	const (
		agents   = 4
		grace    = 2 * time.Second
		deadline = (agents - 1) * grace
	)
	r := newRig(t, grace)
	refs := make([]eventstore.Reference, agents)
	for i := range refs {
		refs[i] = r.launch(t, "note-term", `signal:{"type":"progress","payload":{"summary":"ready"}}`, "sleep:60s")
	}
	for _, ref := range refs {
		// SIGTERM is noted from the "ready" progress on.
		waitFor(t, func() bool { return progressAt(t, r, ref, "ready") > 0 })
	}

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := r.rt.Close(ctx); err != nil {
		t.Fatalf("Close: %v; want %d agents that ignore SIGTERM killed within %s", err, agents, deadline)
	}

	lastTerm, firstEnd := uint64(0), uint64(math.MaxUint64)
	for _, ref := range refs {
		st := r.replay(t, ref)
		if st.Lifecycle != eventstore.LifecycleTerminated || !strings.Contains(st.LifecycleReason, "killed after a 2s grace period") {
			t.Errorf("%s: %s (%s), want terminated, killed after a 2s grace period", ref.AgentExecutionID, st.Lifecycle, st.LifecycleReason)
		}
		term, end := progressAt(t, r, ref, "SIGTERM"), finalAt(t, r, ref)
		if term == 0 || end == 0 {
			t.Fatalf("%s: SIGTERM noted at offset %d, final state at %d; want both in the journal", ref.AgentExecutionID, term, end)
		}
		lastTerm, firstEnd = max(lastTerm, term), min(firstEnd, end)
	}
	if lastTerm > firstEnd {
		t.Errorf("the last agent noted SIGTERM at log offset %d, after the first agent's end at %d; want every agent signalled before any was killed",
			lastTerm, firstEnd)
	}
}

// TestClosePastItsDeadline: stops cut short by Close's deadline fail
// alike, and Close says so once, not once per execution.
func TestClosePastItsDeadline(t *testing.T) {
	const agents = 3
	r := newRig(t, time.Minute)
	refs := make([]eventstore.Reference, agents)
	for i := range refs {
		refs[i] = r.launch(t, "ignore-term", `signal:{"type":"progress","payload":{"summary":"ready"}}`, "sleep:60s")
	}
	for _, ref := range refs {
		waitFor(t, func() bool { return progressAt(t, r, ref, "ready") > 0 })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := r.rt.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) ||
		!regexp.MustCompile(`^stop [1-3] of 3 executions: context deadline exceeded$`).MatchString(err.Error()) {
		t.Fatalf("Close: %v; want one line, stop N of 3 executions: context deadline exceeded", err)
	}
	for _, ref := range refs {
		// Killed at the deadline, each has ended all the same.
		if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleTerminated {
			t.Errorf("%s: %s (%s), want terminated", ref.AgentExecutionID, st.Lifecycle, st.LifecycleReason)
		}
	}
}

// progressAt is the log offset of the first progress signal of the
// execution whose summary is summary, 0 when there is none.
func progressAt(t *testing.T, r *rig, ref eventstore.Reference, summary string) uint64 {
	t.Helper()
	return offsetOf(t, r, ref, func(rec eventstore.Record) bool {
		o, ok := rec.(*eventstore.Observation)
		if !ok || o.Signal == nil {
			return false
		}
		p, ok := o.Signal.Payload.(*eventstore.ProgressSignal)
		return ok && p.Summary == summary
	})
}

// finalAt is the log offset of the state change that records the
// execution's final lifecycle, 0 when there is none.
func finalAt(t *testing.T, r *rig, ref eventstore.Reference) uint64 {
	t.Helper()
	return offsetOf(t, r, ref, func(rec eventstore.Record) bool {
		sc, ok := rec.(*eventstore.StateChanged)
		return ok && sc.Lifecycle == eventstore.LifecycleTerminated
	})
}

// offsetOf is the log offset of the execution's first record that match
// holds for, 0 when there is none.
func offsetOf(t *testing.T, r *rig, ref eventstore.Reference, match func(eventstore.Record) bool) uint64 {
	t.Helper()
	for e, err := range r.store.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatalf("read %s: %v", ref.AgentExecutionID, err)
		}
		if match(e.Record) {
			return e.Offset
		}
	}
	return 0
}
