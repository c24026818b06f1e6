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
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/runtime/acp"
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
		{ID: "t2", Name: "Run t2", Status: eventstore.ToolCallFailed, Error: "boom: t2 failed", Output: "boom: t2 failed"},
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

// acpParent runs one turn of the scripted ACP agent keeping its sessions
// in sessions ("say answer one"), stops it, and returns it with the ACP
// session its messages name.
func acpParent(t *testing.T, r *rig, dir string, args ...string) (eventstore.Reference, string) {
	t.Helper()
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, "say answer one", args...)
	r.waitTurns(t, ref, 1)
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("parent lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	return ref, messageSession(t, r, ref, "answer one")
}

// messageSession is the ACP session named by the agent message with text.
func messageSession(t *testing.T, r *rig, ref eventstore.Reference, text string) string {
	t.Helper()
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if m, ok := o.Signal.Payload.(*eventstore.MessageSignal); ok && m.Text == text && o.Native != nil {
				return o.Native.SessionID
			}
		}
	}
	t.Fatalf("%s has no message %q with a session", ref.AgentExecutionID, text)
	return ""
}

func statusPhases(r *rig, t *testing.T, ref eventstore.Reference) []string {
	var out []string
	for _, s := range observed[*eventstore.StatusSignal](r, t, ref) {
		out = append(out, s.Phase)
	}
	return out
}

