package eventstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// validSignals holds one valid payload of every signal type.
func validSignals() map[SignalType]SignalPayload {
	return map[SignalType]SignalPayload{
		SignalProgress:             &ProgressSignal{Summary: "reading the code", Units: &Units{Completed: i64(2), Total: i64(5), Unit: "files"}},
		SignalStatus:               &StatusSignal{Summary: "thinking", Phase: "planning"},
		SignalNeedsInput:           &NeedsInputSignal{RequestID: "req-1", Question: "Which branch?", Choices: []string{"main", "dev"}},
		SignalBlocked:              &BlockedSignal{Reason: "no credentials", Needs: "a token"},
		SignalReadyForVerification: &ReadyForVerificationSignal{Summary: "tests pass", Evidence: []string{"go test ./..."}},
		SignalCompletedClaim:       &CompletedClaimSignal{Summary: "fixed on main"},
		SignalFailedClaim:          &FailedClaimSignal{Reason: "gave up", Detail: "no network"},
		SignalMessage:              &MessageSignal{Text: "hello"},
		SignalUsage:                &UsageSignal{InputTokens: i64(100), OutputTokens: i64(20)},
		SignalDiagnostic:           &DiagnosticSignal{Code: "bad-marker", Message: "no nonce"},
		SignalPlan:                 &PlanSignal{Items: []PlanItem{{Text: "read", Status: PlanItemDone}, {Text: "fix", Status: PlanItemInProgress}}},
		SignalCheckpoint:           &CheckpointSignal{Title: "half way"},
	}
}

// TestEveryKindIsDescribed: every registered kind has a valid sample
// (validRecords), and its summary and timeline text are not empty, and
// each is one line.
func TestEveryKindIsDescribed(t *testing.T) {
	valid := validRecords()
	for _, k := range Kinds() {
		r, ok := valid[k]
		if !ok {
			t.Errorf("%s: no sample record to describe (add one to validRecords)", k)
			continue
		}
		if err := Validate(r); err != nil {
			t.Fatalf("%s: the sample is not valid: %v", k, err)
		}
		checkText(t, k, "Summary", Summary(r))
		checkText(t, k, "TimelineText", TimelineText(r))
	}
}

// TestEverySignalIsDescribed: an observation of every signal type says
// more in its summary than its type and ids, and has a timeline text.
func TestEverySignalIsDescribed(t *testing.T) {
	valid := validSignals()
	for _, st := range SignalTypes() {
		p, ok := valid[st]
		if !ok {
			t.Errorf("%s: no sample payload to describe (add one to validSignals)", st)
			continue
		}
		o := &Observation{Base: base(KindObservation, 4), ObservationID: "obs-1", Source: ObservedMCP,
			Confidence: ConfidenceAuthoritative, Signal: NewSignal(p)}
		if err := Validate(o); err != nil {
			t.Fatalf("%s: the sample is not valid: %v", st, err)
		}
		bare := fmt.Sprintf("mcp/authoritative %s [obs-1]", st)
		if got := Summary(o); got == bare {
			t.Errorf("%s: Summary = %q, which tells nothing of the signal's payload", st, got)
		}
		checkText(t, KindObservation, string(st)+" Summary", Summary(o))
		checkText(t, KindObservation, string(st)+" TimelineText", TimelineText(o))
	}
}

func checkText(t *testing.T, k Kind, what, got string) {
	t.Helper()
	switch {
	case strings.TrimSpace(got) == "":
		t.Errorf("%s: %s is empty", k, what)
	case strings.ContainsAny(got, "\n\r"):
		t.Errorf("%s: %s = %q, want one line", k, what, got)
	}
}

func TestRegisterKindRefusesAKindWithoutText(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    describer
		want string
	}{
		{"no summary", describe[*Header](nil, headerTimeline), "test.kind registered without its summary and timeline text"},
		{"no timeline", describe(headerSummary, nil), "test.kind registered without its summary and timeline text"},
		{"another type", describe(messageSummary, messageTimeline), "test.kind is a *eventstore.Header but is described as a *eventstore.MessageAccepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := fmt.Sprint(recover()); !strings.Contains(got, tc.want) {
					t.Errorf("registerKind panicked with %q, want %q", got, tc.want)
				}
				if _, ok := LookupKind("test.kind"); ok {
					t.Error("the kind was registered")
				}
			}()
			registerKind(KindSpec{Kind: "test.kind"}, &Header{}, tc.d)
		})
	}
}

