package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// launchACP runs the scripted ACP agent through the acp adapter, in dir,
// with prompt as its first script ("" for none).
func (r *rig) launchACP(t *testing.T, dir string, shape eventstore.SessionShape, prompt string, args ...string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-acp",
		Agent: "acp", Command: append([]string{fixtures.ACPAgentBinary(t)}, args...), Prompt: prompt, Shape: shape, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func (r *rig) send(t *testing.T, ref eventstore.Reference, typ string, payload map[string]string) runtime.MessageAck {
	t.Helper()
	raw, _ := json.Marshal(payload)
	ack, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: typ, Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

// observed lists the payloads of one signal type, in journal order.
func observed[T eventstore.SignalPayload](r *rig, t *testing.T, ref eventstore.Reference) []T {
	var out []T
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if p, ok := o.Signal.Payload.(T); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func messages(r *rig, t *testing.T, ref eventstore.Reference) []string {
	var out []string
	for _, m := range observed[*eventstore.MessageSignal](r, t, ref) {
		out = append(out, m.Text)
	}
	return out
}

func diagnosticCodes(r *rig, t *testing.T, ref eventstore.Reference) []string {
	var out []string
	for _, d := range observed[*eventstore.DiagnosticSignal](r, t, ref) {
		out = append(out, d.Code)
	}
	return out
}

// turnsEnded counts the turn-end state changes of a conversation.
func (r *rig) turnsEnded(t *testing.T, ref eventstore.Reference) int {
	n := 0
	for _, rec := range r.records(t, ref) {
		if st, ok := rec.(*eventstore.StateChanged); ok && strings.HasPrefix(st.Reason, "turn ") && strings.Contains(st.Reason, "waiting for the next message") {
			n++
		}
	}
	return n
}

func (r *rig) waitTurns(t *testing.T, ref eventstore.Reference, n int) {
	t.Helper()
	waitFor(t, func() bool { return r.turnsEnded(t, ref) >= n })
}

func TestACPTurnIsJournaled(t *testing.T) {
	r := newRig(t, 2*time.Second)
	dir := t.TempDir()
	script := strings.Join([]string{
		"say Hello, world! This message comes in many chunks.",
		"think Let me think about it.",
		"tool t1 read ok",
		"tool t2 execute fail",
		"plan completed:Read the code|in_progress:Fix the bug|pending:Run the tests",
		"say Done.",
		"usage 120 45",
	}, "\n")
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, script)
	r.waitTurns(t, ref, 1)

	if got, want := messages(r, t, ref), []string{"Hello, world! This message comes in many chunks.", "Done."}; !cmp.Equal(got, want) {
		t.Fatalf("messages: got %q, want %q (one per message, not per chunk)", got, want)
	}
	var calls []eventstore.ToolCall
	reasoning := false
	for _, rec := range r.records(t, ref) {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok {
			if a.ToolCall != nil {
				calls = append(calls, *a.ToolCall)
			}
			reasoning = reasoning || a.Activity == eventstore.ActivityReasoning
		}
	}
	if !reasoning {
		t.Error("no reasoning activity for the thought chunks")
	}
	want := []eventstore.ToolCall{
		{ID: "t1", Name: "Run t1", Status: eventstore.ToolCallStarted},
		{ID: "t1", Name: "Run t1", Status: eventstore.ToolCallSucceeded},
		{ID: "t2", Name: "Run t2", Status: eventstore.ToolCallStarted},
		{ID: "t2", Name: "Run t2", Status: eventstore.ToolCallFailed, Error: "boom: t2 failed"},
	}
	if d := cmp.Diff(want, calls); d != "" {
		t.Errorf("tool calls (-want +got):\n%s", d)
	}
	st := r.replay(t, ref)
	wantPlan := []eventstore.PlanItem{{Text: "Read the code", Status: eventstore.PlanItemDone},
		{Text: "Fix the bug", Status: eventstore.PlanItemInProgress}, {Text: "Run the tests", Status: eventstore.PlanItemOpen}}
	if d := cmp.Diff(wantPlan, st.Plan); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	if st.Usage.InputTokens == nil || *st.Usage.InputTokens != 120 || st.Usage.OutputTokens == nil || *st.Usage.OutputTokens != 45 {
		t.Errorf("usage %+v, want 120 in, 45 out", st.Usage)
	}
	// The session id is the one session/new gave for this cwd.
	wantSession := "sess-" + strconv.Itoa(len(dir))
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage {
			if o.Native == nil || o.Native.SessionID != wantSession {
				t.Errorf("message native ids %+v, want session %s", o.Native, wantSession)
			}
		}
	}
	if claims := observed[*eventstore.CompletedClaimSignal](r, t, ref); len(claims) != 1 || claims[0].Summary != "Done." {
		t.Errorf("completed claims %+v, want one with the last message", claims)
	}

	// The next prompt is the next turn of the same session.
	if ack := r.send(t, ref, "prompt", map[string]string{"text": "say Again."}); ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("second prompt: %+v", ack)
	}
	r.waitTurns(t, ref, 2)
	if got := messages(r, t, ref); len(got) != 3 || got[2] != "Again." {
		t.Fatalf("messages after the second turn: %q", got)
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
}

func TestACPPermissionIsAnsweredThroughTheJournal(t *testing.T) {
	r := newRig(t, 2*time.Second)
	for _, c := range []struct{ answer, chosen string }{
		{eventstore.AnswerAllow, "yes"},
		{eventstore.AnswerAllowAlways, "always"},
		{eventstore.AnswerDeny, "no"},
	} {
		t.Run(c.answer, func(t *testing.T) {
			ref := r.launchACP(t, t.TempDir(), eventstore.ShapeConversation, "ask call-1")
			waitFor(t, func() bool { return len(observed[*eventstore.NeedsInputSignal](r, t, ref)) > 0 })
			req := observed[*eventstore.NeedsInputSignal](r, t, ref)[0]
			if req.RequestID != "call-1" || req.Kind != string(eventstore.InputPermission) || req.Tool == nil || req.Tool.Input["command"] != "rm -rf build" {
				t.Fatalf("permission request %+v", req)
			}
			if want := []string{"allow", "allow-always", "deny"}; !slices.Equal(req.Choices, want) {
				t.Fatalf("choices %q, want %q", req.Choices, want)
			}
			if st := r.replay(t, ref); st.CurrentInputRequestID != "" && st.CurrentInputRequestID != "call-1" {
				t.Fatalf("current input request %q", st.CurrentInputRequestID)
			}
			ack := r.send(t, ref, "answer", map[string]string{"requestId": "call-1", "text": c.answer})
			if ack.Delivery != eventstore.DeliveryDelivered {
				t.Fatalf("answer: %+v", ack)
			}
			r.waitTurns(t, ref, 1)
			if got := messages(r, t, ref); !slices.Equal(got, []string{"permission: " + c.chosen}) {
				t.Fatalf("messages %q, want the agent to report option %q", got, c.chosen)
			}
			// An answer to no open request fails its delivery.
			if ack := r.send(t, ref, "answer", map[string]string{"requestId": "call-9", "text": "allow"}); ack.Delivery != eventstore.DeliveryFailed {
				t.Fatalf("answer to no request: %+v, want failed", ack)
			}
			r.rt.Stop(context.Background(), ref.AgentExecutionID)
			r.wait(t, ref)
		})
	}
}

func TestACPInterruptCancelsTheTurn(t *testing.T) {
	r := newRig(t, 2*time.Second)
	ref := r.launchACP(t, t.TempDir(), eventstore.ShapeConversation, "say working\nwait\nsay never")
	waitFor(t, func() bool {
		for _, rec := range r.records(t, ref) {
			if d, ok := rec.(*eventstore.MessageDelivery); ok && d.Status == eventstore.DeliveryDelivered {
				return true
			}
		}
		return false
	})
	if ack := r.send(t, ref, "interrupt", map[string]string{"text": ""}); ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("interrupt: %+v", ack)
	}
	r.waitTurns(t, ref, 1)
	if got := messages(r, t, ref); !slices.Equal(got, []string{"working"}) {
		t.Fatalf("messages %q, want the text before the cancel only", got)
	}
	st := r.replay(t, ref)
	if st.Lifecycle != eventstore.LifecycleRunning {
		t.Fatalf("lifecycle %s after a cancelled turn, want running", st.Lifecycle)
	}
	r.rt.Stop(context.Background(), ref.AgentExecutionID)
	r.wait(t, ref)
}