func TestACPResumeLoadsTheSession(t *testing.T) {
	r := newRig(t, 2*time.Second)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, session := acpParent(t, r, dir, "-sessions", sessions)

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v, want history native", h.Resumes)
	}
	// The agent loaded the parent's session: it holds the parent's prompt
	// and answer, and got nothing retold.
	if got, want := messages(r, t, ref), []string{"history: held 2, retold 0"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q (the replayed %q is the parent's, not journaled again)", got, want, "answer one")
	}
	if got := firstPrompt(t, r, ref); got != "history" {
		t.Fatalf("first prompt %q, want the prompt alone", got)
	}
	loaded := observed[*eventstore.StatusSignal](r, t, ref)
	if len(loaded) != 1 || loaded[0].Phase != acp.PhaseSessionLoaded || !strings.Contains(loaded[0].Summary, session) ||
		!strings.Contains(loaded[0].Summary, "2 updates") {
		t.Fatalf("status observations %+v, want one %s naming %s and its 2 replayed updates", loaded, acp.PhaseSessionLoaded, session)
	}
	if got := messageSession(t, r, ref, "history: held 2, retold 0"); got != session {
		t.Fatalf("the resumed run's session %q, want the loaded %q", got, session)
	}
	if codes := diagnosticCodes(r, t, ref); len(codes) != 0 {
		t.Fatalf("diagnostics %q, want none", codes)
	}

	// The next prompt continues the same session.
	r.send(t, ref, "prompt", map[string]string{"text": "history"})
	r.waitTurns(t, ref, 2)
	if got := messages(r, t, ref); len(got) != 2 || got[1] != "history: held 4, retold 0" {
		t.Fatalf("messages after the second prompt %q, want the session to hold 4", got)
	}
	if err := r.rt.Stop(ctx, ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	if files, _ := filepath.Glob(filepath.Join(sessions, "*.json")); len(files) != 1 {
		t.Fatalf("the agent kept sessions %q, want the one session continued", files)
	}
}

func TestACPResumeWithoutLoadSessionIsReconstructed(t *testing.T) {
	r := newRig(t, 2*time.Second)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, session := acpParent(t, r, dir, "-sessions", sessions, "-no-load-session")

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	// A new session got the parent's prompt and answer retold.
	if got, want := messages(r, t, ref), []string{"history: held 0, retold 2"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if got := messageSession(t, r, ref, "history: held 0, retold 2"); got == session {
		t.Fatalf("the resumed run's session is the parent's %q, want a new one", got)
	}
	// The header, written before the handshake, says native; the record
	// right after the handshake says what happened.
	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v", h.Resumes)
	}
	st := observed[*eventstore.StatusSignal](r, t, ref)
	if len(st) != 1 || st[0].Phase != acp.PhaseHistoryReconstructed || !strings.Contains(st[0].Summary, session) ||
		!strings.Contains(st[0].Summary, "does not offer session/load") {
		t.Fatalf("status observations %+v, want one %s for %s", st, acp.PhaseHistoryReconstructed, session)
	}
	if err := r.rt.Stop(ctx, ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	files, _ := filepath.Glob(filepath.Join(sessions, "*.json"))
	if len(files) != 2 {
		t.Fatalf("the agent kept sessions %q, want the parent's and a new one", files)
	}
	// The parent's session is as it was.
	b, err := os.ReadFile(filepath.Join(sessions, session+".json"))
	if err != nil || strings.Contains(string(b), "history") {
		t.Fatalf("the parent's session %s: %s %v, want it untouched", session, b, err)
	}
}

func TestACPForkStaysReconstructed(t *testing.T) {
	r, _ := newForkRig(t)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, _ := acpParent(t, r, dir, "-sessions", sessions)
	at := seqOfMessage(t, r, parent, "answer one")

	ref, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	if h := header(t, r, ref); h.ForkedFrom == nil || h.ForkedFrom.History != eventstore.HistoryReconstructed {
		t.Fatalf("header forkedFrom %+v, want history reconstructed", h.ForkedFrom)
	}
	if got, want := messages(r, t, ref), []string{"history: held 0, retold 2"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if p := statusPhases(r, t, ref); len(p) != 0 {
		t.Fatalf("status phases %q, want none (a fork never loads a session)", p)
	}
	r.rt.Stop(ctx, ref.AgentExecutionID)
	r.wait(t, ref)
}

// TestACPRealCopilot runs the real Copilot CLI in ACP mode (copilot --acp,
// the version fixtures/realagent pins) through the copilot-acp adapter,
// against the scripted model server: the model's streamed text is one
// message in the journal, and the turn ends.
func TestACPRealCopilot(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17}
	r, ref, _ := sayHello(t, "copilot-acp", "copilot", realagent.CopilotEnv, usage)
	// Copilot CLI's prompt response carries the turn's usage: exactly what
	// the model server counted.
	r.checkUsage(t, ref, usage)
	// The ACP session id is captured like the other provider-native ids.
	r.checkSessionIDs(t, ref)
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
}

func dump(r *rig, t *testing.T, ref eventstore.Reference) string {
	out := ""
	for _, rec := range r.records(t, ref) {
		out += string(rec.Kind()) + " " + describeRecord(rec) + "\n"
	}
	return out
}

func describeRecord(rec eventstore.Record) string {
	switch x := rec.(type) {
	case *eventstore.Observation:
		// An observation without a signal carries raw text (or a payload).
		if x.Signal == nil {
			return x.RawText
		}
		return string(x.Signal.Type) + " " + jsonOf(x.Signal.Payload)
	case *eventstore.MessageDelivery:
		return string(x.Status) + " " + x.Reason
	case *eventstore.StateChanged:
		return string(x.Lifecycle) + " " + x.Reason
	}
	return ""
}

// awaitReal waits, at most two minutes, until cond holds of the journal,
// failing the test when the execution stops running first.
func (r *rig) awaitReal(t *testing.T, ref eventstore.Reference, srv *modelserver.Server, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 2 minutes; requests:\n%s\nrecords:\n%s", what, requestsOf(srv), dump(r, t, ref))
		}
		if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleRunning {
			t.Fatalf("lifecycle %s (%s) before %s; requests:\n%s\nrecords:\n%s", st.Lifecycle, st.LifecycleReason, what, requestsOf(srv), dump(r, t, ref))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// helloText is the model's one answer in sayHello's script.
const helloText = "Hello from the scripted model over ACP. All done."

// sayHello runs the real agent bin through agent's preset, with the
// environment env makes for the model server, on a script of one turn
// with usage: it prompts "Say hello", waits for the end of the turn and
// checks that the model's text is one message.
func sayHello(t *testing.T, agent, bin string, env func(testing.TB, string) []string, usage modelserver.Usage) (*rig, eventstore.Reference, *modelserver.Server) {
	t.Helper()
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: helloText, Chunks: 5, Usage: usage}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchReal(t, agent, bin, env(t, srv.URL()), t.TempDir(), "Say hello")
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })
	r.checkOneMessage(t, ref, srv, helloText)
	return r, ref, srv
}

