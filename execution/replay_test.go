package execution

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

var ref = func() eventstore.Reference {
	r, err := eventstore.NewReference(eventstore.OwnerTask, "task-1", "ae-replay")
	if err != nil {
		panic(err)
	}
	return r
}()

// journal stamps records with the base fields a store would give them.
func journal(records ...eventstore.Record) []eventstore.Record {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i, r := range records {
		b := r.RecordBase()
		b.Sequence = uint64(i + 1)
		b.Type = r.Kind()
		b.SchemaVersion = 1
		b.JournalID, b.AgentExecutionID, b.OwnerID, b.Scope = ref.JournalID, ref.AgentExecutionID, ref.OwnerID, ref.OwnerEntity
		b.OccurredAt = t0.Add(time.Duration(i) * time.Second)
		key := eventstore.NaturalKey(r)
		if key == "" {
			key = fmt.Sprint("n-", i)
		}
		b.RecordID = eventstore.RecordID(ref.JournalID, r.Kind(), key)
		if err := eventstore.Validate(r); err != nil {
			panic(fmt.Sprintf("record %d: %v", i+1, err))
		}
	}
	return records
}

func header() *eventstore.Header {
	return &eventstore.Header{JournalKind: "agent-execution-interaction-journal", AgentID: "fixture",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless,
			Signals: eventstore.SurfacedSignalTypes()},
		TransportState: &eventstore.TransportState{StructuredLane: eventstore.LaneStdio}}
}

func obs(id string, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
}

func msg(id string, payload string) *eventstore.MessageAccepted {
	return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt",
		Payload: json.RawMessage(payload), MutatesContext: true}
}

func i64(v int64) *int64 { return &v }

func TestReplayInputRequestCycle(t *testing.T) {
	recs := journal(
		header(),
		&eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous},
		msg("m-1", `{"text":"fix it"}`),
		obs("o-1", &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "401 or 403?", Choices: []string{"401", "403"}}),
		&eventstore.Decision{DecisionID: "d-1", ObservationID: "o-1", Action: eventstore.ActionUpdateState},
		&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("req-1")},
		// The answer is its own message; the state change clears the request.
		msg("m-2", `{"text":"401","requestId":"req-1"}`),
		&eventstore.StateChanged{Attention: eventstore.AttentionAutonomous, CurrentInputRequestID: eventstore.ClearInputRequest()},
	)
	s, err := Replay(recs[:6])
	if err != nil {
		t.Fatal(err)
	}
	if !s.AwaitingInput() || s.Lifecycle != eventstore.LifecycleRunning || s.CurrentInputQuestion != "401 or 403?" {
		t.Fatalf("state = %s/%s request %q question %q, want running/awaiting-operator req-1 with its question",
			s.Lifecycle, s.Attention, s.CurrentInputRequestID, s.CurrentInputQuestion)
	}
	s, err = Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if s.AwaitingInput() || s.CurrentInputRequestID != "" || s.Attention != eventstore.AttentionAutonomous {
		t.Fatalf("after the answer: %s request %q, want autonomous and no request", s.Attention, s.CurrentInputRequestID)
	}
	var kinds []ItemKind
	for _, it := range s.Timeline {
		kinds = append(kinds, it.Kind)
	}
	want := []ItemKind{ItemState, ItemMessage, ItemNeedsInput, ItemDecision, ItemState, ItemMessage, ItemState}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("timeline kinds (-want +got):\n%s", diff)
	}
	if s.Timeline[5].RequestID != "req-1" || s.Timeline[2].RequestID != "req-1" || len(s.Timeline[2].Choices) != 2 {
		t.Fatalf("request ids not carried to the timeline: %+v / %+v", s.Timeline[2], s.Timeline[5])
	}
}

