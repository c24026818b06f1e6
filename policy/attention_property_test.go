package policy

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

var (
	attentionSeed  = flag.Uint64("attention.seed", 0, "seed of TestAttentionProperties (0: from the clock)")
	attentionCases = flag.Int("attention.cases", 150, "executions TestAttentionProperties tries")
)

// fileLog is the file store as the subscriber's log; the test delivers the
// log's records itself, in the order and at the times it picks.
type fileLog struct{ *eventstore.FileStore }

func (fileLog) Consume(context.Context, eventstore.ConsumerConfig, func(context.Context, eventstore.Entry) error) error {
	return errors.New("records are delivered by the test")
}

// input is one record an execution's runtime, agent or operator adds.
type input struct {
	// record makes the record anew: a store stamps what it appends.
	record func() eventstore.Record
	// what it is to the model below.
	kind      string
	id        string // request id of needs_input and answers
	reason    string // blocked
	needs     string
	lifecycle eventstore.Lifecycle // exit
}

// model is what the attention table says an execution's state is after
// inputs in log order, each decided at once, stated on its own so that the
// table is checked too: blocked clears on progress, status, a message or
// anything that replaces it; a request is awaiting-operator until answered;
// the end is none whatever came before it; nothing moves after the end.
type model struct {
	lifecycle eventstore.Lifecycle
	attention eventstore.Attention
	request   string
	blocked   *execution.Blocked
}

func (m *model) apply(in input) {
	if m.lifecycle.Final() {
		return
	}
	waitsForAMessage := m.attention == eventstore.AttentionBlocked || m.attention == eventstore.AttentionAwaitingSystem
	switch in.kind {
	case "running":
		m.lifecycle, m.attention = eventstore.LifecycleRunning, eventstore.AttentionAutonomous
	case "progress", "status", "plan":
		if m.attention == eventstore.AttentionBlocked {
			m.attention, m.blocked = eventstore.AttentionAutonomous, nil
		}
	case "blocked":
		if m.request == "" {
			m.attention, m.blocked = eventstore.AttentionBlocked, &execution.Blocked{Reason: in.reason, Needs: in.needs}
		}
	case "needs_input":
		m.attention, m.request, m.blocked = eventstore.AttentionAwaitingOperator, in.id, nil
	case "claim":
		if m.request == "" {
			m.attention, m.blocked = eventstore.AttentionAwaitingSystem, nil
		}
	case "answer":
		switch {
		case m.request != "" && in.id == m.request:
			m.attention, m.request = eventstore.AttentionAutonomous, ""
		case waitsForAMessage:
			m.attention, m.blocked = eventstore.AttentionAutonomous, nil
		}
	case "prompt":
		if waitsForAMessage {
			m.attention, m.blocked = eventstore.AttentionAutonomous, nil
		}
	case "exit":
		m.lifecycle, m.attention, m.request, m.blocked = in.lifecycle, eventstore.AttentionNone, "", nil
	case "weak", "noise":
		// Signals that move nothing.
	default:
		panic("model: unknown input " + in.kind)
	}
}