// checkHelloRequest fails the test unless the model server had one
// conversation request, one that ok accepts (want says which), and it holds
// sayHello's prompt.
func checkHelloRequest(t *testing.T, srv *modelserver.Server, want string, ok func(modelserver.Request) bool) {
	t.Helper()
	conv := srv.Conversation()
	if len(conv) != 1 || !ok(conv[0]) {
		t.Fatalf("conversation requests:\n%s\nwant one %s", requestsOf(srv), want)
	}
	checkPrompted(t, conv[0], "Say hello")
}

// checkOneMessage fails the test unless the execution's messages are
// the model's text, as one message.
func (r *rig) checkOneMessage(t *testing.T, ref eventstore.Reference, srv *modelserver.Server, text string) {
	t.Helper()
	if got := messages(r, t, ref); len(got) != 1 || got[0] != text {
		t.Fatalf("messages %q, want the model's text as one message; requests:\n%s\nrecords:\n%s", got, requestsOf(srv), dump(r, t, ref))
	}
}

// checkSessionIDs fails the test when a message observation lacks the ACP
// session id.
func (r *rig) checkSessionIDs(t *testing.T, ref eventstore.Reference) {
	t.Helper()
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
}

// checkUsage fails the test unless the execution's usage is exactly what
// the model server counted.
func (r *rig) checkUsage(t *testing.T, ref eventstore.Reference, usage modelserver.Usage) {
	t.Helper()
	if u := r.replay(t, ref).Usage; u.InputTokens == nil || *u.InputTokens != usage.InputTokens || u.OutputTokens == nil || *u.OutputTokens != usage.OutputTokens {
		t.Errorf("usage %s, want %d in and %d out; records:\n%s", jsonOf(u), usage.InputTokens, usage.OutputTokens, dump(r, t, ref))
	}
}

// checkNoUsage fails the test when the execution has usage: an agent
// that reports none, for why, has none journaled rather than a guess.
func (r *rig) checkNoUsage(t *testing.T, ref eventstore.Reference, why string) {
	t.Helper()
	if u := r.replay(t, ref).Usage; u.InputTokens != nil || u.OutputTokens != nil {
		t.Errorf("usage %s, want none: %s; records:\n%s", jsonOf(u), why, dump(r, t, ref))
	}
}

// checkPrompted fails the test unless the last user text of the model
// request holds the prompt.
func checkPrompted(t *testing.T, req modelserver.Request, prompt string) {
	t.Helper()
	if users := req.UserTexts(); len(users) == 0 || !strings.Contains(users[len(users)-1], prompt) {
		t.Errorf("last user text %q, want the prompt", users)
	}
}

// awaitPermission waits for the agent's first permission request, failing
// the test when the turn ends without one, and checks that it is the
// request id and offers allow and deny.
func (r *rig) awaitPermission(t *testing.T, ref eventstore.Reference, srv *modelserver.Server, id string) *eventstore.NeedsInputSignal {
	t.Helper()
	r.awaitReal(t, ref, srv, "permission request", func() bool {
		if r.turnsEnded(t, ref) > 0 {
			t.Fatalf("the turn ended before a permission request; requests:\n%s\nrecords:\n%s", requestsOf(srv), dump(r, t, ref))
		}
		return len(observed[*eventstore.NeedsInputSignal](r, t, ref)) > 0
	})
	req := observed[*eventstore.NeedsInputSignal](r, t, ref)[0]
	if req.RequestID != id || req.Kind != string(eventstore.InputPermission) ||
		!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
		t.Fatalf("permission request %s, want one for %s offering allow and deny", jsonOf(req), id)
	}
	return req
}

// answerReal answers the permission request req through the journal and
// waits for the end of the turn.
func (r *rig) answerReal(t *testing.T, ref eventstore.Reference, srv *modelserver.Server, req *eventstore.NeedsInputSignal, answer string) {
	t.Helper()
	if ack := r.send(t, ref, "answer", map[string]string{"requestId": req.RequestID, "text": answer}); ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer: %+v", ack)
	}
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })
}