func TestACPBadInputIsDiagnosed(t *testing.T) {
	r := newRig(t, 2*time.Second)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"say a",
		"malformed",
		"foreign",
		"unknown",
		"read " + filepath.Join(dir, "in.txt"),
		"read " + outside,
		"write " + filepath.Join(dir, "sub", "out.txt") + " hello",
		"write " + filepath.Join(dir, "..", "escape.txt") + " no",
		"say b",
	}, "\n")
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, script)
	r.waitTurns(t, ref, 1)
	msgs := messages(r, t, ref)
	if len(msgs) != 6 || msgs[0] != "a" || msgs[1] != "read: inside" || !strings.HasPrefix(msgs[2], "read error") ||
		msgs[3] != "wrote "+filepath.Join(dir, "sub", "out.txt") || !strings.HasPrefix(msgs[4], "write error") || msgs[5] != "b" {
		t.Fatalf("messages %q", msgs)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "sub", "out.txt")); err != nil || string(data) != "hello" {
		t.Fatalf("written file: %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.txt")); err == nil {
		t.Fatal("a write outside the working directory happened")
	}
	codes := diagnosticCodes(r, t, ref)
	for _, want := range []string{"malformed-line", "bad-event", "unknown-event", "acp-refused"} {
		if !slices.Contains(codes, want) {
			t.Errorf("diagnostics %q lack %s", codes, want)
		}
	}
	var targets []string
	for _, rec := range r.records(t, ref) {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok && a.CurrentTarget != nil && a.ToolCall == nil {
			targets = append(targets, string(a.Activity)+" "+a.CurrentTarget.Path)
		}
	}
	if want := "editing " + filepath.Join(dir, "sub", "out.txt"); !slices.Contains(targets, want) {
		t.Errorf("file activity %q lacks %q", targets, want)
	}
	if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleRunning {
		t.Fatalf("lifecycle %s, want running after bad input", st.Lifecycle)
	}
	r.rt.Stop(context.Background(), ref.AgentExecutionID)
	r.wait(t, ref)
}

