package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

var ref, _ = eventstore.NewReference(eventstore.OwnerTask, "task-1", "ae-policy")

// stateWith replays a header and the given records.
func stateWith(t *testing.T, recs ...eventstore.Record) *execution.State {
	t.Helper()
	all := append([]eventstore.Record{&eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "fixture",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
			Signals: eventstore.SurfacedSignalTypes()}}}, recs...)
	for i, r := range all {
		stamp(r, uint64(i+1))
	}
	st, err := execution.Replay(all)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func stamp(r eventstore.Record, seq uint64) {
	b := r.RecordBase()
	b.Sequence, b.Type, b.SchemaVersion = seq, r.Kind(), 1
	b.JournalID, b.AgentExecutionID, b.OwnerID, b.Scope = ref.JournalID, ref.AgentExecutionID, ref.OwnerID, ref.OwnerEntity
	b.OccurredAt = time.Date(2026, 11, 21, 9, 0, int(seq), 0, time.UTC)
	if b.RecordID == "" {
		key := eventstore.NaturalKey(r)
		if key == "" {
			key = fmt.Sprint(seq)
		}
		b.RecordID = eventstore.RecordID(ref.JournalID, r.Kind(), key)
	}
}

func running() *eventstore.StateChanged {
	return &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous}
}

func observe(id string, c eventstore.Confidence, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP, Confidence: c, Signal: eventstore.NewSignal(p)}
}

func n(v int64) *int64 { return &v }

