package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// The session shapes, with the fixture agent standing in for the CLIs: it
// replays lines in their real formats and then, like Claude Code, reads its
// stdin to the end before it exits. (The real CLIs are driven through the
// same paths in cmd/agentjournal's conformance suite.)

const (
	claudeInit    = `{"type":"system","subtype":"init","session_id":"sess-1","claude_code_version":"2.1.328","uuid":"u-0"}`
	claudeText    = `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"All done."}],"usage":{"input_tokens":10,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"sess-1","uuid":"u-1"}`
	claudeResult  = `{"type":"result","subtype":"success","is_error":false,"result":"All done.","session_id":"sess-1","uuid":"u-2","usage":{"input_tokens":10,"output_tokens":5}}`
	claudeFailure = `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 overloaded","session_id":"sess-1","uuid":"u-2","usage":{"input_tokens":0,"output_tokens":0}}`
)

// capture writes lines to a file for the fixture's replay step.
func capture(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capture.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitState replays the journal until cond holds, or fails the test.
func (r *rig) waitState(t *testing.T, ref eventstore.Reference, what string, cond func(*execution.State) bool) *execution.State {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := r.replay(t, ref)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; state %s/%s (%s)", what, st.Lifecycle, st.Attention, st.LifecycleReason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClaudeOneShotEndsWithItsResult(t *testing.T) {
	r := newRig(t, time.Second)
	cases := []struct {
		name   string
		result string
		want   eventstore.Lifecycle
		reason string
	}{
		{"success", claudeResult, eventstore.LifecycleCompleted, "exit status 0"},
		{"error result", claudeFailure, eventstore.LifecycleFailed, "API Error: 500"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
				Agent: "claude-code", Shape: eventstore.ShapeOneShot, Prompt: "go",
				Command: []string{r.agent, "replay:" + capture(t, claudeInit, claudeText, c.result), "wait"}})
			if err != nil {
				t.Fatal(err)
			}
			// The fixture, like Claude Code, exits only when its input
			// closes: a run that keeps it open never ends.
			st := r.wait(t, ref)
			if st.Lifecycle != c.want || !strings.Contains(st.LifecycleReason, c.reason) || st.Attention != eventstore.AttentionNone {
				t.Fatalf("ended %s/%s (%s), want %s with %q and attention none", st.Lifecycle, st.Attention, st.LifecycleReason, c.want, c.reason)
			}
			if d := st.ProtocolDescriptor; d.SessionShape != eventstore.ShapeOneShot || d.Approvals == nil || d.Approvals.Mode != eventstore.ApprovalsJournal {
				t.Fatalf("descriptor shape %q approvals %+v, want one-shot, answered through the journal", d.SessionShape, d.Approvals)
			}
		})
	}
}

func TestClaudeConversationWaitsAndStopsGracefully(t *testing.T) {
	r := newRig(t, 5*time.Second)
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "claude-code", Prompt: "go",
		Command: []string{r.agent, "replay:" + capture(t, claudeInit, claudeText, claudeResult), "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitState(t, ref, "the wait after the first turn", func(st *execution.State) bool {
		return st.Lifecycle == eventstore.LifecycleRunning && st.Attention == eventstore.AttentionAwaitingOperator
	})
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	if st.Lifecycle != eventstore.LifecycleCompleted || !strings.Contains(st.LifecycleReason, "stopped by the operator") {
		t.Fatalf("after stop: %s (%s), want completed by the operator, not cancelled", st.Lifecycle, st.LifecycleReason)
	}
}

