package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	payload := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n := func(v int64) *int64 { return &v }
	yes := true
	for _, tc := range []struct {
		name string
		r    eventstore.Record
		want string
	}{
		{"header", &eventstore.Header{AgentID: "claude-code",
			ProtocolDescriptor: eventstore.ProtocolDescriptor{
				Posture:          eventstore.PostureStructuredInteractive,
				Messages:         []eventstore.MessageDescriptor{{Type: "prompt"}, {Type: "interrupt"}},
				Signals:          eventstore.SurfacedSignalTypes(),
				SignalTransports: []eventstore.SignalTransport{eventstore.SignalViaMCP, eventstore.SignalViaStdoutMarker},
			},
			WorkingDirectory: "/src/app"},
			"claude-code structured-interactive messages=prompt,interrupt signals=10 via=mcp,stdout-marker cwd=/src/app"},
		{"header without messages", &eventstore.Header{AgentID: "sh",
			ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureNativeTerminal}},
			"sh native-terminal-escape-hatch signals=0"},
		{"prompt", &eventstore.MessageAccepted{MessageID: "msg-1", Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: payload(map[string]string{"text": "fix the test"})},
			`operator prompt "fix the test" [msg-1]`},
		{"answer", &eventstore.MessageAccepted{MessageID: "msg-2", Source: eventstore.SourceOperator, MessageType: "prompt",
			Payload: payload(map[string]string{"requestId": "req-1", "text": "main"})},
			`operator prompt answers req-1 "main" [msg-2]`},
		{"message without text", &eventstore.MessageAccepted{MessageID: "msg-3", Source: eventstore.SourceDaemon, MessageType: "interrupt",
			Payload: json.RawMessage(`{ "hard": true }`)},
			`daemon interrupt { "hard": true } [msg-3]`},
		{"long prompt", &eventstore.MessageAccepted{MessageID: "m", Source: eventstore.SourceOwner, MessageType: "prompt",
			Payload: payload(map[string]string{"text": strings.Repeat("a", 100) + "\nsecond line"})},
			`owner prompt "` + strings.Repeat("a", maxQuoted-1) + `…" [m]`},
		{"delivery", &eventstore.MessageDelivery{MessageID: "msg-1", Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportPTY},
			"msg-1 delivered via pty-terminal"},
		{"failed delivery", &eventstore.MessageDelivery{MessageID: "msg-1", Status: eventstore.DeliveryFailed, Transport: eventstore.TransportNone, Reason: "process exited"},
			"msg-1 failed via none: process exited"},
		{"needs input", observation("obs-3", &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "Which branch?"}),
			`mcp/authoritative needs_input req-1 "Which branch?" [obs-3]`},
		{"progress", observation("obs-1", &eventstore.ProgressSignal{Summary: "reading", Units: &eventstore.Units{Completed: n(2), Total: n(5), Unit: "files"}}),
			`mcp/authoritative progress "reading" 2/5 files [obs-1]`},
		{"status", observation("o", &eventstore.StatusSignal{Summary: "thinking", Phase: "planning"}),
			`mcp/authoritative status "thinking" phase=planning [o]`},
		{"blocked", observation("o", &eventstore.BlockedSignal{Reason: "no network"}),
			`mcp/authoritative blocked "no network" [o]`},
		{"blocked with needs", observation("o", &eventstore.BlockedSignal{Reason: "no network", Needs: "a proxy"}),
			`mcp/authoritative blocked "no network" needs="a proxy" [o]`},
		{"ready", observation("o", &eventstore.ReadyForVerificationSignal{Summary: "done"}),
			`mcp/authoritative ready_for_verification "done" [o]`},
		{"completed", observation("o", &eventstore.CompletedClaimSignal{Summary: "fixed"}),
			`mcp/authoritative completed_claim "fixed" [o]`},
		{"failed", observation("o", &eventstore.FailedClaimSignal{Reason: "gave up"}),
			`mcp/authoritative failed_claim "gave up" [o]`},
		{"message", observation("o", &eventstore.MessageSignal{Text: "hello"}),
			`mcp/authoritative message "hello" [o]`},
		{"usage", observation("o", &eventstore.UsageSignal{InputTokens: n(100), OutputTokens: n(20), Cumulative: true}),
			`mcp/authoritative usage tokens=in 100/out 20 (cumulative) [o]`},
		{"diagnostic", observation("o", &eventstore.DiagnosticSignal{Code: "bad-marker", Message: "no nonce"}),
			`mcp/authoritative diagnostic bad-marker "no nonce" [o]`},
		{"raw text", &eventstore.Observation{ObservationID: "o", Source: eventstore.ObservedPTY, Confidence: eventstore.ConfidenceLow, RawText: "$ ls"},
			`pty/low text "$ ls" [o]`},
		{"payload", &eventstore.Observation{ObservationID: "o", Source: eventstore.ObservedGit, Confidence: eventstore.ConfidenceHigh,
			Payload: map[string]any{"branch": "main"}},
			`git/high payload {"branch":"main"} [o]`},
		{"decision", &eventstore.Decision{DecisionID: "d", ObservationID: "obs-3", Action: eventstore.ActionUpdateState, Reason: "needs input"},
			"update-state (obs-3) needs input"},
		{"decision on a message", &eventstore.Decision{DecisionID: "d", MessageID: "msg-1", Action: eventstore.ActionReject},
			"reject (msg-1)"},
		{"state set input", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAwaitingOperator,
			CurrentInputRequestID: eventstore.SetInputRequest("req-1")},
			"lifecycle=running attention=awaiting-operator input=req-1"},
		{"state clear input", &eventstore.StateChanged{Attention: eventstore.AttentionAutonomous,
			CurrentInputRequestID: eventstore.ClearInputRequest(), Reason: "answered"},
			"attention=autonomous input=cleared; answered"},
		{"state activity", &eventstore.StateChanged{Activity: eventstore.ActivityTesting}, "activity=testing"},
		{"activity", &eventstore.ActivityUpdated{Activity: eventstore.ActivityEditing,
			CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: "main.go"},
			Telemetry:     &eventstore.Telemetry{InputTokens: n(100), OutputTokens: n(20)}},
			"editing target=file:main.go tokens=in 100/out 20"},
		{"activity progress and tool", &eventstore.ActivityUpdated{
			CurrentTarget: &eventstore.Target{Kind: eventstore.TargetCommand, Label: "go test ./..."},
			Progress:      &eventstore.Progress{Summary: "testing", Units: &eventstore.Units{Completed: n(3)}},
			Telemetry:     &eventstore.Telemetry{TotalTokens: n(7), ActiveToolName: "Bash"},
			Capabilities:  &eventstore.Capabilities{Streaming: &yes, TerminalAttached: &yes}},
			`target=command:go test ./... "testing" 3 tokens=total 7 tool=Bash caps=terminal,streaming`},
		{"owner effect", &eventstore.OwnerEffect{EffectID: "eff-1", ObservationID: "obs-9", OwnerEntity: eventstore.OwnerTask, EffectType: "task.completed"},
			"Task task.completed (obs-9) [eff-1]"},
		{"projection", &eventstore.ProjectionRecorded{Projection: "timeline-item"}, "timeline-item"},
		{"plan", observation("o", &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "read", Status: eventstore.PlanItemDone}, {Text: "fix", Status: eventstore.PlanItemInProgress}}}),
			`mcp/authoritative plan "[done] read; [in-progress] fix" [o]`},
		{"checkpoint signal", observation("o", &eventstore.CheckpointSignal{Title: "half way", Summary: "the parser is done"}),
			`mcp/authoritative checkpoint "half way" [o]`},
		{"interruption", &eventstore.Interruption{Reason: eventstore.InterruptCrash, Detail: "signal: killed\x1b[2J", Turn: 2, MessageID: "msg-1", InputRequestID: "req-1"},
			`crash turn=2 input=req-1 "signal: killed\x1b[2J" (msg-1)`},
		{"interruption alone", &eventstore.Interruption{Reason: eventstore.InterruptShutdown}, "shutdown"},
		{"snapshot", &eventstore.SnapshotCreated{Resource: "/src/app", Ref: "refs/agentjournal/ae-1/4", Commit: strings.Repeat("c", 40),
			AtSequence: 4, Files: 12, Added: 1, Modified: 2},
			"at=4 commit=cccccccccccc files=12 added=1 modified=2 deleted=0 cwd=/src/app [refs/agentjournal/ae-1/4]"},
		{"restore", &eventstore.RestoreAttempted{Resource: "/src/app", Mode: eventstore.RestoreSnapshot, SnapshotRef: "refs/agentjournal/ae-0/4",
			Outcome: eventstore.RestoreRestored, RestoredTo: "/data/worktrees/ae-1"},
			"snapshot restored from=refs/agentjournal/ae-0/4 to=/data/worktrees/ae-1 cwd=/src/app"},
		{"restore refused", &eventstore.RestoreAttempted{Resource: "/src/app", Mode: eventstore.RestoreKeep, Outcome: eventstore.RestoreUnsupported,
			Detail: "not a git work tree"},
			`keep unsupported cwd=/src/app "not a git work tree"`},
		{"checkpoint", &eventstore.CheckpointCreated{CheckpointID: "turn-2", Trigger: eventstore.CheckpointTurnEnd, Source: eventstore.SourceDaemon,
			AtSequence: 12, StatusAtCapture: eventstore.RunPaused, TodoIDs: []string{"t1", "t2"},
			StateSummary: eventstore.CheckpointSummary{Title: "fix the bug"}},
			`daemon turn-end at=12 status=paused "fix the bug" todos=2 [turn-2]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.r); got != tc.want {
				t.Errorf("summarize = %s\nwant        %s", got, tc.want)
			}
		})
	}
}

func observation(id string, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
}