func TestDecideTable(t *testing.T) {
	auth, low := eventstore.ConfidenceAuthoritative, eventstore.ConfidenceLow
	cases := []struct {
		name   string
		prior  []eventstore.Record
		obs    *eventstore.Observation
		action eventstore.DecisionAction
		kinds  []eventstore.Kind
		check  func(t *testing.T, out Outcome)
	}{
		{name: "progress is activity", obs: observe("o", auth, &eventstore.ProgressSignal{Summary: "reading", Units: &eventstore.Units{Completed: n(1), Total: n(3)}}),
			action: eventstore.ActionRecordOnly, kinds: []eventstore.Kind{eventstore.KindActivity},
			check: func(t *testing.T, out Outcome) {
				if a := out.Records[0].(*eventstore.ActivityUpdated); a.Progress.Summary != "reading" || *a.Progress.Units.Total != 3 {
					t.Fatalf("activity %+v does not carry the progress", a.Progress)
				}
			}},
		{name: "status with a phase sets activity", obs: observe("o", auth, &eventstore.StatusSignal{Summary: "testing", Phase: "testing"}),
			action: eventstore.ActionUpdateState, kinds: []eventstore.Kind{eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				if s := out.Records[0].(*eventstore.StateChanged); s.Activity != eventstore.ActivityTesting {
					t.Fatalf("activity %q, want testing", s.Activity)
				}
			}},
		{name: "status without a phase", obs: observe("o", auth, &eventstore.StatusSignal{Summary: "hm"}), action: eventstore.ActionRecordOnly},
		{name: "status at low confidence", obs: observe("o", low, &eventstore.StatusSignal{Summary: "x", Phase: "editing"}), action: eventstore.ActionRecordOnly},
		{name: "needs_input opens a request", prior: []eventstore.Record{running()},
			obs:    observe("o", auth, &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "?"}),
			action: eventstore.ActionUpdateState, kinds: []eventstore.Kind{eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				s := out.Records[0].(*eventstore.StateChanged)
				if s.Attention != eventstore.AttentionAwaitingOperator || s.CurrentInputRequestID != eventstore.SetInputRequest("req-1") || s.Lifecycle != "" {
					t.Fatalf("state change %+v, want awaiting-operator with req-1 and no lifecycle change", s)
				}
			}},
		{name: "needs_input while starting also marks running", obs: observe("o", auth, &eventstore.NeedsInputSignal{RequestID: "r", Question: "?"}),
			action: eventstore.ActionUpdateState, kinds: []eventstore.Kind{eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				if s := out.Records[0].(*eventstore.StateChanged); s.Lifecycle != eventstore.LifecycleRunning {
					t.Fatalf("lifecycle %q, want running (awaiting-input is not a lifecycle)", s.Lifecycle)
				}
			}},
		{name: "needs_input at low confidence", obs: observe("o", low, &eventstore.NeedsInputSignal{RequestID: "r", Question: "?"}), action: eventstore.ActionRecordOnly},
		{name: "blocked", obs: observe("o", auth, &eventstore.BlockedSignal{Reason: "no creds"}), action: eventstore.ActionUpdateState,
			kinds: []eventstore.Kind{eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				if s := out.Records[0].(*eventstore.StateChanged); s.Attention != eventstore.AttentionBlocked {
					t.Fatalf("attention %q, want blocked", s.Attention)
				}
			}},
		{name: "blocked at low confidence", obs: observe("o", low, &eventstore.BlockedSignal{Reason: "x"}), action: eventstore.ActionRecordOnly},
		{name: "ready for verification", obs: observe("o", auth, &eventstore.ReadyForVerificationSignal{Summary: "done"}),
			action: eventstore.ActionUpdateState, kinds: []eventstore.Kind{eventstore.KindStateChanged}},
		{name: "ready for verification at low confidence", obs: observe("o", low, &eventstore.ReadyForVerificationSignal{Summary: "x"}), action: eventstore.ActionRecordOnly},
		{name: "completed claim routes an owner effect", obs: observe("o", auth, &eventstore.CompletedClaimSignal{Summary: "fixed"}),
			action: eventstore.ActionRouteOwnerEffect, kinds: []eventstore.Kind{eventstore.KindOwnerEffect, eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				e := out.Records[0].(*eventstore.OwnerEffect)
				if e.EffectType != "execution.completion-claimed" || e.OwnerEntity != eventstore.OwnerTask || e.ObservationID != "o" {
					t.Fatalf("owner effect %+v", e)
				}
			}},
		{name: "failed claim routes an owner effect", obs: observe("o", auth, &eventstore.FailedClaimSignal{Reason: "tests fail"}),
			action: eventstore.ActionRouteOwnerEffect, kinds: []eventstore.Kind{eventstore.KindOwnerEffect, eventstore.KindStateChanged}},
		{name: "claim at low confidence", obs: observe("o", low, &eventstore.CompletedClaimSignal{Summary: "x"}), action: eventstore.ActionRecordOnly},
		{name: "message is emitted", obs: observe("o", auth, &eventstore.MessageSignal{Text: "hello"}), action: eventstore.ActionEmitMessage},
		{name: "usage is telemetry", obs: observe("o", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(10), OutputTokens: n(5)}),
			action: eventstore.ActionRecordOnly, kinds: []eventstore.Kind{eventstore.KindActivity},
			check: func(t *testing.T, out Outcome) {
				if tel := out.Records[0].(*eventstore.ActivityUpdated).Telemetry; *tel.TotalTokens != 15 {
					t.Fatalf("total %d, want 15", *tel.TotalTokens)
				}
			}},
		{name: "diagnostic is recorded only", obs: observe("o", eventstore.ConfidenceDiagnostic, &eventstore.DiagnosticSignal{Message: "odd"}), action: eventstore.ActionRecordOnly},
		{name: "diagnostic names the line type", obs: observe("o", eventstore.ConfidenceDiagnostic, &eventstore.DiagnosticSignal{Message: "odd", Code: "unknown-event",
			Adapter: "claude-code", LineType: "brand_new_event", AgentVersion: "9.9.9"}), action: eventstore.ActionRecordOnly,
			check: func(t *testing.T, out Outcome) {
				if r := out.Decision.Reason; !strings.Contains(r, "brand_new_event") || !strings.Contains(r, "claude-code") || !strings.Contains(r, "9.9.9") {
					t.Fatalf("reason %q does not name the adapter, line type and version", r)
				}
			}},
		{name: "plan is recorded", obs: observe("o", eventstore.ConfidenceHigh, &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "a", Status: eventstore.PlanItemOpen}}}),
			action: eventstore.ActionRecordOnly},
		{name: "checkpoint is recorded, state unmoved", prior: []eventstore.Record{running()},
			obs: observe("o", eventstore.ConfidenceHigh, &eventstore.CheckpointSignal{Title: "halfway"}), action: eventstore.ActionRecordOnly},
		{name: "permission request opens an input request", prior: []eventstore.Record{running()},
			obs: observe("o", eventstore.ConfidenceHigh, &eventstore.NeedsInputSignal{RequestID: "perm-1", Question: "Run Bash?", Kind: "permission",
				Tool: &eventstore.ToolUse{Name: "Bash"}, Choices: []string{"allow", "deny"}}),
			action: eventstore.ActionUpdateState, kinds: []eventstore.Kind{eventstore.KindStateChanged},
			check: func(t *testing.T, out Outcome) {
				s := out.Records[0].(*eventstore.StateChanged)
				if s.Attention != eventstore.AttentionAwaitingOperator || s.CurrentInputRequestID.ID != "perm-1" || !strings.Contains(out.Decision.Reason, "Bash") {
					t.Fatalf("state %+v, reason %q: want awaiting-operator on perm-1, the tool named", s, out.Decision.Reason)
				}
			}},
		{name: "evidence without a signal", obs: &eventstore.Observation{ObservationID: "o", Source: eventstore.ObservedPTY, Confidence: low, RawText: "$ ls"},
			action: eventstore.ActionRecordOnly},
		{name: "finished execution rejects", prior: []eventstore.Record{&eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted}},
			obs: observe("o", auth, &eventstore.ProgressSignal{Summary: "late"}), action: eventstore.ActionReject},
	}
	covered := map[eventstore.SignalType]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := stateWith(t, c.prior...)
			out := Decide(st, c.obs)
			if out.Duplicate {
				t.Fatal("fresh observation reported as duplicate")
			}
			if out.Decision.Action != c.action || out.Decision.ObservationID != "o" || out.Decision.DecisionID != "dec-o" || out.Decision.Reason == "" {
				t.Fatalf("decision %+v, want action %s for o with a reason", out.Decision, c.action)
			}
			var kinds []eventstore.Kind
			for _, r := range out.Records {
				kinds = append(kinds, r.Kind())
				if r.RecordBase().RecordID == "" && eventstore.NaturalKey(r) == "" {
					t.Fatalf("%s has no record id", r.Kind())
				}
				if sc, ok := r.(*eventstore.StateChanged); ok && sc.Lifecycle == "awaiting-input" {
					t.Fatalf("awaiting-input is not a lifecycle")
				}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(c.kinds) {
				t.Fatalf("records %v, want %v", kinds, c.kinds)
			}
			if c.check != nil {
				c.check(t, out)
			}
			// Deciding again on the same state gives the same outcome.
			again := Decide(st, c.obs)
			a, _ := json.Marshal(out)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				t.Fatalf("Decide is not deterministic:\n%s\n%s", a, b)
			}
		})
		if c.obs.Signal != nil {
			covered[c.obs.Signal.Type] = true
		}
	}
	for _, s := range eventstore.SignalTypes() {
		if !covered[s] {
			t.Errorf("no policy case for signal %s", s)
		}
	}
}

