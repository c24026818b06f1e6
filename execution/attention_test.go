package execution

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// TestEndLeavesNothingWaiting: however an execution stood when its process
// ended, and whatever the end record says of the attention, it ends with
// attention none, no request open, nothing blocking and idle; a state
// change decided before the end and appended after it moves nothing.
func TestEndLeavesNothingWaiting(t *testing.T) {
	running := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous}
	standings := []struct {
		name  string
		recs  []eventstore.Record
		where Standing
	}{
		{"before the run", nil, StandingNone},
		{"autonomous", []eventstore.Record{running}, StandingAutonomous},
		{"blocked", []eventstore.Record{running,
			obs("o-1", &eventstore.BlockedSignal{Reason: "no creds", Needs: "a token"}),
			&eventstore.StateChanged{Attention: eventstore.AttentionBlocked, Reason: "no creds", Activity: eventstore.ActivityTesting}}, StandingBlocked},
		{"a request open", []eventstore.Record{running,
			obs("o-1", &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "?"}),
			&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("req-1")}}, StandingRequest},
		{"between turns", []eventstore.Record{running,
			&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator}}, StandingBetweenTurns},
		{"a claim waiting", []eventstore.Record{running,
			&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingSystem}}, StandingAwaitingSystem},
	}
	for _, w := range standings {
		for _, l := range []eventstore.Lifecycle{eventstore.LifecycleCompleted, eventstore.LifecycleFailed,
			eventstore.LifecycleCancelled, eventstore.LifecycleTerminated} {
			for _, says := range []eventstore.Attention{"", eventstore.AttentionAwaitingSystem, eventstore.AttentionNone} {
				t.Run(w.name+"/"+string(l)+"/"+string(says), func(t *testing.T) {
					recs := append([]eventstore.Record{header()}, clone(w.recs)...)
					before, err := Replay(journal(recs...))
					if err != nil {
						t.Fatal(err)
					}
					if got := before.Standing(); got != w.where {
						t.Fatalf("stands %s, want %s", got, w.where)
					}
					recs = append(journal(recs...),
						&eventstore.StateChanged{Lifecycle: l, Attention: says, Reason: "exit"},
						// Decided on a claim before the end, appended after it.
						&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingSystem, Reason: "completed_claim"})
					st, err := Replay(journal(recs...))
					if err != nil {
						t.Fatal(err)
					}
					if st.Lifecycle != l || st.Attention != eventstore.AttentionNone || st.CurrentInputRequestID != "" ||
						st.Blocked != nil || st.Activity != eventstore.ActivityIdle || st.Standing() != StandingEnded {
						t.Fatalf("ended %s, attention %s, request %q, blocked %+v, activity %s; want %s, none, no request, nothing blocking, idle",
							st.Lifecycle, st.Attention, st.CurrentInputRequestID, st.Blocked, st.Activity, l)
					}
					for on := AttentionEvent(0); on <= OnTerminated; on++ {
						if mv := NextAttention(st, on); mv.Moves {
							t.Errorf("after the end, event %d moves to %s", on, mv.To)
						}
					}
				})
			}
		}
	}
}

// clone copies the records so that each journal stamps its own.
func clone(recs []eventstore.Record) []eventstore.Record {
	out := make([]eventstore.Record, len(recs))
	for i, r := range recs {
		switch r := r.(type) {
		case *eventstore.StateChanged:
			c := *r
			out[i] = &c
		case *eventstore.Observation:
			c := *r
			out[i] = &c
		default:
			out[i] = r
		}
	}
	return out
}