// execution generates the inputs of one execution: it runs, the agent
// signals, the operator answers and writes, and the process may end
// anywhere, with a few records after its end.
func genInputs(rng *rand.Rand) []input {
	obs := func(i int, c eventstore.Confidence, p eventstore.SignalPayload) func() eventstore.Record {
		return func() eventstore.Record {
			return &eventstore.Observation{ObservationID: fmt.Sprintf("o-%d", i), Source: eventstore.ObservedMCP, Confidence: c, Signal: eventstore.NewSignal(p)}
		}
	}
	msg := func(i int, typ string, payload map[string]string) func() eventstore.Record {
		b, _ := json.Marshal(payload)
		return func() eventstore.Record {
			return &eventstore.MessageAccepted{MessageID: fmt.Sprintf("m-%d", i), Source: eventstore.SourceOperator, MessageType: typ, Payload: b}
		}
	}
	ins := []input{{kind: "running", record: func() eventstore.Record {
		return &eventstore.StateChanged{Base: eventstore.Base{RecordID: "running"},
			Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: "process started"}
	}}}
	n := 4 + rng.IntN(20)
	exitAt := rng.IntN(n + n/3) // past n: the process does not end
	var requests []string
	auth := eventstore.ConfidenceAuthoritative
	for i := range n {
		var in input
		switch k := rng.IntN(14); {
		case i == exitAt:
			l := []eventstore.Lifecycle{eventstore.LifecycleCompleted, eventstore.LifecycleFailed,
				eventstore.LifecycleCancelled, eventstore.LifecycleTerminated}[rng.IntN(4)]
			// As the runtime writes it, or without the attention, as a
			// launch that failed or another writer does.
			full := rng.IntN(2) == 0
			in = input{kind: "exit", lifecycle: l, record: func() eventstore.Record {
				end := &eventstore.StateChanged{Base: eventstore.Base{RecordID: "end"}, Lifecycle: l, Reason: "exit"}
				if full {
					end.Attention, end.Activity, end.CurrentInputRequestID = eventstore.AttentionNone, eventstore.ActivityIdle, eventstore.ClearInputRequest()
				}
				return end
			}}
		case k < 2:
			in = input{kind: "progress", record: obs(i, auth, &eventstore.ProgressSignal{Summary: fmt.Sprint("step ", i)})}
		case k < 3:
			phase := eventstore.Activities[rng.IntN(len(eventstore.Activities))]
			in = input{kind: "status", record: obs(i, eventstore.ConfidenceHigh, &eventstore.StatusSignal{Summary: "at " + string(phase), Phase: string(phase)})}
		case k < 5:
			in = input{kind: "blocked", reason: fmt.Sprint("reason ", i), needs: []string{"", fmt.Sprint("needs ", i)}[rng.IntN(2)]}
			in.record = obs(i, auth, &eventstore.BlockedSignal{Reason: in.reason, Needs: in.needs})
		case k < 7:
			in = input{kind: "needs_input", id: fmt.Sprint("req-", i)}
			in.record = obs(i, auth, &eventstore.NeedsInputSignal{RequestID: in.id, Question: "which?", Choices: []string{"a", "b"}})
			requests = append(requests, in.id)
		case k < 8:
			claims := []eventstore.SignalPayload{&eventstore.ReadyForVerificationSignal{Summary: "ready"},
				&eventstore.CompletedClaimSignal{Summary: "done"}, &eventstore.FailedClaimSignal{Reason: "cannot"}}
			in = input{kind: "claim", record: obs(i, auth, claims[rng.IntN(len(claims))])}
		case k < 10:
			// An answer to the newest request, or to an older one.
			id := "req-none"
			if len(requests) > 0 {
				id = requests[len(requests)-1-rng.IntN(min(2, len(requests)))]
			}
			in = input{kind: "answer", id: id, record: msg(i, "answer", map[string]string{"requestId": id, "text": "a"})}
		case k < 11:
			in = input{kind: "prompt", record: msg(i, "prompt", map[string]string{"text": "carry on"})}
		case k < 12:
			in = input{kind: "plan", record: obs(i, eventstore.ConfidenceHigh, &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "x", Status: eventstore.PlanItemOpen}}})}
		case k < 13:
			// Too weak to move anything.
			in = input{kind: "weak", record: obs(i, eventstore.ConfidenceLow, &eventstore.BlockedSignal{Reason: "maybe"})}
		default:
			in = input{kind: "noise", record: obs(i, eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n64(3)})}
		}
		ins = append(ins, in)
	}
	return ins
}

func n64(v int64) *int64 { return &v }

// schedule says when the policy gets the log's records: after each input,
// at once (eager), or at random, with the subscriber sometimes replaced by
// a fresh one (a takeover) and records sometimes delivered again.
type schedule struct {
	rng   *rand.Rand // nil: eager
	churn bool
}