// playedOut returns the model server's conversation requests, failing the
// test unless there are n of them and the script played to its end
// without a request past it.
func playedOut(t *testing.T, srv *modelserver.Server, n int) []modelserver.Request {
	t.Helper()
	conv := srv.Conversation()
	if len(conv) != n || srv.Exhausted() {
		t.Fatalf("conversation requests:\n%s\nwant %d, the script played to its end", requestsOf(srv), n)
	}
	return conv
}

func requestsOf(srv *modelserver.Server) string {
	var b strings.Builder
	for _, req := range srv.Requests() {
		b.WriteString(req.Method + " " + req.Path + "?" + req.Query + " " + string(req.Kind) + " " + req.Reason + req.Error + "\n")
	}
	return b.String()
}

// TestACPRealGemini runs the real Gemini CLI in ACP mode against the
// scripted model server over the Gemini API: the model's streamed text is
// one message in the journal, the turn's usage is the model server's
// counts exactly, and the ACP session id is on the observations.
func TestACPRealGemini(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17}
	r, ref, srv := sayHello(t, "gemini", "gemini", realagent.GeminiEnv, usage)
	checkHelloRequest(t, srv, "streamed Gemini request", func(req modelserver.Request) bool { return req.API == modelserver.APIGemini && req.Stream })
	r.checkUsage(t, ref, usage)
	r.checkSessionIDs(t, ref)
}

// TestACPRealGeminiTools has the model read a file of the working
// directory, then overwrite another: the read runs at once; the write waits
// for a permission request answered through the journal, and goes through
// the client's fs/write_text_file when allowed. (Gemini CLI 0.61.0 cannot
// create a new file through the client: it takes no error answer to its
// existence check as "not found", so the file is there beforehand.)
func TestACPRealGeminiTools(t *testing.T) {
	for _, tt := range []struct {
		answer, content string
		denied          bool
	}{
		{eventstore.AnswerAllow, "written by the model\n", false},
		{eventstore.AnswerDeny, "old\n", true},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
				{ToolCalls: []modelserver.ToolCall{{ID: "call_read", Name: "read_file", Input: map[string]any{"file_path": "notes.txt"}}},
					Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: "I will write it down.", ToolCalls: []modelserver.ToolCall{{ID: "call_write", Name: "write_file",
					Input: map[string]any{"file_path": "out.txt", "content": "written by the model\n"}}},
					Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 20}},
				{Text: "Done.", Usage: modelserver.Usage{InputTokens: 300, OutputTokens: 3}},
			}})
			dir := t.TempDir()
			fixtures.WriteFiles(t, dir, map[string]string{"notes.txt": "the secret is 42\n", "out.txt": "old\n"})
			r := newRig(t, 5*time.Second)
			ref := r.launchReal(t, "gemini", "gemini", realagent.GeminiEnv(t, srv.URL()), dir, "Copy the notes")
			// Gemini CLI names the call after the tool and the model's call id.
			req := r.awaitPermission(t, ref, srv, "write_file__call_write")
			if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "old\n" {
				t.Fatalf("out.txt is %q before the answer, want it untouched", b)
			}
			r.answerReal(t, ref, srv, req, tt.answer)

			if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != tt.content {
				t.Errorf("out.txt is %q, want %q", b, tt.content)
			}
			if got, want := messages(r, t, ref), []string{"I will write it down.", "Done."}; !slices.Equal(got, want) {
				t.Errorf("messages %q, want %q", got, want)
			}
			var calls []eventstore.ToolCall
			reviewed, edited := false, false
			for _, rec := range r.records(t, ref) {
				a, ok := rec.(*eventstore.ActivityUpdated)
				if !ok {
					continue
				}
				if a.ToolCall != nil && a.ToolCall.ID == "read_file__call_read" {
					calls = append(calls, *a.ToolCall)
				}
				if a.CurrentTarget != nil && a.CurrentTarget.Path == filepath.Join(dir, "notes.txt") && a.Activity == eventstore.ActivityReviewing {
					reviewed = true
				}
				if a.CurrentTarget != nil && a.CurrentTarget.Path == filepath.Join(dir, "out.txt") && a.Activity == eventstore.ActivityEditing {
					edited = true
				}
			}
			if len(calls) != 2 || calls[0].Status != eventstore.ToolCallStarted || calls[1].Status != eventstore.ToolCallSucceeded || !reviewed {
				t.Errorf("read_file calls %+v (notes.txt reviewed: %v), want started then succeeded, reviewing notes.txt", calls, reviewed)
			}
			if edited == tt.denied {
				t.Errorf("out.txt edited through the client: %v, want %v", edited, !tt.denied)
			}

			conv := playedOut(t, srv, 3)
			if res, ok := conv[1].ToolResult("call_read"); !ok || res.IsError || res.Content != "the secret is 42\n" {
				t.Errorf("read_file result %+v (found %v), want the file's text", res, ok)
			}
			if res, ok := conv[2].ToolResult("call_write"); !ok || res.IsError != tt.denied {
				t.Errorf("write_file result %+v (found %v), want is-error %v", res, ok, tt.denied)
			}
			// The turn's usage is the sum of its three model calls.
			if u := r.replay(t, ref).Usage; u.InputTokens == nil || *u.InputTokens != 600 || u.OutputTokens == nil || *u.OutputTokens != 33 {
				t.Errorf("usage %s, want 600 in and 33 out", jsonOf(u))
			}
		})
	}
}