func TestCodexConversationResumesItsThread(t *testing.T) {
	r := newRig(t, time.Second)
	dir := t.TempDir()
	argsLog := filepath.Join(dir, "args")
	// A wrapper logs each process's arguments; the fixture then reads
	// stdin to its end, which only a closed stdin lets it pass.
	wrapper := filepath.Join(dir, "codex")
	script := "#!/bin/sh\necho \"$@\" >> " + argsLog + "\nexec " + r.agent + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	turn := capture(t,
		`{"type":"thread.started","thread_id":"th-42"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":120,"cached_input_tokens":30,"output_tokens":17}}`)
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "codex", Prompt: "first", Command: []string{wrapper, "replay:" + turn, "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	awaiting := func(st *execution.State) bool {
		return st.Lifecycle == eventstore.LifecycleRunning && st.Attention == eventstore.AttentionAwaitingOperator
	}
	r.waitState(t, ref, "the wait after turn 1", awaiting)
	if r.rt.Done(ref.AgentExecutionID) == nil {
		t.Fatal("the execution ended with its first turn's process")
	}
	payload, _ := json.Marshal(map[string]string{"text": "second"})
	ack, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Payload: payload})
	if err != nil || ack.Delivery != eventstore.DeliveryDelivered || !strings.Contains(ack.Reason, "th-42") {
		t.Fatalf("second prompt: %+v, %v; want it delivered by resuming th-42", ack, err)
	}
	st := r.waitState(t, ref, "the wait after turn 2", func(st *execution.State) bool {
		return awaiting(st) && strings.Contains(lastStateReason(r.records(t, ref)), "turn 2 ended")
	})
	if st.Lifecycle.Final() {
		t.Fatalf("ended after turn 2: %s", st.LifecycleReason)
	}
	data, err := os.ReadFile(argsLog)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime asks the CLI its version before the launch.
	lines := slices.DeleteFunc(strings.Split(strings.TrimSpace(string(data)), "\n"), func(l string) bool { return l == "--version" })
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "exec --json") || !strings.HasSuffix(lines[0], " first") ||
		!strings.HasPrefix(lines[1], "exec resume --json") || !strings.HasSuffix(lines[1], " th-42 second") {
		t.Fatalf("codex was run as:\n%s\nwant exec … first, then exec resume … th-42 second", data)
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("stopped between turns: %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
}

// lastStateReason is the reason of the journal's last state change.
func lastStateReason(recs []eventstore.Record) string {
	for i := len(recs) - 1; i >= 0; i-- {
		if sc, ok := recs[i].(*eventstore.StateChanged); ok {
			return sc.Reason
		}
	}
	return ""
}

// TestUnknownLineTypeNamedOnce: a line type the parser does not know is
// recorded once however often the CLI prints it, naming the adapter, the
// type and the CLI's version, and the timeline shows that name.
func TestUnknownLineTypeNamedOnce(t *testing.T) {
	r := newRig(t, time.Second)
	unknown := `{"type":"brand_new_line","session_id":"sess-1","uuid":"u-x%d"}`
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "claude-code", Shape: eventstore.ShapeOneShot, Prompt: "go",
		Command: []string{r.agent, "replay:" + capture(t, claudeInit, fmt.Sprintf(unknown, 1), fmt.Sprintf(unknown, 2), claudeText, claudeResult), "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	st := r.wait(t, ref)
	var diags []*eventstore.DiagnosticSignal
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok {
				diags = append(diags, d)
			}
		}
	}
	if len(diags) != 1 || diags[0].LineType != "brand_new_line" || diags[0].Adapter != "claude-code" || diags[0].AgentVersion != "2.1.328" {
		t.Fatalf("diagnostics %+v, want one naming claude-code, brand_new_line and 2.1.328", diags)
	}
	var shown bool
	for _, it := range st.Timeline {
		if it.Kind == execution.ItemKind(eventstore.TimelineDiagnostic) && strings.Contains(it.Text, "brand_new_line") {
			shown = true
		}
	}
	if !shown {
		t.Fatalf("the timeline does not show the unknown line type: %+v", st.Timeline)
	}
}

// slowDeliveries is the real store with the append of every delivery
// record held up: a turn process that ends at once then ends its turn
// while its delivery is still being recorded.
type slowDeliveries struct {
	*eventstore.JetStreamStore
	delay time.Duration
}

func (s *slowDeliveries) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	if _, ok := r.(*eventstore.MessageDelivery); ok {
		time.Sleep(s.delay)
	}
	return s.JetStreamStore.Append(ctx, ref, r)
}

// TestFastTurnEndsAfterItsStart: a turn that ends before the delivery that
// started it is recorded still has its start recorded first, so the
// execution waits for the operator after it, never looks autonomous.
func TestFastTurnEndsAfterItsStart(t *testing.T) {
	b := fixtures.StartNATS(t)
	js := fixtures.OpenStore(t, b)
	store := &slowDeliveries{JetStreamStore: js, delay: 500 * time.Millisecond}
	rt := startRuntime(t, runtime.Config{Store: store, StopGrace: time.Second, HostDir: filepath.Join(t.TempDir(), "hosted")})
	r := &rig{store: js, rt: rt, agent: fixtures.AgentBinary(t)}
	turn := capture(t,
		`{"type":"thread.started","thread_id":"th-7"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}`)
	ref, err := rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-fast",
		Agent: "codex", Prompt: "first", Command: []string{r.agent, "replay:" + turn}})
	if err != nil {
		t.Fatal(err)
	}
	awaiting := func(st *execution.State) bool {
		return st.Lifecycle == eventstore.LifecycleRunning && st.Attention == eventstore.AttentionAwaitingOperator
	}
	r.waitState(t, ref, "the wait after turn 1", awaiting)
	payload, _ := json.Marshal(map[string]string{"text": "second"})
	if ack, err := rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Payload: payload}); err != nil ||
		ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("second prompt: %+v, %v", ack, err)
	}
	// The delivery is recorded by now: whatever follows it is written.
	st := r.replay(t, ref)
	var order []string
	for _, rec := range r.records(t, ref) {
		if sc, ok := rec.(*eventstore.StateChanged); ok && strings.HasPrefix(sc.Reason, "turn ") {
			order = append(order, sc.Reason)
		}
	}
	want := []string{"turn 1 ended; waiting for the next message", "turn 2 started by message", "turn 2 ended; waiting for the next message"}
	if len(order) != len(want) || !strings.HasPrefix(order[1], want[1]) || order[0] != want[0] || order[2] != want[2] {
		t.Fatalf("turn records %q, want %q (start before end)", order, want)
	}
	if !awaiting(st) {
		t.Fatalf("after a fast turn 2: %s/%s, want running and waiting for the operator", st.Lifecycle, st.Attention)
	}
	if err := rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
}