func TestReplayTimelineThroughSignalRegistry(t *testing.T) {
	payloads := []eventstore.SignalPayload{
		&eventstore.ProgressSignal{Summary: "p"}, &eventstore.StatusSignal{Summary: "s"},
		&eventstore.NeedsInputSignal{RequestID: "r", Question: "q"}, &eventstore.BlockedSignal{Reason: "b"},
		&eventstore.ReadyForVerificationSignal{Summary: "v"}, &eventstore.CompletedClaimSignal{Summary: "c"},
		&eventstore.FailedClaimSignal{Reason: "f"}, &eventstore.MessageSignal{Text: "m"},
		&eventstore.UsageSignal{TotalTokens: i64(5)}, &eventstore.DiagnosticSignal{Message: "d"},
	}
	recs := []eventstore.Record{header()}
	for i, p := range payloads {
		recs = append(recs, obs(fmt.Sprint("o-", i), p))
	}
	s, err := Replay(journal(recs...))
	if err != nil {
		t.Fatal(err)
	}
	got := map[eventstore.SignalType]TimelineItem{}
	for _, it := range s.Timeline {
		got[it.Signal] = it
	}
	for _, p := range payloads {
		spec, _ := eventstore.LookupSignal(p.SignalType())
		it, ok := got[p.SignalType()]
		if spec.Timeline == eventstore.TimelineNone {
			if ok {
				t.Errorf("%s has no timeline projection but produced %+v", p.SignalType(), it)
			}
			continue
		}
		if !ok || it.Kind != ItemKind(spec.Timeline) || it.Text != p.TimelineText() {
			t.Errorf("%s: item %+v, want kind %s text %q", p.SignalType(), it, spec.Timeline, p.TimelineText())
		}
	}
}

func TestReplayRejects(t *testing.T) {
	good := journal(header(), msg("m-1", `{}`), msg("m-2", `{}`))
	foreign := journal(header(), msg("m-1", `{}`))
	foreign[1].RecordBase().AgentExecutionID = "someone-else"
	otherJournal := journal(header(), msg("m-1", `{}`))
	otherJournal[1].RecordBase().JournalID = "journal-other"
	for _, c := range []struct {
		name string
		recs []eventstore.Record
		want error
	}{
		{"no header", good[1:], ErrNoHeader},
		{"empty", nil, ErrNoHeader},
		{"foreign execution", foreign, ErrForeignRecord},
		{"foreign journal", otherJournal, ErrForeignRecord},
		{"out of order", []eventstore.Record{good[0], good[2], good[1]}, ErrOutOfOrder},
		{"second header", []eventstore.Record{good[0], good[1], good[0]}, ErrOutOfOrder},
	} {
		if _, err := Replay(c.recs); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// randomJournal builds a plausible journal from a seed: messages,
// observations of every signal, decisions, state changes and a good share of
// activity updates.
func randomJournal(rng *rand.Rand, n int) []eventstore.Record {
	recs := []eventstore.Record{header()}
	lifecycles := []eventstore.Lifecycle{eventstore.LifecycleRunning, eventstore.LifecycleRunning, eventstore.LifecycleCompleted}
	req := 0
	for i := 0; len(recs) < n; i++ {
		switch rng.IntN(7) {
		case 0:
			recs = append(recs, msg(fmt.Sprint("m-", rng.IntN(n)), `{"text":"hi"}`))
		case 1:
			req++
			recs = append(recs, obs(fmt.Sprint("o-", i), &eventstore.NeedsInputSignal{RequestID: fmt.Sprint("r-", req), Question: "?"}),
				&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest(fmt.Sprint("r-", req))})
		case 2:
			recs = append(recs, &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous, CurrentInputRequestID: eventstore.ClearInputRequest(),
				Activity: eventstore.Activities[rng.IntN(len(eventstore.Activities))]})
		case 3:
			recs = append(recs, &eventstore.StateChanged{Lifecycle: lifecycles[rng.IntN(len(lifecycles))]})
		case 4:
			id := fmt.Sprint("o-", rng.IntN(n))
			recs = append(recs, obs(id, &eventstore.ProgressSignal{Summary: "p"}),
				&eventstore.Decision{DecisionID: "d-" + id, ObservationID: id, Action: eventstore.ActionRecordOnly})
		default:
			recs = append(recs, &eventstore.ActivityUpdated{Activity: eventstore.Activities[rng.IntN(len(eventstore.Activities))],
				Telemetry:     &eventstore.Telemetry{TotalTokens: i64(int64(i))},
				CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: fmt.Sprint("f", i)}})
		}
	}
	return journal(recs...)
}