// TestACPRealGeminiResume resumes a real Gemini CLI execution: Gemini CLI
// offers loadSession, so the resumed run sends session/load; the history
// it replays is not journaled again, a failed load falls back to a
// retelling recorded as such, and the model's next request holds the
// earlier turn.
func TestACPRealGeminiResume(t *testing.T) {
	const (
		first  = "Remember the word pineapple."
		noted  = "Noted: the word is pineapple."
		second = "Which word did I ask you to remember?"
		answer = "You asked me to remember pineapple."
	)
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: noted, Usage: modelserver.Usage{InputTokens: 50, OutputTokens: 7}},
		{Text: answer, Usage: modelserver.Usage{InputTokens: 80, OutputTokens: 8}},
	}})
	r := newRig(t, 5*time.Second)
	ctx := context.Background()
	// The same home for both runs: Gemini CLI keeps its sessions there.
	env := realagent.GeminiEnv(t, srv.URL())
	dir := t.TempDir()
	parent, err := r.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-gemini",
		Agent: "gemini", Command: []string{realagent.Bin(t, "gemini")}, Env: env, Prompt: first, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.awaitReal(t, parent, srv, "end of the first turn", func() bool { return r.turnsEnded(t, parent) >= 1 })
	// Gemini CLI writes its session file after the turn's end: stopped
	// before, it has no session to load.
	r.awaitReal(t, parent, srv, "Gemini CLI's session file", func() bool {
		files, _ := filepath.Glob(filepath.Join(homeOf(env), ".gemini", "tmp", "*", "chats", "session-*"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), noted) {
				return true
			}
		}
		return false
	})
	if err := r.rt.Stop(ctx, parent.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, parent)
	session := messageSession(t, r, parent, noted)

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: second, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.rt.Stop(context.Background(), ref.AgentExecutionID)
		r.wait(t, ref)
	})
	r.awaitReal(t, ref, srv, "end of the resumed turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v, want history native", h.Resumes)
	}
	if got := messages(r, t, ref); !slices.Equal(got, []string{answer}) {
		t.Fatalf("messages %q, want only the new answer (the replayed %q is the parent's); records:\n%s", got, noted, dump(r, t, ref))
	}
	// Gemini CLI 0.61.0 offers loadSession, but a new process's
	// session/load first rewrites the session's record with a fresh
	// context and then looks it up: mostly it finds nothing resumable
	// ("No previous sessions found for this project") and the run falls
	// back to a retelling, recorded so; when the lookup wins, it loads the
	// session and replays it after its answer.
	st := observed[*eventstore.StatusSignal](r, t, ref)
	if len(st) != 1 {
		t.Fatalf("status observations %+v, want one; records:\n%s", st, dump(r, t, ref))
	}
	switch st[0].Phase {
	case acp.PhaseSessionLoaded:
		if got := messageSession(t, r, ref, answer); got != session {
			t.Fatalf("the resumed run's session %q, want the loaded %q", got, session)
		}
	case acp.PhaseHistoryReconstructed:
		if !strings.Contains(st[0].Summary, session) || !slices.Contains(diagnosticCodes(r, t, ref), "acp-load") {
			t.Fatalf("fallback status %+v without an acp-load diagnostic; records:\n%s", st[0], dump(r, t, ref))
		}
	default:
		t.Fatalf("status phase %q", st[0].Phase)
	}
	conv := srv.Conversation()
	if len(conv) != 2 {
		t.Fatalf("conversation requests:\n%s\nwant two", requestsOf(srv))
	}
	// Either way the model's second request holds the earlier turn, then
	// the new prompt: loaded as the session, or retold.
	raw := string(conv[1].Raw)
	if !inOrder(raw, first, noted, second) {
		t.Fatalf("the second model request does not hold the earlier turn, then the new prompt:\n%s", raw)
	}
}

