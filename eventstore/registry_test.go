package eventstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testRef = Reference{
	JournalID:        JournalIDFor(OwnerMission, "mission-7", "ae-1"),
	OwnerEntity:      OwnerMission,
	OwnerID:          "mission-7",
	AgentExecutionID: "ae-1",
}

// base returns a complete base for sequence seq.
func base(kind Kind, seq uint64) Base {
	return Base{
		RecordID: RecordID(testRef.JournalID, kind, "k"), Sequence: seq, Type: kind, SchemaVersion: 1,
		JournalID: testRef.JournalID, AgentExecutionID: "ae-1", OwnerID: "mission-7", Scope: OwnerMission,
		OccurredAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
	}
}

func i64(v int64) *int64 { return &v }

var (
	parentJournal = JournalIDFor(OwnerMission, "mission-7", "ae-0")
	zeroEventID   = EventIDPrefix + strings.Repeat("0", 64)
)

func yes() *bool { b := true; return &b }

// validRecords holds one valid record of every kind; the tests derive
// invalid ones from their JSON.
func validRecords() map[Kind]Record {
	return map[Kind]Record{
		KindHeader: &Header{Base: base(KindHeader, 1), JournalKind: headerKind, AgentID: "claude-code",
			ProtocolDescriptor: ProtocolDescriptor{
				Posture: PostureStructuredInteractive,
				Messages: []MessageDescriptor{
					{Type: "prompt", Label: "Prompt", Delivery: DeliveryRequired, MutatesContext: true, Portability: PortabilityCrossAgent},
					{Type: "compact", Label: "Compact", Delivery: DeliveryBestEffort, Portability: PortabilityAdapterScoped, AdapterID: "claude-code"},
				},
				Signals:          SurfacedSignalTypes(),
				SignalTransports: []SignalTransport{SignalViaMCP, SignalViaStdoutMarker},
			},
			TransportState:   &TransportState{StructuredLane: LaneStdio, TerminalAttached: true},
			WorkingDirectory: "/work/repo"},
		KindMessage: &MessageAccepted{Base: base(KindMessage, 2), MessageID: "msg-1", Source: SourceOperator,
			MessageType: "prompt", Payload: json.RawMessage(`{"text":"fix the test"}`), MutatesContext: false},
		KindDelivery: &MessageDelivery{Base: base(KindDelivery, 3), MessageID: "msg-1", Status: DeliveryFailed,
			Transport: TransportAdapter, Reason: "process exited"},
		KindObservation: &Observation{Base: base(KindObservation, 4), ObservationID: "obs-1", Source: ObservedMCP,
			Confidence: ConfidenceAuthoritative, Signal: NewSignal(&NeedsInputSignal{RequestID: "req-1", Question: "Which branch?", Choices: []string{"main", "dev"}})},
		KindDecision: &Decision{Base: base(KindDecision, 5), DecisionID: "dec-1", ObservationID: "obs-1",
			Action: ActionUpdateState, Reason: "needs_input sets attention"},
		KindStateChanged: &StateChanged{Base: base(KindStateChanged, 6), Lifecycle: LifecycleRunning,
			Attention: AttentionAwaitingOperator, CurrentInputRequestID: SetInputRequest("req-1")},
		KindActivity: &ActivityUpdated{Base: base(KindActivity, 7), Activity: ActivityEditing,
			Progress:      &Progress{Summary: "editing", Units: &Units{Completed: i64(2), Total: i64(5), Unit: "files"}},
			Telemetry:     &Telemetry{InputTokens: i64(100), OutputTokens: i64(20), TotalTokens: i64(120), ActiveToolName: "Edit"},
			Capabilities:  &Capabilities{Streaming: yes()},
			CurrentTarget: &Target{Kind: TargetFile, Path: "main.go"}},
		KindOwnerEffect: &OwnerEffect{Base: base(KindOwnerEffect, 8), EffectID: "eff-1", ObservationID: "obs-9",
			OwnerEntity: OwnerMission, EffectType: "task.completed", Payload: map[string]any{"taskId": "t-1"}},
		KindProjection: &ProjectionRecorded{Base: base(KindProjection, 9), Projection: "timeline-item",
			Payload: map[string]any{"kind": "chat"}},
		KindInterruption: &Interruption{Base: base(KindInterruption, 10), Reason: InterruptCrash, Detail: "signal: killed",
			Turn: 2, MessageID: "msg-1", InputRequestID: "req-1"},
		KindSnapshot: &SnapshotCreated{Base: base(KindSnapshot, 11), Resource: "/work/repo", Ref: "refs/agentjournal/ae-1/10",
			Commit: strings.Repeat("c", 40), Tree: strings.Repeat("e", 40), Parent: strings.Repeat("a", 40), AtSequence: 10,
			Files: 12, Added: 1, Modified: 2, Deleted: 3},
		KindRestore: &RestoreAttempted{Base: base(KindRestore, 12), Resource: "/work/repo", Mode: RestoreSnapshot,
			SnapshotRef: "refs/agentjournal/ae-0/10", SnapshotCommit: strings.Repeat("c", 40), Outcome: RestoreRestored,
			RestoredTo: "/data/worktrees/ae-1"},
		KindCheckpoint: &CheckpointCreated{Base: base(KindCheckpoint, 13), CheckpointID: "turn-2", Trigger: CheckpointTurnEnd,
			Source: SourceDaemon, AtSequence: 12, StatusAtCapture: RunPaused, CurrentTaskID: "task-1",
			TodoIDs: []string{"t1"}, ArtifactRefs: []string{"git:refs/agentjournal/ae-0/10"}, MemoryRefs: []string{}, ApprovalRefs: []string{"req-1"},
			ResumeToken: "claude:session-1", StateSummary: CheckpointSummary{Title: "fix the bug", Summary: "turn 2 ended"}},
	}
}

