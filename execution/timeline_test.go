package execution

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

func toolStart(id, name string, target *eventstore.Target) *eventstore.ActivityUpdated {
	return &eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting, CurrentTarget: target,
		ToolCall: &eventstore.ToolCall{ID: id, Name: name, Status: eventstore.ToolCallStarted}}
}

func toolEnd(id, name string, c eventstore.ToolCall) *eventstore.ActivityUpdated {
	c.ID, c.Name = id, name
	if c.Status == "" {
		c.Status = eventstore.ToolCallSucceeded
	}
	return &eventstore.ActivityUpdated{ToolCall: &c}
}

// TestTimelineToolCalls: a call is one item, at its start, completed in
// place by its end with its status, duration, exit code, error and output;
// calls that overlap pair by id; an end without an id is an item of its
// own; a call that never ends stays running.
func TestTimelineToolCalls(t *testing.T) {
	recs := journal(
		header(), // 1, at 0s
		&eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous},                                                      // 2
		toolStart("c1", "Bash", &eventstore.Target{Kind: eventstore.TargetCommand, Path: "go test ./..."}),                                                               // 3, at 2s
		toolStart("c2", "Read", &eventstore.Target{Kind: eventstore.TargetFile, Path: "/w/a.go"}),                                                                        // 4
		toolEnd("c2", "Read", eventstore.ToolCall{Output: "package a\n"}),                                                                                                // 5
		toolEnd("c1", "Bash", eventstore.ToolCall{Status: eventstore.ToolCallFailed, Error: "exit status 1\nmore", ExitCode: i64(1), Output: "--- FAIL: TestA\nFAIL\n"}), // 6, at 5s
		toolEnd("", "WebFetch", eventstore.ToolCall{Status: eventstore.ToolCallFailed, Error: "refused"}),                                                                // 7
		toolStart("c3", "Grep", &eventstore.Target{Kind: eventstore.TargetSearch, Path: "TODO"}),                                                                         // 8
	)
	s, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []TimelineItem
	for _, it := range s.Timeline {
		if it.Kind == ItemTool {
			got = append(got, it)
		}
	}
	base := func(seq int) TimelineItem {
		r := recs[seq-1].RecordBase()
		return TimelineItem{ID: r.RecordID, Sequence: r.Sequence, At: r.OccurredAt, Kind: ItemTool, Record: eventstore.KindActivity}
	}
	want := []TimelineItem{base(3), base(4), base(7), base(8)}
	want[0].Text = "Bash: go test ./... — failed (exit 1) after 3.0s: exit status 1"
	want[0].Tool = &ToolItem{CallID: "c1", Name: "Bash", Status: eventstore.ToolCallFailed, Target: recs[2].(*eventstore.ActivityUpdated).CurrentTarget,
		DurationMs: i64(3000), EndSequence: 6, Error: "exit status 1\nmore", ExitCode: i64(1), Output: "--- FAIL: TestA\nFAIL\n"}
	want[1].Text = "Read: /w/a.go — succeeded after 1.0s"
	want[1].Tool = &ToolItem{CallID: "c2", Name: "Read", Status: eventstore.ToolCallSucceeded, Target: recs[3].(*eventstore.ActivityUpdated).CurrentTarget,
		DurationMs: i64(1000), EndSequence: 5, Output: "package a\n"}
	want[2].Text = "WebFetch — failed: refused"
	want[2].Tool = &ToolItem{Name: "WebFetch", Status: eventstore.ToolCallFailed, EndSequence: 7, Error: "refused"}
	want[3].Text = "Grep: TODO — running"
	want[3].Tool = &ToolItem{CallID: "c3", Name: "Grep", Status: eventstore.ToolCallStarted, Target: recs[7].(*eventstore.ActivityUpdated).CurrentTarget}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tool items (-want +got):\n%s", d)
	}
	if len(s.OpenToolCalls) != 1 || s.OpenToolCalls[0].Tool.CallID != "c3" {
		t.Errorf("open calls %+v, want c3 alone", s.OpenToolCalls)
	}
}

// TestTimelineToolCallsStepByStep: Apply gives the completed item with the
// start's ID and Sequence, which is how a projection replaces it, and
// replaying record by record gives the timeline Replay gives.
func TestTimelineToolCallsStepByStep(t *testing.T) {
	recs := journal(header(), toolStart("c1", "Bash", nil), toolEnd("c1", "Bash", eventstore.ToolCall{Output: "ok"}))
	s := &State{}
	var last []TimelineItem
	for _, r := range recs {
		items, err := s.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		last = items
	}
	start := recs[1].RecordBase()
	if len(last) != 1 || last[0].ID != start.RecordID || last[0].Sequence != start.Sequence || last[0].Tool.Status != eventstore.ToolCallSucceeded {
		t.Fatalf("the end's items %+v, want the start's item (%s, %d) succeeded", last, start.RecordID, start.Sequence)
	}
	whole, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Timeline) != 1 || whole.Timeline[0].Tool.Output != "ok" {
		t.Errorf("timeline %+v, want one completed tool item", whole.Timeline)
	}
}

// TestTimelineQuietDecisions: decisions that change nothing are quiet,
// the others are not; checkpoints and snapshots are items.
func TestTimelineQuietDecisions(t *testing.T) {
	for _, c := range []struct {
		action eventstore.DecisionAction
		quiet  bool
	}{
		{eventstore.ActionRecordOnly, true},
		{eventstore.ActionEmitMessage, true},
		{eventstore.ActionReject, false},
		{eventstore.ActionUpdateState, false},
		{eventstore.ActionRouteOwnerEffect, false},
	} {
		it := TimelineItem{Kind: ItemDecision, Action: c.action}
		if it.Quiet() != c.quiet {
			t.Errorf("decision %s: Quiet() = %v, want %v", c.action, it.Quiet(), c.quiet)
		}
	}
	recs := journal(header(),
		&eventstore.SnapshotCreated{Resource: "/w", Ref: "refs/agentjournal/ae-replay/1", Commit: strings.Repeat("c", 40), Tree: strings.Repeat("e", 40), AtSequence: 1, Files: 3},
		&eventstore.CheckpointCreated{CheckpointID: "turn-1", Trigger: eventstore.CheckpointTurnEnd, Source: eventstore.SourceDaemon, AtSequence: 2,
			StatusAtCapture: eventstore.RunRunning, TodoIDs: []string{}, ArtifactRefs: []string{}, MemoryRefs: []string{}, ApprovalRefs: []string{},
			StateSummary: eventstore.CheckpointSummary{Title: "tests pass"}},
	)
	s, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []ItemKind
	for _, it := range s.Timeline {
		kinds = append(kinds, it.Kind)
		if it.Text != eventstore.TimelineText(recs[it.Sequence-1]) {
			t.Errorf("%s item text %q, want the record's timeline text", it.Kind, it.Text)
		}
	}
	if d := cmp.Diff([]ItemKind{ItemSnapshot, ItemCheckpoint}, kinds); d != "" {
		t.Errorf("item kinds (-want +got):\n%s", d)
	}
}
