package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

func state(lc eventstore.Lifecycle, at eventstore.Attention, req string) *eventstore.StateChanged {
	stateN++
	s := &eventstore.StateChanged{Base: eventstore.Base{RecordID: fmt.Sprintf("state-%d", stateN)}, Lifecycle: lc, Attention: at}
	if req != "" {
		s.CurrentInputRequestID = eventstore.SetInputRequest(req)
	}
	return s
}

var stateN int

func prompt(id, text string) *eventstore.MessageAccepted {
	p, _ := json.Marshal(map[string]string{"text": text})
	return &eventstore.MessageAccepted{MessageID: id, Source: eventstore.SourceOperator, MessageType: "prompt", Payload: p, MutatesContext: true}
}

// Every row of the status table in docs/contract.md.
func TestRunStatusTable(t *testing.T) {
	queued := &eventstore.DispatchContext{DispatchMode: eventstore.DispatchQueued}
	scheduled := &eventstore.DispatchContext{DispatchMode: eventstore.DispatchScheduled}
	interactive := &eventstore.DispatchContext{DispatchMode: eventstore.DispatchInteractive}
	for _, c := range []struct {
		lc       eventstore.Lifecycle
		at       eventstore.Attention
		req      string
		dispatch *eventstore.DispatchContext
		want     eventstore.RunStatus
	}{
		{eventstore.LifecycleStarting, eventstore.AttentionNone, "", queued, eventstore.RunQueued},
		{eventstore.LifecycleStarting, eventstore.AttentionNone, "", scheduled, eventstore.RunQueued},
		{eventstore.LifecycleStarting, eventstore.AttentionNone, "", interactive, eventstore.RunRunning},
		{eventstore.LifecycleStarting, eventstore.AttentionNone, "", nil, eventstore.RunRunning},
		{eventstore.LifecycleRunning, eventstore.AttentionAutonomous, "", queued, eventstore.RunRunning},
		{eventstore.LifecycleRunning, eventstore.AttentionAwaitingOperator, "q1", nil, eventstore.RunWaitingApproval},
		{eventstore.LifecycleRunning, eventstore.AttentionAwaitingOperator, "", nil, eventstore.RunPaused},
		{eventstore.LifecycleRunning, eventstore.AttentionBlocked, "", nil, eventstore.RunPaused},
		{eventstore.LifecycleRunning, eventstore.AttentionAwaitingSystem, "", nil, eventstore.RunRunning},
		{eventstore.LifecycleCompleted, eventstore.AttentionNone, "", nil, eventstore.RunCompleted},
		{eventstore.LifecycleFailed, eventstore.AttentionNone, "", nil, eventstore.RunFailed},
		{eventstore.LifecycleCancelled, eventstore.AttentionNone, "", nil, eventstore.RunCancelled},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "", nil, eventstore.RunCancelled},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "canceled", nil, eventstore.RunCancelled},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "shutdown", nil, eventstore.RunCancelled},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "system_restart", nil, eventstore.RunFailed},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "crash", nil, eventstore.RunFailed},
		{eventstore.LifecycleTerminated, eventstore.AttentionNone, "timeout", nil, eventstore.RunFailed},
	} {
		r := &Run{Lifecycle: c.lc, Attention: c.at, Dispatch: c.dispatch}
		if c.lc == eventstore.LifecycleTerminated {
			r.Interruption = c.req
		} else {
			r.OpenRequest = c.req
		}
		if got := r.Status(); got != c.want {
			t.Errorf("%s/%s request %q dispatch %+v: %s, want %s", c.lc, c.at, c.req, c.dispatch, got, c.want)
		}
	}
}