func TestDecideDuplicates(t *testing.T) {
	o := observe("o-1", eventstore.ConfidenceAuthoritative, &eventstore.NeedsInputSignal{RequestID: "r", Question: "?"})
	first := Decide(stateWith(t, running()), o)
	// Replay a journal that already holds the decision and its records: a
	// fresh policy (nothing but the replayed state) sees the duplicate.
	prior := []eventstore.Record{running(), o, first.Decision}
	prior = append(prior, first.Records...)
	out := Decide(stateWith(t, prior...), o)
	if !out.Duplicate || len(out.Records) != 0 {
		t.Fatalf("second decision: duplicate %v with %d records, want a duplicate with none", out.Duplicate, len(out.Records))
	}
	if out.Decision.DecisionID != first.Decision.DecisionID || out.Decision.Action != first.Decision.Action || out.Decision.Sequence != 4 {
		t.Fatalf("duplicate answered with %+v, want the original decision (seq 4)", out.Decision)
	}
}

func TestDecideMessageAnswersRequest(t *testing.T) {
	o := observe("o-1", eventstore.ConfidenceAuthoritative, &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "?"})
	opened := Decide(stateWith(t, running()), o)
	prior := append([]eventstore.Record{running(), o, opened.Decision}, opened.Records...)
	st := stateWith(t, prior...)
	if !st.AwaitingInput() {
		t.Fatal("request not open after needs_input decision")
	}
	answer := &eventstore.MessageAccepted{MessageID: "m-1", Source: eventstore.SourceOperator, MessageType: "answer",
		Payload: json.RawMessage(`{"requestId":"req-1","text":"yes"}`)}
	out, ok := DecideMessage(st, answer)
	if !ok || out.Decision.Action != eventstore.ActionUpdateState || len(out.Records) != 1 {
		t.Fatalf("answer: ok %v outcome %+v, want update-state with one state change", ok, out)
	}
	sc := out.Records[0].(*eventstore.StateChanged)
	if sc.CurrentInputRequestID != eventstore.ClearInputRequest() || sc.Attention != eventstore.AttentionAutonomous {
		t.Fatalf("answer state change %+v, want the request cleared", sc)
	}
	// The request and its answer are separate records; replaying both clears it.
	after := stateWith(t, append(append(prior, answer, out.Decision), out.Records...)...)
	if after.AwaitingInput() || after.CurrentInputRequestID != "" {
		t.Fatalf("after the answer the request is still open: %+v", after.Semantic())
	}
	stale := &eventstore.MessageAccepted{MessageID: "m-2", Source: eventstore.SourceOperator, MessageType: "answer",
		Payload: json.RawMessage(`{"requestId":"req-0"}`)}
	if out, _ := DecideMessage(st, stale); out.Decision.Action != eventstore.ActionRecordOnly || len(out.Records) != 0 {
		t.Fatalf("answer to a closed request: %+v, want record-only", out)
	}
	plain := &eventstore.MessageAccepted{MessageID: "m-3", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: json.RawMessage(`{"text":"hi"}`)}
	if _, ok := DecideMessage(st, plain); ok {
		t.Fatal("a plain prompt got a decision")
	}
}

