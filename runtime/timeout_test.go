package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
)

// endsWithTimeout checks that a journal ends with the interruption of its
// time limit and then the final state change, and returns that state.
func endsWithTimeout(t *testing.T, r *rig, ref eventstore.Reference, limit string) *eventstore.StateChanged {
	t.Helper()
	recs := r.records(t, ref)
	if h, ok := recs[0].(*eventstore.Header); !ok || h.TimeoutMs != 300 {
		t.Fatalf("header %+v, want timeoutMs 300", recs[0])
	}
	if len(recs) < 3 {
		t.Fatalf("%d records, want the interruption and the final state at the end", len(recs))
	}
	in, ok := recs[len(recs)-2].(*eventstore.Interruption)
	if !ok || in.Reason != eventstore.InterruptTimeout || !strings.Contains(in.Detail, "timed out after "+limit) {
		t.Fatalf("record before the last: %+v, want an interruption with reason timeout and detail naming %s", recs[len(recs)-2], limit)
	}
	final, ok := recs[len(recs)-1].(*eventstore.StateChanged)
	if !ok || !final.Lifecycle.Final() || !strings.Contains(final.Reason, "timed out after "+limit) {
		t.Fatalf("last record: %+v, want the final state, timed out after %s", recs[len(recs)-1], limit)
	}
	st := r.replay(t, ref)
	checkTimeline(t, st, eventstore.InterruptTimeout)
	return final
}

// TestTimeoutEndsTheRun: when its time limit passes, a run is stopped the
// way Stop stops it, and its journal says the limit ended it.
func TestTimeoutEndsTheRun(t *testing.T) {
	r := newRig(t, 500*time.Millisecond)
	cases := []struct {
		name   string
		req    runtime.LaunchRequest
		want   eventstore.Lifecycle
		reason string
	}{
		{"signalled", runtime.LaunchRequest{Agent: "generic", Command: []string{r.agent, "say:timeout-term", "sleep:60s"}},
			eventstore.LifecycleCancelled, "timed out after 300ms; stopped"},
		{"killed after the grace", runtime.LaunchRequest{Agent: "generic", Command: []string{r.agent, "ignore-term", "sleep:60s"}},
			eventstore.LifecycleTerminated, "timed out after 300ms; killed after"},
		// A CLI that reads its turns on stdin is asked to finish by
		// closing its input, and exits cleanly; its turn was cut short.
		{"input closed", runtime.LaunchRequest{Agent: "claude-code", Prompt: "go",
			Command: []string{r.agent, "replay:" + capture(t, claudeInit), "wait"}},
			eventstore.LifecycleCancelled, "timed out after 300ms; exit status 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			req.OwnerEntity, req.OwnerID, req.Timeout = eventstore.OwnerTask, "t-timeout", 300*time.Millisecond
			ref, err := r.rt.Launch(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			r.wait(t, ref)
			final := endsWithTimeout(t, r, ref, "300ms")
			if final.Lifecycle != c.want || !strings.HasPrefix(final.Reason, c.reason) {
				t.Fatalf("ended %s (%s), want %s (%s…)", final.Lifecycle, final.Reason, c.want, c.reason)
			}
		})
	}
}

// TestTimeoutBetweenTurns: a conversation waiting for its next message when
// the limit passes ends as a stop between turns ends it, saying the limit
// did.
func TestTimeoutBetweenTurns(t *testing.T) {
	r := newRig(t, time.Second)
	// Codex runs a process per turn: without a prompt nothing runs yet.
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "codex", Command: []string{r.agent}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	final := endsWithTimeout(t, r, ref, "300ms")
	if final.Lifecycle != eventstore.LifecycleCompleted || final.Reason != "timed out after 300ms between turns" {
		t.Fatalf("ended %s (%s), want completed, timed out after 300ms between turns", final.Lifecycle, final.Reason)
	}
}

// TestNoTimeoutWhenTheAgentExitsFirst: an agent that ends within its limit
// ends as it would without one.
func TestNoTimeoutWhenTheAgentExitsFirst(t *testing.T) {
	r := newRig(t, time.Second)
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Command: []string{r.agent, "say:quick"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	if st.Lifecycle != eventstore.LifecycleCompleted || st.Interrupted != nil {
		t.Fatalf("ended %s (%s), interrupted %+v; want completed and not interrupted", st.Lifecycle, st.LifecycleReason, st.Interrupted)
	}
	if h := r.records(t, ref)[0].(*eventstore.Header); h.TimeoutMs != 60000 {
		t.Fatalf("header timeoutMs %d, want 60000", h.TimeoutMs)
	}
}

func TestTimeoutRefused(t *testing.T) {
	r := newRig(t, time.Second)
	for _, d := range []time.Duration{-time.Second, runtime.MaxTimeout + time.Second} {
		_, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
			Agent: "generic", Command: []string{r.agent, "say:never"}, Timeout: d})
		if !errors.Is(err, runtime.ErrBadLaunch) || !strings.Contains(err.Error(), "at most 168h0m0s") {
			t.Errorf("timeout %s: %v, want ErrBadLaunch saying the limit", d, err)
		}
	}
}