// homeOf is the HOME an environment sets.
func homeOf(env []string) string {
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}

// launchReal runs the real agent bin (the version fixtures/realagent pins)
// through agent's preset in dir, with env; it is stopped when the test ends.
func (r *rig) launchReal(t *testing.T, agent, bin string, env []string, dir, prompt string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-" + agent,
		Agent: agent, Command: []string{realagent.Bin(t, bin)}, Env: env, Prompt: prompt, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.rt.Stop(context.Background(), ref.AgentExecutionID)
		r.wait(t, ref)
	})
	return ref
}

// TestACPRealClaudeCodeACP runs Claude Code through its ACP adapter
// (claude-code-acp) against the scripted model server over the Anthropic
// Messages API: the model's streamed text is one message in the journal,
// no usage is journaled since the adapter reports none, and the ACP
// session id is on the observations.
func TestACPRealClaudeCodeACP(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17}
	r, ref, srv := sayHello(t, "claude-code-acp", "claude-code-acp", realagent.ClaudeEnv, usage)
	checkHelloRequest(t, srv, "streamed Anthropic request", func(req modelserver.Request) bool { return req.API == modelserver.APIMessages && req.Stream })
	// claude-code-acp 0.16.2 reports no usage: neither in session/prompt's
	// response nor as a usage_update. None is journaled, rather than a guess.
	r.checkNoUsage(t, ref, "the adapter reports none")
	r.checkSessionIDs(t, ref)
}

// TestACPRealClaudeCodeACPPermission has the model run a command through
// the adapter's Bash tool: the adapter asks for permission with
// session/request_permission, the answer goes through the journal, and the
// command then runs in the client's terminal, in the working directory.
// The adapter sends the model's whole command line as terminal/create's
// command, with no arguments, and the client runs that as one program: so
// the model runs pwd, a command without arguments.
func TestACPRealClaudeCodeACPPermission(t *testing.T) {
	const text = "The command printed the working directory."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will run a command.", ToolCalls: []modelserver.ToolCall{{ID: "toolu_bash_1", Name: "mcp__acp__Bash",
			Input: map[string]any{"command": "echo from-the-terminal && pwd", "description": "Print the working directory", "timeout": 20000}}},
			Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30}},
		{Text: text, Chunks: 2, Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 12}},
	}})
	dir := t.TempDir()
	r := newRig(t, 5*time.Second)
	ref := r.launchReal(t, "claude-code-acp", "claude-code-acp", realagent.ClaudeEnv(t, srv.URL()), dir, "Run the command")
	req := r.awaitPermission(t, ref, srv, "toolu_bash_1")
	if n := len(srv.Conversation()); n != 1 {
		t.Fatalf("%d conversation requests before the answer, want 1: the tool's result must wait for it", n)
	}
	r.answerReal(t, ref, srv, req, eventstore.AnswerAllow)

	if got, want := messages(r, t, ref), []string{"I will run a command.", text}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q; records:\n%s", got, want, dump(r, t, ref))
	}
	conv := playedOut(t, srv, 2)
	// The adapter sends the model's shell line as terminal/create's
	// command with no args: the client runs it through sh, in the
	// working directory, and journals it as executing.
	if res, ok := conv[1].ToolResult("toolu_bash_1"); !ok || res.IsError || !strings.Contains(res.Content, "from-the-terminal") || !strings.Contains(res.Content, dir) {
		t.Errorf("tool result %+v (found %v), want the shell line's output, ending in the working directory %s", res, ok, dir)
	}
	executed := false
	for _, rec := range r.records(t, ref) {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok && a.Activity == eventstore.ActivityExecuting && a.ToolCall == nil &&
			a.CurrentTarget != nil && strings.Contains(a.CurrentTarget.Label, "from-the-terminal") {
			executed = true
		}
	}
	if !executed {
		t.Errorf("no executing activity for the terminal command; records:\n%s", dump(r, t, ref))
	}
	var last *eventstore.ToolCall
	for _, rec := range r.records(t, ref) {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok && a.ToolCall != nil && a.ToolCall.ID == "toolu_bash_1" {
			last = a.ToolCall
		}
	}
	if last == nil || last.Status != eventstore.ToolCallSucceeded {
		t.Errorf("last state of the tool call %+v, want succeeded", last)
	}
}