func TestEveryKindHasAValidCase(t *testing.T) {
	valid := validRecords()
	for _, k := range Kinds() {
		r, ok := valid[k]
		if !ok {
			t.Errorf("no valid case for %s", k)
			continue
		}
		data, err := Encode(r)
		if err != nil {
			t.Fatalf("%s: Encode: %v", k, err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: Decode(%s): %v", k, data, err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", k, diff)
		}
	}
	if len(Kinds()) != 13 {
		t.Fatalf("%d record kinds, want 13", len(Kinds()))
	}
}

// mutate decodes a valid record's JSON into a map, changes it and returns
// the new JSON.
func mutate(t *testing.T, k Kind, change func(m map[string]any)) []byte {
	t.Helper()
	data, err := Encode(validRecords()[k])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecodeRejects(t *testing.T) {
	type tc struct {
		name   string
		kind   Kind
		change func(m map[string]any)
		field  string // the field the error must name
		want   string // a piece of the message, e.g. the accepted values
	}
	del := func(f string) func(map[string]any) { return func(m map[string]any) { delete(m, f) } }
	set := func(f string, v any) func(map[string]any) { return func(m map[string]any) { m[f] = v } }
	cases := []tc{
		// Common to every kind.
		{"unknown kind", KindMessage, set("type", "observation.recordd"), "type", "journal.header, message.accepted"},
		{"schema version 2", KindMessage, set("schemaVersion", 2), "schemaVersion", "want one of: 1"},
		{"unknown field", KindMessage, set("color", "red"), "color", "messageId"},
		{"wrong execution for journal", KindMessage, set("agentExecutionId", "ae-2"), "journalId", "is not the journal of"},
		{"wrong owner for journal", KindDecision, set("ownerId", "mission-8"), "journalId", "is not the journal of"},
		{"bad scope", KindDecision, set("scope", "Planet"), "scope", "System, Repository, Mission, Task, Artifact"},
		{"no sequence", KindDecision, del("sequence"), "sequence", "required"},
		{"bad time", KindDecision, set("occurredAt", "yesterday"), "occurredAt", "RFC 3339"},
		{"string sequence", KindDecision, set("sequence", "2"), "sequence", "whole number"},
		{"header at seq 2", KindHeader, set("sequence", 2), "sequence", "always sequence 1"},
		{"message at seq 1", KindMessage, set("sequence", 1), "sequence", "reserved for the journal.header"},
		// Links of a header.
		{"fork link unknown field", KindHeader, set("forkedFrom", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 3, "eventId": zeroEventID, "branch": "b"}), "forkedFrom.branch", "eventId"},
		{"fork at sequence 0", KindHeader, set("forkedFrom", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 0, "eventId": zeroEventID}), "forkedFrom.sequence", "1 or more"},
		{"fork without event id", KindHeader, set("forkedFrom", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 2, "eventId": "abc"}), "forkedFrom.eventId", "sha256:<64 lowercase hex>"},
		{"fork of itself", KindHeader, set("forkedFrom", map[string]any{"journalId": testRef.JournalID, "agentExecutionId": "ae-1", "sequence": 2, "eventId": zeroEventID}), "forkedFrom.journalId", "cannot fork itself"},
		{"fork with an unknown history", KindHeader, set("forkedFrom", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 2, "eventId": zeroEventID, "history": "exact"}), "forkedFrom.history", "native, reconstructed"},
		{"resume without session", KindHeader, set("resumes", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0"}), "sessionId", "required"},
		{"resume link unknown field", KindHeader, set("resumes", map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 2}), "resumes.sequence", "agentExecutionId"},
		{"fork and resume", KindHeader, func(m map[string]any) {
			m["sessionId"] = "ae-0"
			m["resumes"] = map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0"}
			m["forkedFrom"] = map[string]any{"journalId": parentJournal, "agentExecutionId": "ae-0", "sequence": 2, "eventId": zeroEventID}
		}, "resumes", "not both"},
		{"interruption reason", KindInterruption, set("reason", "oops"), "reason", "crash, shutdown, system_restart, timeout, canceled"},
		{"interruption without reason", KindInterruption, del("reason"), "reason", "required"},
		{"snapshot without commit", KindSnapshot, del("commit"), "commit", "required"},
		{"snapshot short commit", KindSnapshot, set("commit", "abc"), "commit", "40 or 64 lowercase hex"},
		{"snapshot ref outside the namespace", KindSnapshot, set("ref", "refs/heads/main"), "ref", "refs/agentjournal/"},
		{"snapshot at sequence 0", KindSnapshot, set("atSequence", 0), "atSequence", "1 or more"},
		{"snapshot negative count", KindSnapshot, set("deleted", -1), "deleted", "0 or more"},
		{"snapshot without resource", KindSnapshot, del("resource"), "resource", "required"},
		{"snapshot unknown field", KindSnapshot, set("branch", "main"), "branch", "atSequence"},
		{"restore mode", KindRestore, set("mode", "copy"), "mode", "keep, snapshot, discard"},
		{"restore outcome", KindRestore, set("outcome", "ok"), "outcome", "restored, unsupported, missing, failed"},
		{"restored without directory", KindRestore, del("restoredTo"), "restoredTo", "required when the outcome is restored"},
		{"unsupported without detail", KindRestore, set("outcome", "unsupported"), "detail", "required when the outcome is unsupported"},
		{"keep naming a snapshot", KindRestore, set("mode", "keep"), "snapshotRef", "only mode snapshot"},
		{"checkpoint trigger", KindCheckpoint, set("trigger", "cron"), "trigger", "turn-end, request"},
		{"checkpoint status", KindCheckpoint, set("statusAtCapture", "idle"), "statusAtCapture", "queued, running, paused, waiting-approval, completed, failed, cancelled"},
		{"checkpoint without title", KindCheckpoint, del("stateSummary"), "stateSummary.title", "required"},
		{"checkpoint at zero", KindCheckpoint, set("atSequence", 0), "atSequence", "1 or more"},

		{"header bad kind", KindHeader, set("kind", "transcript"), "kind", "agent-execution-interaction-journal"},
		{"header no agent", KindHeader, del("agentId"), "agentId", "required"},
		{"header no descriptor posture", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["posture"] = "sideways"
		}, "protocolDescriptor.posture", "structured-interactive"},
		{"header unknown nested field", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["messages"].([]any)[0].(map[string]any)["bogus"] = 1
		}, "protocolDescriptor.messages[0].bogus", "portability"},
		{"header bad portability", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["messages"].([]any)[0].(map[string]any)["portability"] = "everywhere"
		}, "protocolDescriptor.messages[0].portability", "mission-native, cross-agent"},
		{"header bad session shape", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["sessionShape"] = "forever"
		}, "protocolDescriptor.sessionShape", "one-shot, conversation"},
		{"header bad approval mode", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["approvals"] = map[string]any{"mode": "whatever"}
		}, "protocolDescriptor.approvals.mode", "journal, agent-policy"},
		{"header unsurfaced signal", KindHeader, func(m map[string]any) {
			m["protocolDescriptor"].(map[string]any)["signals"] = []any{"usage"}
		}, "protocolDescriptor.signals[0]", "not surfaced"},

		{"message bad source", KindMessage, set("source", "stranger"), "source", "operator, daemon, system, owner"},
		{"message no mutatesContext", KindMessage, del("mutatesContext"), "mutatesContext", "required"},
		{"message no payload", KindMessage, del("payload"), "payload", "required"},
		{"message no id", KindMessage, del("messageId"), "messageId", "required"},

		{"delivery bad status", KindDelivery, set("status", "lost"), "status", "attempted, delivered, failed, skipped"},
		{"delivery bad transport", KindDelivery, set("transport", "pigeon"), "transport", "agent-message, pty-terminal"},
		{"delivery failed without reason", KindDelivery, del("reason"), "reason", "required when status is failed"},

		{"observation bad source", KindObservation, set("source", "rumour"), "source", "provider-output"},
		{"observation bad confidence", KindObservation, set("confidence", "certain"), "confidence", "authoritative, high"},
		{"observation unknown signal", KindObservation, set("signal", map[string]any{"type": "sleeping", "payload": map[string]any{}}), "signal.type", "needs_input"},
		{"observation signal missing field", KindObservation, set("signal", map[string]any{"type": "needs_input", "payload": map[string]any{"requestId": "r"}}), "signal.payload.question", "required"},
		{"observation signal unknown field", KindObservation, set("signal", map[string]any{"type": "progress", "payload": map[string]any{"summary": "x", "percent": 5}}), "signal.payload.percent", "summary"},
		{"observation empty", KindObservation, del("signal"), "signal", "at least one of"},
		{"observation bad input kind", KindObservation, set("signal", map[string]any{"type": "needs_input", "payload": map[string]any{"requestId": "r", "question": "q", "kind": "threat"}}), "signal.payload.kind", "question, permission"},
		{"observation permission without tool name", KindObservation, set("signal", map[string]any{"type": "needs_input", "payload": map[string]any{"requestId": "r", "question": "q", "kind": "permission", "tool": map[string]any{"input": map[string]any{}}}}), "signal.payload.tool.name", "required"},
		{"observation plan item bad status", KindObservation, set("signal", map[string]any{"type": "plan", "payload": map[string]any{"items": []any{map[string]any{"text": "t", "status": "pending"}}}}), "signal.payload.items[0].status", "open, in-progress, done, dropped"},
		{"observation plan item without text", KindObservation, set("signal", map[string]any{"type": "plan", "payload": map[string]any{"items": []any{map[string]any{"status": "open"}}}}), "signal.payload.items[0].text", "required"},
		{"observation native id too long", KindObservation, set("native", map[string]any{"sessionId": strings.Repeat("s", MaxIDLength+1)}), "native.sessionId", "at most"},
		{"observation unknown native id", KindObservation, set("native", map[string]any{"threadId": "t"}), "native.threadId", "sessionId"},

		{"decision bad action", KindDecision, set("action", "shrug"), "action", "reject, record-only, emit-message, update-state, route-owner-effect"},
		{"decision no id", KindDecision, del("decisionId"), "decisionId", "required"},

		{"state awaiting-input lifecycle", KindStateChanged, set("lifecycle", "awaiting-input"), "lifecycle", "attention awaiting-operator"},
		{"state bad attention", KindStateChanged, set("attention", "distracted"), "attention", "awaiting-operator"},
		{"state bad activity", KindStateChanged, set("activity", "napping"), "activity", "reviewing"},
		{"state empty", KindStateChanged, func(m map[string]any) {
			delete(m, "lifecycle")
			delete(m, "attention")
			delete(m, "currentInputRequestId")
		}, "lifecycle", "at least one of"},
		{"state empty request id", KindStateChanged, set("currentInputRequestId", ""), "currentInputRequestId", "null to clear"},

		{"activity bad target", KindActivity, set("currentTarget", map[string]any{"kind": "planet"}), "currentTarget.kind", "file, command, tool"},
		{"activity negative tokens", KindActivity, set("telemetry", map[string]any{"inputTokens": -1}), "telemetry.inputTokens", "negative"},
		{"activity unknown telemetry", KindActivity, set("telemetry", map[string]any{"cost": 1}), "telemetry.cost", "inputTokens"},
		{"activity bad tool call status", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "exploded"}), "toolCall.status", "started, succeeded, failed"},
		{"activity tool call without name", KindActivity, set("toolCall", map[string]any{"status": "started"}), "toolCall.name", "required"},
		{"activity tool output on a start", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "started", "output": "ok"}), "toolCall.output", "on the call's end only"},
		{"activity tool output too long", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "succeeded", "output": strings.Repeat("x", MaxToolOutputBytes+MaxToolOutputMarker+1)}), "toolCall.output", "at most 2093"},
		{"activity tool output bytes negative", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "succeeded", "output": "x", "outputBytes": -1}), "toolCall.outputBytes", "negative"},
		{"activity tool output bytes without output", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "succeeded", "outputBytes": 5000}), "toolCall.outputBytes", "set without output"},
		{"activity tool output bytes of an uncut output", KindActivity, set("toolCall", map[string]any{"name": "Bash", "status": "succeeded", "output": "x", "outputBytes": 1}), "toolCall.outputBytes", "only when the output was cut"},

		{"owner effect bad owner", KindOwnerEffect, set("ownerEntity", "Planet"), "ownerEntity", "Mission"},
		{"owner effect no type", KindOwnerEffect, del("effectType"), "effectType", "required"},

		{"projection bad name", KindProjection, set("projection", "summary"), "projection", "timeline-item"},
		{"projection no payload", KindProjection, del("payload"), "payload", "required"},
	}
	covered := map[Kind]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(mutate(t, c.kind, c.change))
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("got %v, want ErrInvalidRecord", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %T, want *ValidationError", err)
			}
			found := false
			for _, p := range ve.Problems {
				if p.Field == c.field {
					found = true
				}
			}
			if !found {
				t.Fatalf("error %q does not name field %q", err, c.field)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
		covered[c.kind] = true
	}
	for _, k := range Kinds() {
		if !covered[k] {
			t.Errorf("no invalid case for %s", k)
		}
	}
}