// run appends ins to a new journal in log, with the real subscriber
// deciding on the records as sched says, and checks at every moment the
// policy has caught up that the replayed state is the model's. It returns
// the replayed journal once everything is decided.
func run(t *testing.T, log fileLog, name string, ins []input, sched schedule) *execution.State {
	t.Helper()
	ctx := context.Background()
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-prop", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.EnsureJournal(ctx, ref, &eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "fixture",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless, Signals: eventstore.SurfacedSignalTypes()}}); err != nil {
		t.Fatal(err)
	}
	sub := NewSubscriber(log, SubscriberConfig{})
	var delivered []eventstore.Entry
	next := func() (eventstore.Entry, bool) {
		for e, err := range log.ReadJournal(ctx, ref, uint64(len(delivered))+1) {
			if err != nil {
				t.Fatal(err)
			}
			return e, true
		}
		return eventstore.Entry{}, false
	}
	deliver := func(e eventstore.Entry) {
		if err := sub.Handle(ctx, e); err != nil {
			t.Fatalf("handle %s %d: %v", e.Record.Kind(), e.Record.RecordBase().Sequence, err)
		}
	}
	var m model
	appended := 0
	appendNext := func() {
		r := ins[appended].record()
		if _, err := log.Append(ctx, ref, r); err != nil {
			t.Fatalf("append %s: %v", r.Kind(), err)
		}
		m.apply(ins[appended])
		appended++
	}
	for {
		e, pending := next()
		if !pending {
			// The policy has caught up.
			checkModel(t, log, ref, &m, ins[:appended])
			if appended == len(ins) {
				break
			}
			appendNext()
			continue
		}
		if appended < len(ins) && sched.rng != nil && sched.rng.IntN(3) == 0 {
			appendNext()
			continue
		}
		if sched.churn && sched.rng.IntN(8) == 0 {
			sub = NewSubscriber(log, SubscriberConfig{})
		}
		if sched.churn && len(delivered) > 1 && sched.rng.IntN(8) == 0 {
			// At least once: an entry comes again.
			deliver(delivered[1+sched.rng.IntN(len(delivered)-1)])
		}
		deliver(e)
		delivered = append(delivered, e)
	}
	return replayJournal(t, log, ref)
}