// TestACPRealCodexACP runs Codex through its ACP adapter (codex-acp)
// against the scripted model server over the OpenAI Responses API, with
// the model and provider CodexEnv's config.toml names: the model's streamed
// text is one message in the journal, no usage is journaled since the
// adapter reports none per turn, and the ACP session id is on the
// observations.
func TestACPRealCodexACP(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17, CacheReadInputTokens: 30}
	r, ref, srv := sayHello(t, "codex-acp", "codex-acp", realagent.CodexEnv, usage)
	checkHelloRequest(t, srv, "Responses request for "+realagent.CodexModel, func(req modelserver.Request) bool {
		return req.API == modelserver.APIResponses && req.Model == realagent.CodexModel
	})
	// codex-acp 0.16.0 answers session/prompt with a stop reason only; its
	// usage_update is the context window's fill (used 137 of 258400 here),
	// not the turn's usage. None is journaled, rather than a guess.
	r.checkNoUsage(t, ref, "the adapter reports none per turn")
	r.checkSessionIDs(t, ref)
}

// TestACPRealCodexACPPermission has the model run a command that asks to
// leave the sandbox: codex-acp asks for permission with
// session/request_permission and the answer goes through the journal.
// Allowed, the command runs in the working directory and its output goes
// back to the model.
func TestACPRealCodexACPPermission(t *testing.T) {
	const text = "The file is made."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{ToolCalls: []modelserver.ToolCall{{ID: "call_touch", Name: "exec_command", Input: map[string]any{
			"cmd": "touch made-by-tool && echo hello-from-tool", "sandbox_permissions": "require_escalated", "justification": "Make the file"}}},
			Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30}},
		{Text: text, Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 12}},
	}})
	dir := t.TempDir()
	r := newRig(t, 5*time.Second)
	ref := r.launchReal(t, "codex-acp", "codex-acp", realagent.CodexEnv(t, srv.URL()), dir, "Make the file")
	// codex-acp names the request after the model's call id.
	req := r.awaitPermission(t, ref, srv, "call_touch")
	if _, err := os.Stat(filepath.Join(dir, "made-by-tool")); err == nil {
		t.Fatal("the command ran before the answer")
	}
	r.answerReal(t, ref, srv, req, eventstore.AnswerAllow)

	if _, err := os.Stat(filepath.Join(dir, "made-by-tool")); err != nil {
		t.Errorf("the command did not run in the working directory: %v", err)
	}
	if got, want := messages(r, t, ref), []string{text}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q; records:\n%s", got, want, dump(r, t, ref))
	}
	conv := playedOut(t, srv, 2)
	if res, ok := conv[1].ToolResult("call_touch"); !ok || res.IsError || !strings.Contains(res.Content, "hello-from-tool") {
		t.Errorf("tool result %+v (found %v), want the command's output", res, ok)
	}
}