func TestACPHandshakeWithoutAnswer(t *testing.T) {
	defer runtime.SetACPTimeout(time.Second)()
	r := newRig(t, 2*time.Second)
	ref := r.launchACP(t, t.TempDir(), eventstore.ShapeConversation, "say hi", "-silent-session")
	var d *eventstore.MessageDelivery
	waitFor(t, func() bool {
		for _, rec := range r.records(t, ref) {
			if x, ok := rec.(*eventstore.MessageDelivery); ok {
				d = x
				return true
			}
		}
		return false
	})
	if d.Status != eventstore.DeliveryFailed || !strings.Contains(d.Reason, "session/new") || !strings.Contains(d.Reason, "no answer") {
		t.Fatalf("delivery %+v, want failed for the unanswered session/new", d)
	}
	if codes := diagnosticCodes(r, t, ref); !slices.Contains(codes, "acp-handshake") {
		t.Fatalf("diagnostics %q lack acp-handshake", codes)
	}
	r.rt.Stop(context.Background(), ref.AgentExecutionID)
	r.wait(t, ref)
}

func TestACPPromptErrorAndCrash(t *testing.T) {
	r := newRig(t, 2*time.Second)
	t.Run("error", func(t *testing.T) {
		ref := r.launchACP(t, t.TempDir(), eventstore.ShapeConversation, "say partial\nerror")
		r.waitTurns(t, ref, 1)
		codes := diagnosticCodes(r, t, ref)
		if !slices.Contains(codes, "acp-prompt") || !slices.Contains(codes, "provider-error") {
			t.Fatalf("diagnostics %q, want acp-prompt and provider-error", codes)
		}
		if got := messages(r, t, ref); !slices.Equal(got, []string{"partial"}) {
			t.Fatalf("messages %q", got)
		}
		r.rt.Stop(context.Background(), ref.AgentExecutionID)
		r.wait(t, ref)
	})
	t.Run("crash mid-turn", func(t *testing.T) {
		ref := r.launchACP(t, t.TempDir(), eventstore.ShapeConversation, "say partial\ncrash")
		st := r.wait(t, ref)
		if st.Lifecycle != eventstore.LifecycleFailed || !strings.Contains(st.LifecycleReason, "exit status 3") {
			t.Fatalf("lifecycle %s (%s), want failed with exit status 3", st.Lifecycle, st.LifecycleReason)
		}
		if got := messages(r, t, ref); !slices.Equal(got, []string{"partial"}) {
			t.Fatalf("messages %q, want the text before the crash", got)
		}
	})
	t.Run("one-shot", func(t *testing.T) {
		ref := r.launchACP(t, t.TempDir(), eventstore.ShapeOneShot, "say only")
		st := r.wait(t, ref)
		if st.Lifecycle != eventstore.LifecycleCompleted {
			t.Fatalf("lifecycle %s (%s), want completed; the agent's stderr:\n%s", st.Lifecycle, st.LifecycleReason, r.stderr(t, ref))
		}
	})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestACPRefusesInteractivePostures: an ACP agent's stdin and stdout carry
// the protocol, so a terminal lane cannot work; launch says so and starts
// nothing.
func TestACPRefusesInteractivePostures(t *testing.T) {
	r := newRig(t, time.Second)
	for _, posture := range []eventstore.Posture{eventstore.PostureStructuredInteractive, eventstore.PostureNativeTerminal} {
		t.Run(string(posture), func(t *testing.T) {
			_, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-acp-tty",
				Agent: "acp", Posture: posture, Command: []string{fixtures.ACPAgentBinary(t)}, Prompt: "say hi"})
			if !errors.Is(err, runtime.ErrBadLaunch) || !strings.Contains(err.Error(), "headless only") {
				t.Fatalf("launch error %v, want ErrBadLaunch saying an ACP agent runs headless only", err)
			}
		})
	}
}

