package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/policy"
)

const (
	blockedMarker  = `signal:{"type":"blocked","payload":{"reason":"no credentials","needs":"a registry token"}}`
	progressMarker = `signal:{"type":"progress","payload":{"summary":"found a token"}}`
	claimMarker    = `signal:{"type":"completed_claim","payload":{"summary":"fixed"}}`
)

// decide runs the policy on the rig's log until the test ends.
func (r *rig) decide(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- policy.NewSubscriber(r.store, policy.SubscriberConfig{}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("policy: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("policy did not stop")
		}
	})
}

// decided waits until the journal holds at least observations
// observations, each with its decision, and messages messages with theirs,
// and returns the state then.
func (r *rig) decided(t *testing.T, ref eventstore.Reference, observations, messages int) *execution.State {
	t.Helper()
	var st *execution.State
	waitFor(t, func() bool {
		st = r.replay(t, ref)
		if len(st.ProcessedObservations) < observations {
			return false
		}
		n := 0
		for id := range st.ProcessedObservations {
			if _, ok := st.Decisions[id]; !ok {
				return false
			}
		}
		for id := range st.ProcessedMessages {
			if _, ok := st.Decisions[id]; ok {
				n++
			}
		}
		return n >= messages
	})
	return st
}

// settled waits, after decided, until the state meets want: the policy
// appends a decision before the state changes it makes, so a replay between
// the two sees the decision without its effect. A state that never meets
// want fails the test with the last one seen.
func (r *rig) settled(t *testing.T, ref eventstore.Reference, want func(*execution.State) bool) *execution.State {
	t.Helper()
	var st *execution.State
	deadline := time.Now().Add(30 * time.Second)
	for st = r.replay(t, ref); !want(st); st = r.replay(t, ref) {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return st
}

// TestBlockedClearsOnProgress: an agent that says it is blocked and then,
// in the same breath, reports progress works again once both are decided,
// however late the decision on the first lands; the timeline keeps what
// blocked it.
func TestBlockedClearsOnProgress(t *testing.T) {
	r := newRig(t, time.Second)
	r.decide(t)
	ref := r.launch(t, blockedMarker, progressMarker, "wait")
	r.decided(t, ref, 2, 0)
	st := r.settled(t, ref, func(st *execution.State) bool { return st.Attention != eventstore.AttentionBlocked })
	if len(st.ProcessedObservations) != 2 {
		t.Fatalf("%d observations, want the blocked and the progress signal", len(st.ProcessedObservations))
	}
	if st.Lifecycle != eventstore.LifecycleRunning || st.Attention != eventstore.AttentionAutonomous || st.Blocked != nil {
		t.Fatalf("after blocked then progress: %s, attention %s, blocked %+v; want running and autonomous, nothing blocking",
			st.Lifecycle, st.Attention, st.Blocked)
	}
	i := slices.IndexFunc(st.Timeline, func(it execution.TimelineItem) bool { return it.Kind == execution.ItemBlocked })
	if i < 0 || st.Timeline[i].Reason != "no credentials" || st.Timeline[i].Needs != "a registry token" {
		t.Fatalf("timeline %+v: want the blocked item with its reason and needs", st.Timeline)
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCancelled || st.Attention != eventstore.AttentionNone {
		t.Fatalf("after stop: %s, attention %s; want cancelled and none", st.Lifecycle, st.Attention)
	}
}

// TestBlockedClearsOnAMessage: a blocked agent shows what blocks it until
// the operator's message reaches it.
func TestBlockedClearsOnAMessage(t *testing.T) {
	r := newRig(t, time.Second)
	r.decide(t)
	ref := r.launch(t, blockedMarker, "sleep:0s", "echo:1", "wait")
	r.decided(t, ref, 1, 0)
	st := r.settled(t, ref, func(st *execution.State) bool { return st.Attention == eventstore.AttentionBlocked })
	if st.Attention != eventstore.AttentionBlocked || st.Blocked == nil ||
		*st.Blocked != (execution.Blocked{Reason: "no credentials", Needs: "a registry token"}) {
		t.Fatalf("attention %s, blocked %+v; want blocked by the signal's reason and needs", st.Attention, st.Blocked)
	}
	payload, _ := json.Marshal(map[string]string{"text": "the token is in ~/.npmrc"})
	if _, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID,
		runtime.SendMessageInput{MessageID: "help-1", Type: "prompt", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	r.decided(t, ref, 1, 1)
	st = r.settled(t, ref, func(st *execution.State) bool { return st.Attention != eventstore.AttentionBlocked })
	if st.Attention != eventstore.AttentionAutonomous || st.Blocked != nil {
		t.Fatalf("after the operator's message: attention %s, blocked %+v; want autonomous", st.Attention, st.Blocked)
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
}

// TestClaimThenExitEndsTheSameWay: an agent that claims completion and
// exits at once, its claim decided after the exit was recorded, ends as one
// that exits once its claim was decided: completed, attention none, and
// the claim routed to the owner either way.
func TestClaimThenExitEndsTheSameWay(t *testing.T) {
	end := func(t *testing.T, st *execution.State) (decisionBeforeEnd bool) {
		t.Helper()
		if st.Lifecycle != eventstore.LifecycleCompleted || st.Attention != eventstore.AttentionNone || st.CurrentInputRequestID != "" {
			t.Fatalf("ended %s, attention %s, request %q; want completed, none, no request", st.Lifecycle, st.Attention, st.CurrentInputRequestID)
		}
		var endSeq, claimSeq uint64
		routed := false
		for _, it := range st.Timeline {
			switch {
			case it.Kind == execution.ItemState && it.Lifecycle.Final():
				endSeq = it.Sequence
			case it.Kind == execution.ItemDecision && it.Action == eventstore.ActionRouteOwnerEffect:
				claimSeq = it.Sequence
			case it.Kind == execution.ItemOwnerEffect && it.Text == "execution.completion-claimed":
				routed = true
			case it.Kind == execution.ItemState && endSeq != 0:
				t.Errorf("state item after the end: %s", it.Text)
			}
		}
		if claimSeq == 0 || !routed {
			t.Fatalf("timeline %+v: want the claim decided and routed to the owner", st.Timeline)
		}
		return claimSeq < endSeq
	}

	// routed waits until the claim's decision and the owner effect it
	// routes are both in.
	routed := func(t *testing.T, r *rig, ref eventstore.Reference) *execution.State {
		r.decided(t, ref, 1, 0)
		return r.settled(t, ref, func(st *execution.State) bool {
			return slices.ContainsFunc(st.Timeline, func(it execution.TimelineItem) bool { return it.Kind == execution.ItemOwnerEffect })
		})
	}
	t.Run("decided after the exit", func(t *testing.T) {
		r := newRig(t, time.Second)
		ref := r.launch(t, claimMarker, "exit:0")
		r.wait(t, ref)
		// The policy starts once the end is recorded, so the claim's
		// decision lands after it.
		r.decide(t)
		if before := end(t, routed(t, r, ref)); before {
			t.Fatal("the claim was decided before the exit was recorded")
		}
	})
	t.Run("decided before the exit", func(t *testing.T) {
		r := newRig(t, time.Second)
		r.decide(t)
		// The agent waits a while before it exits, longer on each attempt,
		// until its claim was decided first.
		for wait := 100 * time.Millisecond; ; wait *= 2 {
			ref := r.launch(t, claimMarker, "sleep:"+wait.String(), "exit:0")
			r.wait(t, ref)
			if end(t, routed(t, r, ref)) {
				return
			}
			if wait > 10*time.Second {
				t.Fatal("the policy never decided the claim before the agent exited")
			}
		}
	})
}