// Dropping any subset of activity.updated records leaves the semantic state
// as it was: activity records are compressible.
func TestReplaySemanticStateIgnoresActivityRecords(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		recs := randomJournal(rng, 10+rng.IntN(120))
		full, err := Replay(recs)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var kept []eventstore.Record
		dropped := 0
		for _, r := range recs {
			if _, ok := r.(*eventstore.ActivityUpdated); ok && rng.IntN(2) == 0 {
				dropped++
				continue
			}
			kept = append(kept, r)
		}
		part, err := Replay(kept)
		if err != nil {
			t.Fatalf("seed %d, %d activity records dropped: %v", seed, dropped, err)
		}
		if diff := cmp.Diff(full.Semantic(), part.Semantic()); diff != "" {
			t.Fatalf("seed %d: dropping %d activity records changed semantic state (-full +part):\n%s", seed, dropped, diff)
		}
		// The timeline does not depend on activity records either.
		if diff := cmp.Diff(full.Timeline, part.Timeline); diff != "" {
			t.Fatalf("seed %d: timeline changed:\n%s", seed, diff)
		}
	}
}

func TestReplayDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		recs := randomJournal(rand.New(rand.NewPCG(seed, 3)), 200)
		a, err := Replay(recs)
		if err != nil {
			t.Fatal(err)
		}
		// Replaying decoded copies (as read from a store) gives equal state,
		// and so does a second replay of the same records.
		var copies []eventstore.Record
		for _, r := range recs {
			data, err := eventstore.Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			c, err := eventstore.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			copies = append(copies, c)
		}
		b, err := Replay(copies)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := Replay(recs)
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		cj, _ := json.Marshal(c)
		if string(aj) != string(bj) || string(aj) != string(cj) {
			t.Fatalf("seed %d: replay is not deterministic", seed)
		}
	}
}

// TestReplayEndIsFinal: an execution ends the same way whatever order the
// exit and a late decision on a claim were appended in, and a run that ended
// shows no tool or target still at work.
func TestReplayEndIsFinal(t *testing.T) {
	running := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous}
	tool := &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting,
		Telemetry:     &eventstore.Telemetry{ActiveToolName: "Bash"},
		Capabilities:  &eventstore.Capabilities{ToolCallActive: func() *bool { b := true; return &b }()},
		CurrentTarget: &eventstore.Target{Kind: eventstore.TargetCommand, Label: "make test"},
		ToolCall:      &eventstore.ToolCall{ID: "t1", Name: "Bash", Status: eventstore.ToolCallStarted}}
	exit := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted, Attention: eventstore.AttentionNone, Reason: "exit status 0"}
	claim := &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingSystem, Reason: "completed_claim"}
	a, err := Replay(journal(header(), running, tool, claim, exit))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Replay(journal(header(), running, tool, exit, claim))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*State{a, b} {
		if st.Lifecycle != eventstore.LifecycleCompleted || st.Attention != eventstore.AttentionNone {
			t.Errorf("ended %s/%s, want completed/none", st.Lifecycle, st.Attention)
		}
		if l := st.Latest; l.CurrentTarget != nil || l.Telemetry.ActiveToolName != "" || (l.Capabilities.ToolCallActive != nil && *l.Capabilities.ToolCallActive) {
			t.Errorf("after the end latest still shows work: target %+v telemetry %+v capabilities %+v", l.CurrentTarget, l.Telemetry, l.Capabilities)
		}
	}
}

// TestReplayTelemetryMerges: a tool update carries only the tool's name and
// keeps the token counts; the end of the last call clears the tool.
func TestReplayTelemetryMerges(t *testing.T) {
	f := false
	st, err := Replay(journal(header(),
		&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{InputTokens: i64(10), OutputTokens: i64(2), TotalTokens: i64(12)}},
		&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{ActiveToolName: "Read"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	want := &eventstore.Telemetry{InputTokens: i64(10), OutputTokens: i64(2), TotalTokens: i64(12), ActiveToolName: "Read"}
	if diff := cmp.Diff(want, st.Latest.Telemetry); diff != "" {
		t.Fatalf("telemetry (-want +got):\n%s", diff)
	}
	st, err = Replay(journal(header(),
		&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{InputTokens: i64(10), OutputTokens: i64(2), TotalTokens: i64(12)}},
		&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{ActiveToolName: "Read"}},
		&eventstore.ActivityUpdated{Capabilities: &eventstore.Capabilities{ToolCallActive: &f}},
	))
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Latest.Telemetry.ActiveToolName; n != "" || *st.Latest.Telemetry.TotalTokens != 12 {
		t.Fatalf("after the last call ended: tool %q total %d, want none and 12", n, *st.Latest.Telemetry.TotalTokens)
	}
}