// TestACPReadOfAMissingFile answers with ACP's resource-not-found error
// (-32002), which agents take as "no such file" (Gemini CLI then writes a
// new file), and is no refusal: no diagnostic.
func TestACPReadOfAMissingFile(t *testing.T) {
	r := newRig(t, time.Second)
	dir := t.TempDir()
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, "read "+filepath.Join(dir, "missing.txt"))
	r.waitTurns(t, ref, 1)
	if msgs := messages(r, t, ref); len(msgs) != 1 || !strings.Contains(msgs[0], "-32002") || !strings.Contains(msgs[0], "Resource not found") {
		t.Fatalf("messages %q, want the agent to report a -32002 Resource not found error", msgs)
	}
	if codes := diagnosticCodes(r, t, ref); slices.Contains(codes, "acp-refused") {
		t.Errorf("diagnostics %q, want no acp-refused for a file that does not exist", codes)
	}
	r.rt.Stop(context.Background(), ref.AgentExecutionID)
	r.wait(t, ref)
}

// TestACPTerminalRunsInTheWorkingDirectory: an agent's terminal/create
// runs its command in the working directory (or a directory inside it),
// journaled as executing activity; kill ends it; a directory outside is
// refused.
func TestACPTerminalRunsInTheWorkingDirectory(t *testing.T) {
	r := newRig(t, 2*time.Second)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "s.sh"), []byte("pwd; echo to stderr >&2; exit 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"run pwd",
		"runin " + filepath.Join(dir, "sub") + " sh s.sh",
		"runkill sleep 60",
		"runin " + t.TempDir() + " pwd",
		"runline echo one && echo two | tr a-z A-Z",
		"say done",
	}, "\n")
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, script)
	r.waitTurns(t, ref, 1)
	msgs := messages(r, t, ref)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("ran: exit 0: %q", real+"\n"),
		fmt.Sprintf("ran: exit 4: %q", filepath.Join(real, "sub")+"\nto stderr\n"),
	}
	if len(msgs) != 6 || msgs[0] != want[0] || msgs[1] != want[1] || !strings.HasPrefix(msgs[2], "ran: signal killed") ||
		!strings.Contains(msgs[3], "terminal error") || msgs[4] != fmt.Sprintf("ran line: %q", "one\nTWO\n") || msgs[5] != "done" {
		t.Fatalf("messages %q, want %q, a killed command, a refused directory, a command line and done", msgs, want)
	}
	var commands []string
	for _, rec := range r.records(t, ref) {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok && a.Activity == eventstore.ActivityExecuting && a.CurrentTarget != nil && a.ToolCall == nil {
			commands = append(commands, a.CurrentTarget.Label)
		}
	}
	if !slices.Contains(commands, "pwd") || !slices.Contains(commands, "sleep 60") {
		t.Errorf("executing activity %q, want the commands run", commands)
	}
	if !slices.Contains(diagnosticCodes(r, t, ref), "acp-refused") {
		t.Errorf("the refused directory left no acp-refused diagnostic")
	}
	r.rt.Stop(context.Background(), ref.AgentExecutionID)
	r.wait(t, ref)
}