// TestDescriptions pins each kind's two texts for its sample record.
func TestDescriptions(t *testing.T) {
	valid := validRecords()
	answer := &MessageAccepted{Base: base(KindMessage, 2), MessageID: "msg-2", Source: SourceOperator, MessageType: "answer",
		Payload: json.RawMessage(`{"text":"main","requestId":"req-1"}`)}
	toolCall := &ActivityUpdated{Base: base(KindActivity, 7), Activity: ActivityExecuting,
		CurrentTarget: &Target{Kind: TargetCommand, Label: "go test ./..."},
		ToolCall:      &ToolCall{ID: "call-1", Name: "Bash", Status: ToolCallFailed, ExitCode: i64(1), Error: "exit status 1"}}
	for _, tc := range []struct {
		name              string
		r                 Record
		summary, timeline string
	}{
		{"header", valid[KindHeader],
			"claude-code structured-interactive messages=prompt,compact signals=10 via=mcp,stdout-marker cwd=/work/repo",
			"launched claude-code in /work/repo"},
		{"prompt", valid[KindMessage], `operator prompt "fix the test" [msg-1]`, "operator prompt: fix the test"},
		{"answer", answer, `operator answer answers req-1 "main" [msg-2]`, "operator answered req-1 at 2026-11-21T10:00:00Z: main"},
		{"delivery", valid[KindDelivery], "msg-1 failed via adapter: process exited", "message msg-1 failed process exited"},
		{"observation", valid[KindObservation], `mcp/authoritative needs_input req-1 "Which branch?" choices=main|dev [obs-1]`,
			"question req-1 asked: Which branch? (choices: main, dev)"},
		{"decision", valid[KindDecision], "update-state (obs-1) needs_input sets attention",
			"decided update-state on obs-1: needs_input sets attention"},
		{"state", valid[KindStateChanged], "lifecycle=running attention=awaiting-operator input=req-1",
			"lifecycle running, attention awaiting-operator, input request req-1 open"},
		{"activity", valid[KindActivity], `editing target=file:main.go "editing" 2/5 files tokens=in 100/out 20/total 120 tool=Edit caps=streaming`,
			"editing file main.go; progress: editing 2/5 files; tokens in 100/out 20/total 120; tool Edit; now streaming"},
		{"tool call", toolCall, `executing target=command:go test ./... call Bash failed exit 1 "exit status 1"`,
			"tool call Bash failed on command go test ./..., exit 1: exit status 1"},
		{"owner effect", valid[KindOwnerEffect], "Mission task.completed (obs-9) [eff-1]", "effect task.completed routed to Mission eff-1"},
		{"projection", valid[KindProjection], "timeline-item", "projection item recorded: timeline-item"},
		{"interruption", valid[KindInterruption], `crash turn=2 input=req-1 "signal: killed" (msg-1)`,
			"interrupted: crash (signal: killed) during turn 2 while input request req-1 was open"},
		{"snapshot", valid[KindSnapshot],
			"at=10 commit=cccccccccccc files=12 added=1 modified=2 deleted=3 cwd=/work/repo [refs/agentjournal/ae-1/10]",
			"snapshot refs/agentjournal/ae-1/10 of /work/repo at sequence 10: commit " + strings.Repeat("c", 40) + ", 12 files"},
		{"restore", valid[KindRestore], "snapshot restored from=refs/agentjournal/ae-0/10 to=/data/worktrees/ae-1 cwd=/work/repo",
			"restore snapshot refs/agentjournal/ae-0/10 restored /data/worktrees/ae-1"},
		{"checkpoint", valid[KindCheckpoint], `daemon turn-end at=12 status=paused "fix the bug" todos=1 artifacts=1 approvals=1 [turn-2]`,
			"checkpoint turn-2 at sequence 12 (turn-end by daemon, paused): fix the bug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(tc.r); got != tc.summary {
				t.Errorf("Summary = %s\nwant      %s", got, tc.summary)
			}
			if got := TimelineText(tc.r); got != tc.timeline {
				t.Errorf("TimelineText = %s\nwant           %s", got, tc.timeline)
			}
		})
	}
}

// TestSignalTimelineTexts: an observation's timeline text is its signal's,
// named by its type, or, for questions, blockers and claims, a sentence
// with what they carry besides.
func TestSignalTimelineTexts(t *testing.T) {
	valid := validSignals()
	for _, tc := range []struct {
		typ  SignalType
		want string
	}{
		{SignalProgress, "progress: reading the code"},
		{SignalStatus, "status: thinking"},
		{SignalBlocked, "agent blocked: no credentials (needs a token)"},
		{SignalReadyForVerification, "agent says ready for verification: tests pass (evidence: go test ./...)"},
		{SignalCompletedClaim, "agent claims completion: fixed on main"},
		{SignalFailedClaim, "agent claims failure: gave up no network"},
		{SignalMessage, "message: hello"},
		{SignalUsage, "usage: tokens in 100 out 20 total 0"},
		{SignalDiagnostic, "diagnostic: no nonce"},
		{SignalPlan, "plan: 1 of 2 done; now: fix"},
		{SignalCheckpoint, "checkpoint: half way"},
	} {
		o := &Observation{ObservationID: "o", Source: ObservedMCP, Confidence: ConfidenceHigh, Signal: NewSignal(valid[tc.typ])}
		if got := TimelineText(o); got != tc.want {
			t.Errorf("%s: TimelineText = %q, want %q", tc.typ, got, tc.want)
		}
	}
	permission := &Observation{ObservationID: "o", Source: ObservedSDK, Confidence: ConfidenceAuthoritative, Signal: NewSignal(&NeedsInputSignal{
		RequestID: "toolu_1", Question: "Run rm -rf build?", Kind: string(InputPermission), Tool: &ToolUse{Name: "Bash"}})}
	if got, want := TimelineText(permission), "permission request for Bash toolu_1 asked: Run rm -rf build?"; got != want {
		t.Errorf("permission: TimelineText = %q, want %q", got, want)
	}
	raw := &Observation{ObservationID: "o", Source: ObservedPTY, Confidence: ConfidenceLow, RawText: "$ ls"}
	if got, want := TimelineText(raw), "observed (pty): $ ls"; got != want {
		t.Errorf("raw text: TimelineText = %q, want %q", got, want)
	}
	payload := &Observation{ObservationID: "o", Source: ObservedGit, Confidence: ConfidenceHigh, Payload: map[string]any{"ref": "x", "branch": "main"}}
	if got, want := TimelineText(payload), "observed (git): payload with branch, ref"; got != want {
		t.Errorf("payload: TimelineText = %q, want %q", got, want)
	}
}