// A fold stored as JSON and folded on gives what one fold of every record
// gives: the projection stores the fold between batches.
func TestRunFoldResumesFromJSON(t *testing.T) {
	recs := journal(t,
		prompt("prompt", "fix the parser\nand add tests"),
		state(eventstore.LifecycleRunning, eventstore.AttentionAutonomous, ""),
		plan("p1", eventstore.PlanItem{ID: "1", Text: "read", Status: eventstore.PlanItemInProgress}),
		ask("o1", &eventstore.NeedsInputSignal{RequestID: "q1", Question: "which file?"}),
		state("", eventstore.AttentionAwaitingOperator, "q1"),
		answer("m1", eventstore.SourceOperator, "q1", "parser.go"),
		plan("p2", eventstore.PlanItem{ID: "1", Text: "read", Status: eventstore.PlanItemDone},
			eventstore.PlanItem{ID: "2", Text: "write", Status: eventstore.PlanItemOpen}),
		&eventstore.ActivityUpdated{Base: eventstore.Base{RecordID: "act-1"}, Activity: eventstore.ActivityEditing,
			CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: "parser.go"}},
		state(eventstore.LifecycleCompleted, eventstore.AttentionNone, ""),
	)
	whole := Fold(recs)
	for cut := 1; cut < len(recs); cut++ {
		first := Fold(recs[:cut])
		data, err := json.Marshal(first)
		if err != nil {
			t.Fatal(err)
		}
		resumed := &Run{}
		if err := json.Unmarshal(data, resumed); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[cut:] {
			resumed.Apply(r)
		}
		if diff := cmp.Diff(whole, resumed, cmp.AllowUnexported(Run{})); diff != "" && cmp.Diff(jsonOf(t, whole), jsonOf(t, resumed)) != "" {
			t.Fatalf("cut at %d (-whole +resumed):\n%s", cut, cmp.Diff(jsonOf(t, whole), jsonOf(t, resumed)))
		}
	}
	if whole.Intent != "fix the parser\nand add tests" || whole.Conversation != 2 || whole.Status() != eventstore.RunCompleted {
		t.Errorf("fold: intent %q, conversation %d, status %s", whole.Intent, whole.Conversation, whole.Status())
	}
	if want := []string{ArtifactFile + "parser.go"}; !cmp.Equal(whole.Artifacts, want) {
		t.Errorf("artifacts %q, want %q", whole.Artifacts, want)
	}
	// A record seen again (a replay from an earlier offset) changes nothing.
	again := Fold(append(append([]eventstore.Record{}, recs...), recs[3:]...))
	if diff := cmp.Diff(jsonOf(t, whole), jsonOf(t, again)); diff != "" {
		t.Errorf("records folded twice (-once +twice):\n%s", diff)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func runOf(id, session string, created time.Time, lc eventstore.Lifecycle, conversation int) *Run {
	return &Run{RunID: id, SessionID: session, AgentID: "claude-code", OwnerEntity: eventstore.OwnerMission, OwnerID: "m-1",
		Lifecycle: lc, Attention: eventstore.AttentionNone, CreatedAt: created, UpdatedAt: created.Add(time.Minute), Conversation: conversation}
}

func TestSessionOfResumedRuns(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	first := runOf("ae-1", "ae-1", t0, eventstore.LifecycleTerminated, 2)
	first.Interruption = "system_restart"
	first.Artifacts = []string{ArtifactFile + "a.go"}
	first.Approvals = []AgentApprovalCheckpoint{{ApprovalID: "q1"}}
	second := runOf("ae-2", "ae-1", t0.Add(time.Hour), eventstore.LifecycleRunning, 1)
	second.Resumes, second.Attention = "ae-1", eventstore.AttentionAwaitingOperator
	second.Artifacts = []string{ArtifactFile + "a.go", ArtifactFile + "b.go"}
	native := func(string) bool { return true }

	s := Session([]*Run{first, second}, native, "")
	if s.SessionID != "ae-1" || !cmp.Equal(s.RunIDs, []string{"ae-1", "ae-2"}) || s.Status != SessionPaused ||
		!s.StartedAt.Equal(t0) || !s.UpdatedAt.Equal(second.UpdatedAt) {
		t.Errorf("session %+v", s)
	}
	if s.UserID != "Mission/m-1" || s.ProductID != ProductID || s.DispatchContext != nil || !strings.Contains(jsonOf(t, s), `"dispatchContext": null`) {
		t.Errorf("user %q product %q dispatch %s", s.UserID, s.ProductID, s.DispatchContext)
	}
	if want := []string{ArtifactFile + "a.go", ArtifactFile + "b.go"}; !cmp.Equal(s.ArtifactRefs, want) {
		t.Errorf("artifacts %q, want %q each once", s.ArtifactRefs, want)
	}
	if !cmp.Equal(s.ApprovalRefs, []string{"q1"}) || s.CurrentTaskID == nil || *s.CurrentTaskID != "intent-ae-2" {
		t.Errorf("approvals %q, current task %v", s.ApprovalRefs, s.CurrentTaskID)
	}
	if !s.Resumable {
		t.Error("a session with a conversation to retell is not resumable")
	}
	// Nothing to retell and no native session: not resumable.
	empty := runOf("ae-3", "ae-3", t0, eventstore.LifecycleFailed, 0)
	if s := Session([]*Run{empty}, native, "ae-9"); s.Resumable || s.ParentSessionID != "ae-9" || s.CurrentTaskID != nil || s.Status != SessionFailed {
		t.Errorf("empty session: %+v", s)
	}
	empty.ResumeToken = "thread-1"
	if s := Session([]*Run{empty}, native, ""); !s.Resumable {
		t.Error("a session whose agent resumes its own session, with the id captured, is not resumable")
	}
	if s := Session([]*Run{empty}, func(string) bool { return false }, ""); s.Resumable {
		t.Error("resumable with an id the agent cannot resume from")
	}
}

func TestTasksOfRuns(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	a := runOf("ae-1", "s", t0, eventstore.LifecycleFailed, 1)
	a.OwnerEntity, a.OwnerID, a.Intent = eventstore.OwnerTask, "task-7", "fix it\nplease"
	b := runOf("ae-2", "s", t0.Add(time.Hour), eventstore.LifecycleRunning, 1)
	b.OwnerEntity, b.OwnerID, b.Attention, b.OpenRequest = eventstore.OwnerTask, "task-7", eventstore.AttentionAwaitingOperator, "q"
	c := runOf("ae-3", "s", t0.Add(2*time.Hour), eventstore.LifecycleCompleted, 1)
	c.Intent = "<script>alert(1)</script>"
	got := Tasks([]*Run{a, b, c})
	want := []AgentTask{
		{TaskID: "task-7", SessionID: "s", Title: "fix it", Intent: "fix it\nplease", Status: "blocked", CreatedAt: a.CreatedAt, UpdatedAt: b.UpdatedAt, RunIDs: []string{"ae-1", "ae-2"}},
		{TaskID: "intent-ae-3", SessionID: "s", Title: "<script>alert(1)</script>", Intent: c.Intent, Status: "completed", CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, RunIDs: []string{"ae-3"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

func TestCaptureAndCheckpointRecord(t *testing.T) {
	recs := journal(t,
		prompt("prompt", "write the report"),
		state(eventstore.LifecycleRunning, eventstore.AttentionAutonomous, ""),
		&eventstore.Observation{ObservationID: "o-native", Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceAuthoritative,
			Native: &eventstore.NativeIDs{SessionID: "claude-sess-1"}, Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: "on it"})},
		plan("p1", eventstore.PlanItem{ID: "1", Text: "draft", Status: eventstore.PlanItemDone},
			eventstore.PlanItem{ID: "2", Text: "review", Status: eventstore.PlanItemOpen}),
		ask("o1", &eventstore.NeedsInputSignal{RequestID: "q1", Question: "ok?"}),
		state("", eventstore.AttentionAwaitingOperator, "q1"),
	)
	run := Fold(recs)
	c := run.Capture("cp-1", eventstore.CheckpointRequest, eventstore.SourceOperator, "", "")
	if c.StatusAtCapture != eventstore.RunWaitingApproval || c.ResumeToken != "claude-sess-1" || c.AtSequence != run.LastSequence ||
		!cmp.Equal(c.TodoIDs, []string{"1", "2"}) || !cmp.Equal(c.ApprovalRefs, []string{"q1"}) || c.CurrentTaskID != "t1" {
		t.Errorf("capture %+v", c)
	}
	if c.StateSummary.Title != "write the report" || c.StateSummary.Summary != "waiting-approval after 0 turns; todos: 1 done, 1 open; 1 approval pending" ||
		c.StateSummary.LastActionAt == nil {
		t.Errorf("summary %+v", c.StateSummary)
	}
	// Recorded and folded back, it is the run's AgentCheckpoint.
	c.Base = eventstore.Base{AgentExecutionID: run.RunID, Sequence: run.LastSequence + 1, OccurredAt: time.Now()}
	run.Apply(c)
	if len(run.Checkpoints) != 1 {
		t.Fatalf("checkpoints %+v", run.Checkpoints)
	}
	cp := run.Checkpoints[0]
	if cp.CheckpointID != "cp-1" || cp.SessionID != "sess-1" || cp.RunID != run.RunID || cp.ResumeToken == nil || *cp.ResumeToken != "claude-sess-1" ||
		cp.Sequence != c.Sequence || cp.UserID != "Task/t1" {
		t.Errorf("checkpoint %+v", cp)
	}
	// Lists are bounded.
	for i := range eventstore.MaxCheckpointRefs + 5 {
		run.addArtifact(fmt.Sprintf("%sf%d", ArtifactFile, i))
	}
	if c := run.Capture("cp-2", eventstore.CheckpointTurnEnd, eventstore.SourceDaemon, "t", "s"); len(c.ArtifactRefs) != eventstore.MaxCheckpointRefs ||
		c.ArtifactRefs[len(c.ArtifactRefs)-1] != fmt.Sprintf("%sf%d", ArtifactFile, eventstore.MaxCheckpointRefs+4) {
		t.Errorf("%d artifact refs, the last %q", len(c.ArtifactRefs), c.ArtifactRefs[len(c.ArtifactRefs)-1])
	}
}

// The agent's checkpoint signal is a checkpoint of the run as folded up to
// it, with the agent as its source.
func TestAgentCheckpointSignal(t *testing.T) {
	recs := journal(t,
		prompt("prompt", "port the parser"),
		state(eventstore.LifecycleRunning, eventstore.AttentionAutonomous, ""),
		plan("p1", eventstore.PlanItem{ID: "1", Text: "lexer", Status: eventstore.PlanItemDone}),
		&eventstore.Observation{ObservationID: "o-cp", Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceHigh,
			Signal: eventstore.NewSignal(&eventstore.CheckpointSignal{Title: "lexer done", Summary: "parser next"})},
		plan("p2", eventstore.PlanItem{ID: "2", Text: "parser", Status: eventstore.PlanItemInProgress}),
	)
	run := Fold(recs)
	if len(run.Checkpoints) != 1 {
		t.Fatalf("checkpoints %+v", run.Checkpoints)
	}
	cp := run.Checkpoints[0]
	if cp.CheckpointID != "o-cp" || cp.Source != SourceAgent || cp.Trigger != eventstore.CheckpointRequest || cp.StateSummary.Title != "lexer done" ||
		cp.StateSummary.Summary != "parser next" || !cmp.Equal(cp.TodoIDs, []string{"1"}) || cp.Sequence != recs[4].RecordBase().Sequence ||
		cp.AtSequence != cp.Sequence || cp.StatusAtCapture != eventstore.RunRunning {
		t.Errorf("agent checkpoint %+v", cp)
	}
}