// TestValidateRefusesIDsNotUTF8: an id that is not UTF-8 is refused before
// encoding, which would replace its bad bytes silently.
func TestValidateRefusesIDsNotUTF8(t *testing.T) {
	m := &MessageAccepted{MessageID: "m-\xff", Source: SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"x"}`)}
	err := Validate(m)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), `field "messageId": not UTF-8`) {
		t.Fatalf("Validate(messageId m-\\xff) = %v, want a problem with messageId: not UTF-8", err)
	}
}

func TestDecodeRejectsNonObjects(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"x"`, `{`, `{"type":"journal.header"} {}`, `{"type":null}`} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Decode(%q): got %v, want ErrInvalidRecord", in, err)
		}
	}
}

func TestInputRequestThreeStates(t *testing.T) {
	for _, c := range []struct {
		name string
		v    InputRequest
		json string
	}{
		{"absent", InputRequest{}, ``},
		{"cleared", ClearInputRequest(), `"currentInputRequestId":null`},
		{"set", SetInputRequest("req-9"), `"currentInputRequestId":"req-9"`},
	} {
		r := validRecords()[KindStateChanged].(*StateChanged)
		r.CurrentInputRequestID = c.v
		data, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if c.json != "" && !strings.Contains(string(data), c.json) || c.json == "" && strings.Contains(string(data), "currentInputRequestId") {
			t.Fatalf("%s: encoded %s, want %q", c.name, data, c.json)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if g := got.(*StateChanged).CurrentInputRequestID; g != c.v {
			t.Fatalf("%s: decoded %+v, want %+v", c.name, g, c.v)
		}
	}
}

func TestSignalRegistry(t *testing.T) {
	want := []struct {
		typ      SignalType
		key      string
		surfaced bool
		timeline TimelineKind
	}{
		{SignalProgress, "agent-signal.progress.v1", true, TimelineProgress},
		{SignalStatus, "agent-signal.status.v1", true, TimelineStatus},
		{SignalNeedsInput, "agent-signal.needs-input.v1", true, TimelineNeedsInput},
		{SignalBlocked, "agent-signal.blocked.v1", true, TimelineBlocked},
		{SignalReadyForVerification, "agent-signal.ready-for-verification.v1", true, TimelineClaim},
		{SignalCompletedClaim, "agent-signal.completed-claim.v1", true, TimelineClaim},
		{SignalFailedClaim, "agent-signal.failed-claim.v1", true, TimelineFailure},
		{SignalMessage, "agent-signal.message.v1", true, TimelineChat},
		{SignalUsage, "", false, TimelineNone},
		{SignalDiagnostic, "", false, TimelineDiagnostic},
		{SignalPlan, "agent-signal.plan.v1", true, TimelinePlan},
		{SignalCheckpoint, "agent-signal.checkpoint.v1", true, TimelineNone},
	}
	if got := SignalTypes(); len(got) != len(want) {
		t.Fatalf("%d signal types, want %d", len(got), len(want))
	}
	for _, w := range want {
		s, ok := LookupSignal(w.typ)
		if !ok {
			t.Fatalf("signal %s not registered", w.typ)
		}
		if s.SchemaKey != w.key || s.Surfaced != w.surfaced || s.Timeline != w.timeline {
			t.Errorf("%s = key %q surfaced %v timeline %q, want %q %v %q", w.typ, s.SchemaKey, s.Surfaced, s.Timeline, w.key, w.surfaced, w.timeline)
		}
		if s.NewPayload().SignalType() != w.typ {
			t.Errorf("%s payload type says %s", w.typ, s.NewPayload().SignalType())
		}
		sc := s.Schema()
		props, _ := sc["properties"].(map[string]any)
		if len(props) == 0 || sc["additionalProperties"] != false {
			t.Errorf("%s schema %v has no properties or allows extra ones", w.typ, sc)
		}
		for name, p := range props {
			if w.surfaced && p.(map[string]any)["description"] == nil {
				t.Errorf("%s.%s has no description", w.typ, name)
			}
		}
	}
}

// TestSignalWireForm: a signal is stored as {"type":…,"payload":{…}}, in
// that order, on its own and inside an observation, and reads back the same.
func TestSignalWireForm(t *testing.T) {
	one, two := int64(1), int64(2)
	s := NewSignal(&ProgressSignal{Summary: "halfway", Units: &Units{Completed: &one, Total: &two}})
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"progress","payload":{"summary":"halfway","units":{"completed":1,"total":2}}}`
	if string(got) != want {
		t.Fatalf("signal encodes as\n%s\nwant\n%s", got, want)
	}
	o := &Observation{Base: base(KindObservation, 4), ObservationID: "o-1", Source: ObservedMCP, Confidence: ConfidenceAuthoritative, Signal: s}
	data, err := Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"signal":`+want) {
		t.Fatalf("observation %s does not hold the signal as %s", data, want)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o, back); diff != "" {
		t.Errorf("observation read back (-wrote +read):\n%s", diff)
	}
}

func TestDecodeRejectsTrailingData(t *testing.T) {
	data, err := Encode(validRecords()[KindDecision])
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{" {}", "x", "\n{\"a\":1}", "]"} {
		if _, err := Decode(append(append([]byte{}, data...), tail...)); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("record followed by %q: got %v, want ErrInvalidRecord", tail, err)
		}
	}
	if _, err := Decode(append(append([]byte{}, data...), " \n"...)); err != nil {
		t.Errorf("trailing white space refused: %v", err)
	}
}

func TestSniffKindAllocates(t *testing.T) {
	data := []byte(`{"recordId":"rec-1","sequence":2,"type":"observation.recorded","x":1}`)
	if k, ok := sniffKind(data); !ok || k != KindObservation {
		t.Fatalf("sniffKind = %q, %v; want %q, true", k, ok, KindObservation)
	}
	if n := testing.AllocsPerRun(100, func() { sniffKind(data) }); n != 0 {
		t.Errorf("sniffKind allocates %.0f times per call, want 0", n)
	}
	unknown := []byte(`{"recordId":"rec-1","sequence":2,"type":"no.such.kind"}`)
	if k, ok := sniffKind(unknown); ok {
		t.Errorf("sniffKind of an unknown kind = %q, true; want false", k)
	}
}