func TestDecideUsageIsNotDoubleCounted(t *testing.T) {
	st := stateWith(t, running())
	u1 := Decide(st, observe("u1", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(100), OutputTokens: n(10), Cumulative: true}))
	st = stateWith(t, running(), observe("u1", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(100), OutputTokens: n(10), Cumulative: true}), u1.Decision, u1.Records[0])
	// The same running total reported again leaves the totals as they were.
	u2 := Decide(st, observe("u2", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(100), OutputTokens: n(10), Cumulative: true}))
	if tel := u2.Records[0].(*eventstore.ActivityUpdated).Telemetry; *tel.InputTokens != 100 || *tel.TotalTokens != 110 {
		t.Fatalf("cumulative repeat gave in %d total %d, want 100 and 110", *tel.InputTokens, *tel.TotalTokens)
	}
	// An increment adds to them.
	u3 := Decide(st, observe("u3", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(5), OutputTokens: n(1)}))
	if tel := u3.Records[0].(*eventstore.ActivityUpdated).Telemetry; *tel.InputTokens != 105 || *tel.TotalTokens != 116 {
		t.Fatalf("increment gave in %d total %d, want 105 and 116", *tel.InputTokens, *tel.TotalTokens)
	}
}

// TestDecideUsageCountsEveryObservation is the journal of a real run: a
// tool's activity update (its name only) comes between two usage lines, and
// the second usage line is appended before the first one's decision. The
// totals must still be exact at each decision.
func TestDecideUsageCountsEveryObservation(t *testing.T) {
	u1 := observe("u1", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(56), OutputTokens: n(4)})
	tool := &eventstore.ActivityUpdated{Base: eventstore.Base{RecordID: "tool-1"}, Telemetry: &eventstore.Telemetry{ActiveToolName: "bash"}}
	u2 := observe("u2", eventstore.ConfidenceHigh, &eventstore.UsageSignal{InputTokens: n(146), OutputTokens: n(10)})
	// The policy decides on u1 with u1 folded, then on u2 with everything up
	// to u2 folded, including u1 but not u1's decision.
	d1 := Decide(stateWith(t, running(), u1), u1)
	d2 := Decide(stateWith(t, running(), u1, tool, u2), u2)
	for _, c := range []struct {
		out           Outcome
		in, out2, tot int64
	}{{d1, 56, 4, 60}, {d2, 202, 14, 216}} {
		tel := c.out.Records[0].(*eventstore.ActivityUpdated).Telemetry
		if *tel.InputTokens != c.in || *tel.OutputTokens != c.out2 || *tel.TotalTokens != c.tot {
			t.Errorf("%s: telemetry in %d out %d total %d, want %d %d %d", c.out.Decision.ObservationID, *tel.InputTokens, *tel.OutputTokens, *tel.TotalTokens, c.in, c.out2, c.tot)
		}
	}
	// Replayed in the order the log holds them, the latest telemetry is the
	// last total, and a later tool update does not erase it.
	st := stateWith(t, running(), u1, tool, u2, d2.Decision, d2.Records[0], d1.Decision, d1.Records[0],
		&eventstore.ActivityUpdated{Base: eventstore.Base{RecordID: "tool-2"}, Telemetry: &eventstore.Telemetry{ActiveToolName: "read"}})
	if u := st.Usage; *u.TotalTokens != 216 {
		t.Errorf("replayed usage total %d, want 216", *u.TotalTokens)
	}
	if tel := st.Latest.Telemetry; tel.TotalTokens == nil || *tel.TotalTokens != 216 || tel.ActiveToolName != "read" {
		t.Errorf("latest telemetry %+v, want counts kept beside the active tool", tel)
	}
}