func replayJournal(t *testing.T, log fileLog, ref eventstore.Reference) *execution.State {
	t.Helper()
	st, err := execution.Replay(fixtures.ReadJournal(t, log, ref))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkModel compares the replayed journal, all of it decided, with the
// model of the inputs so far, and checks the invariants the table states.
func checkModel(t *testing.T, log fileLog, ref eventstore.Reference, m *model, ins []input) {
	t.Helper()
	st := replayJournal(t, log, ref)
	got := model{lifecycle: st.Lifecycle, attention: st.Attention, request: st.CurrentInputRequestID, blocked: st.Blocked}
	want := *m
	if want.lifecycle == "" {
		want.lifecycle, want.attention = eventstore.LifecycleStarting, eventstore.AttentionNone
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(model{})); diff != "" {
		kinds := make([]string, len(ins))
		for i, in := range ins {
			kinds[i] = in.kind
		}
		t.Fatalf("after %v (-table +journal):\n%s\n%s", kinds, diff, timelineText(st))
	}
	if st.CurrentInputRequestID != "" && st.Attention != eventstore.AttentionAwaitingOperator {
		t.Fatalf("request %s open while %s", st.CurrentInputRequestID, st.Attention)
	}
	if (st.Attention == eventstore.AttentionBlocked) != (st.Blocked != nil) {
		t.Fatalf("attention %s with blocked %+v", st.Attention, st.Blocked)
	}
	ended := false
	for _, it := range st.Timeline {
		if it.Kind != execution.ItemState {
			continue
		}
		if ended {
			t.Fatalf("state moved after the end: %s\n%s", it.Text, timelineText(st))
		}
		ended = it.Lifecycle.Final()
	}
}

func timelineText(st *execution.State) string {
	s := ""
	for _, it := range st.Timeline {
		s += fmt.Sprintf("  %3d %-12s %s\n", it.Sequence, it.Kind, it.Text)
	}
	return s
}

// decisionsOf are the journal's decisions by what they answer, without
// their sequences.
func decisionsOf(st *execution.State) map[string]string {
	out := map[string]string{}
	for id, d := range st.Decisions {
		out[id] = string(d.Action) + ": " + d.Reason
	}
	return out
}

// TestAttentionProperties feeds random executions through the real policy
// subscriber and replay, deciding at random moments, after a takeover or
// twice, and checks that the attention follows the table at every moment
// the policy has caught up, that every decision, and so the end state, is
// the same as when each record is decided at once (whether a claim is
// decided before or after the exit, say), and that nothing moves after the
// end.
func TestAttentionProperties(t *testing.T) {
	seed := *attentionSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -attention.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	store, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := fileLog{store}
	for c := range *attentionCases {
		ins := genInputs(rng)
		eager := run(t, log, fmt.Sprintf("ae-eager-%d", c), ins, schedule{})
		late := run(t, log, fmt.Sprintf("ae-late-%d", c), ins, schedule{rng: rng, churn: c%2 == 1})
		if diff := cmp.Diff(decisionsOf(eager), decisionsOf(late)); diff != "" {
			t.Fatalf("case %d: decisions depend on when they were taken (-at once +late):\n%s", c, diff)
		}
		if eager.Activity != late.Activity || !slices.Equal(eager.Semantic().ProcessedObservations, late.Semantic().ProcessedObservations) {
			t.Fatalf("case %d: activity %s at once, %s late", c, eager.Activity, late.Activity)
		}
	}
}

// TestClaimAndExitCommute: a claim decided before the exit and one decided
// after it end the same way, and both reach the owner.
func TestClaimAndExitCommute(t *testing.T) {
	store, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := fileLog{store}
	ctx := context.Background()
	for _, claim := range []eventstore.SignalPayload{&eventstore.CompletedClaimSignal{Summary: "done"},
		&eventstore.ReadyForVerificationSignal{Summary: "ready"}, &eventstore.FailedClaimSignal{Reason: "cannot"}} {
		var ends []*execution.State
		for _, decideFirst := range []bool{true, false} {
			ref, _ := eventstore.NewReference(eventstore.OwnerTask, "t-commute", fmt.Sprintf("ae-%s-%v", claim.SignalType(), decideFirst))
			if _, err := log.EnsureJournal(ctx, ref, &eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "fixture",
				ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless, Signals: eventstore.SurfacedSignalTypes()}}); err != nil {
				t.Fatal(err)
			}
			sub := NewSubscriber(log, SubscriberConfig{})
			appendAndMaybeDecide := func(r eventstore.Record, decide bool) eventstore.Entry {
				e, err := log.Append(ctx, ref, r)
				if err != nil {
					t.Fatal(err)
				}
				if decide {
					if err := sub.Handle(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
				return e
			}
			appendAndMaybeDecide(&eventstore.StateChanged{Base: eventstore.Base{RecordID: "running"}, Lifecycle: eventstore.LifecycleRunning,
				Attention: eventstore.AttentionAutonomous}, true)
			o := appendAndMaybeDecide(&eventstore.Observation{ObservationID: "claim", Source: eventstore.ObservedMCP,
				Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(claim)}, decideFirst)
			if decideFirst {
				if st := replayJournal(t, log, ref); st.Attention != eventstore.AttentionAwaitingSystem {
					t.Fatalf("%s decided: attention %s, want awaiting-system", claim.SignalType(), st.Attention)
				}
			}
			end := appendAndMaybeDecide(&eventstore.StateChanged{Base: eventstore.Base{RecordID: "end"}, Lifecycle: eventstore.LifecycleCompleted,
				Reason: "exit status 0"}, true)
			if !decideFirst {
				if err := sub.Handle(ctx, o); err != nil {
					t.Fatal(err)
				}
				if err := sub.Handle(ctx, end); err != nil {
					t.Fatal(err)
				}
			}
			st := replayJournal(t, log, ref)
			if d, ok := st.Decisions["claim"]; !ok || d.Action == eventstore.ActionReject {
				t.Fatalf("%s (decided first %v): decision %+v, want it taken on the journal at the claim", claim.SignalType(), decideFirst, d)
			}
			ends = append(ends, st)
		}
		before, after := ends[0], ends[1]
		for _, st := range ends {
			if st.Lifecycle != eventstore.LifecycleCompleted || st.Attention != eventstore.AttentionNone {
				t.Errorf("%s: ended %s, attention %s; want completed, none", claim.SignalType(), st.Lifecycle, st.Attention)
			}
		}
		b, a := before.Decisions["claim"], after.Decisions["claim"]
		if before.Attention != after.Attention || b.Action != a.Action || b.Reason != a.Reason {
			t.Errorf("%s: decided before the exit: %s, %s %q; after it: %s, %s %q; want the same",
				claim.SignalType(), before.Attention, b.Action, b.Reason, after.Attention, a.Action, a.Reason)
		}
	}
}