func TestDecideRejectsUndeclaredSignal(t *testing.T) {
	all := []eventstore.Record{&eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "x",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
			Signals: []eventstore.SignalType{eventstore.SignalProgress}}}}
	stamp(all[0], 1)
	st, err := execution.Replay(all)
	if err != nil {
		t.Fatal(err)
	}
	out := Decide(st, observe("o", eventstore.ConfidenceAuthoritative, &eventstore.BlockedSignal{Reason: "x"}))
	if out.Decision.Action != eventstore.ActionReject || len(out.Records) != 0 {
		t.Fatalf("undeclared signal: %+v, want reject", out.Decision)
	}
}

// TestDecideConversationTurnEnd: in a conversation, the CLI's result ends a
// turn; the claim still reaches the owner, and the attention is left to the
// runtime, which records the wait for the next message in order with it.
// A claim the agent signals itself still waits for the owner's verdict.
func TestDecideConversationTurnEnd(t *testing.T) {
	h := &eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "claude-code",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
			Signals: eventstore.SurfacedSignalTypes(), SessionShape: eventstore.ShapeConversation}}
	all := []eventstore.Record{h, running()}
	for i, r := range all {
		stamp(r, uint64(i+1))
	}
	st, err := execution.Replay(all)
	if err != nil {
		t.Fatal(err)
	}
	result := &eventstore.Observation{ObservationID: "out-9-1", Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceHigh,
		Signal: eventstore.NewSignal(&eventstore.CompletedClaimSignal{Summary: "done"})}
	out := Decide(st, result)
	if out.Decision.Action != eventstore.ActionRouteOwnerEffect || len(out.Records) != 1 || out.Records[0].Kind() != eventstore.KindOwnerEffect {
		t.Fatalf("turn result: %+v with %d records, want route-owner-effect with the owner effect only", out.Decision, len(out.Records))
	}
	signalled := observe("mcp-1", eventstore.ConfidenceHigh, &eventstore.CompletedClaimSignal{Summary: "done"})
	if out := Decide(st, signalled); len(out.Records) != 2 || out.Records[1].(*eventstore.StateChanged).Attention != eventstore.AttentionAwaitingSystem {
		t.Fatalf("signalled claim: %d records, want the effect and awaiting-system", len(out.Records))
	}
}
