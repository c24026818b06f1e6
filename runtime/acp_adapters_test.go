package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// launchAdapter runs the real ACP adapter bin (as fixtures/realagent pins
// it) through the preset of the same name in dir, with env, against srv.
func (r *rig) launchAdapter(t *testing.T, bin string, env []string, dir, prompt string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-" + bin,
		Agent: bin, Command: []string{realagent.Bin(t, bin)}, Env: env, Prompt: prompt, Dir: dir})
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
	const text = "Hello from the scripted model over ACP. All done."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 5, Usage: usage}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchAdapter(t, "claude-code-acp", realagent.ClaudeEnv(t, srv.URL()), t.TempDir(), "Say hello")
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if got := messages(r, t, ref); len(got) != 1 || got[0] != text {
		t.Fatalf("messages %q, want the model's text as one message; requests:\n%s\nrecords:\n%s", got, requestsOf(srv), dump(r, t, ref))
	}
	conv := srv.Conversation()
	if len(conv) != 1 || conv[0].API != modelserver.APIMessages || !conv[0].Stream {
		t.Fatalf("conversation requests:\n%s\nwant one streamed Anthropic request", requestsOf(srv))
	}
	if users := conv[0].UserTexts(); len(users) == 0 || !strings.Contains(users[len(users)-1], "Say hello") {
		t.Errorf("last user text %q, want the prompt", users)
	}
	// claude-code-acp 0.16.2 reports no usage: neither in session/prompt's
	// response nor as a usage_update. None is journaled, rather than a guess.
	if u := r.replay(t, ref).Usage; u.InputTokens != nil || u.OutputTokens != nil {
		t.Errorf("usage %s, want none: the adapter reports none; records:\n%s", jsonOf(u), dump(r, t, ref))
	}
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
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
	ref := r.launchAdapter(t, "claude-code-acp", realagent.ClaudeEnv(t, srv.URL()), dir, "Run the command")
	r.awaitReal(t, ref, srv, "permission request", func() bool {
		if r.turnsEnded(t, ref) > 0 {
			t.Fatalf("the turn ended before a permission request; requests:\n%s\nrecords:\n%s", requestsOf(srv), dump(r, t, ref))
		}
		return len(observed[*eventstore.NeedsInputSignal](r, t, ref)) > 0
	})
	req := observed[*eventstore.NeedsInputSignal](r, t, ref)[0]
	if req.RequestID != "toolu_bash_1" || req.Kind != string(eventstore.InputPermission) ||
		!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
		t.Fatalf("permission request %s, want one for toolu_bash_1 offering allow and deny", jsonOf(req))
	}
	if n := len(srv.Conversation()); n != 1 {
		t.Fatalf("%d conversation requests before the answer, want 1: the tool's result must wait for it", n)
	}
	if ack := r.send(t, ref, "answer", map[string]string{"requestId": req.RequestID, "text": eventstore.AnswerAllow}); ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer: %+v", ack)
	}
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if got, want := messages(r, t, ref), []string{"I will run a command.", text}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q; records:\n%s", got, want, dump(r, t, ref))
	}
	conv := srv.Conversation()
	if len(conv) != 2 || srv.Exhausted() {
		t.Fatalf("conversation requests:\n%s\nwant 2, the script played to its end", requestsOf(srv))
	}
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
	const text = "Hello from the scripted model over ACP. All done."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 5, Usage: usage}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchAdapter(t, "codex-acp", realagent.CodexEnv(t, srv.URL()), t.TempDir(), "Say hello")
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if got := messages(r, t, ref); len(got) != 1 || got[0] != text {
		t.Fatalf("messages %q, want the model's text as one message; requests:\n%s\nrecords:\n%s", got, requestsOf(srv), dump(r, t, ref))
	}
	conv := srv.Conversation()
	if len(conv) != 1 || conv[0].API != modelserver.APIResponses || conv[0].Model != realagent.CodexModel {
		t.Fatalf("conversation requests:\n%s\nwant one Responses request for %s", requestsOf(srv), realagent.CodexModel)
	}
	if users := conv[0].UserTexts(); len(users) == 0 || !strings.Contains(users[len(users)-1], "Say hello") {
		t.Errorf("last user text %q, want the prompt", users)
	}
	// codex-acp 0.16.0 answers session/prompt with a stop reason only; its
	// usage_update is the context window's fill (used 137 of 258400 here),
	// not the turn's usage. None is journaled, rather than a guess.
	if u := r.replay(t, ref).Usage; u.InputTokens != nil || u.OutputTokens != nil {
		t.Errorf("usage %s, want none: the adapter reports none per turn; records:\n%s", jsonOf(u), dump(r, t, ref))
	}
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
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
	ref := r.launchAdapter(t, "codex-acp", realagent.CodexEnv(t, srv.URL()), dir, "Make the file")
	r.awaitReal(t, ref, srv, "permission request", func() bool {
		if r.turnsEnded(t, ref) > 0 {
			t.Fatalf("the turn ended before a permission request; requests:\n%s\nrecords:\n%s", requestsOf(srv), dump(r, t, ref))
		}
		return len(observed[*eventstore.NeedsInputSignal](r, t, ref)) > 0
	})
	// codex-acp names the request after the model's call id.
	req := observed[*eventstore.NeedsInputSignal](r, t, ref)[0]
	if req.RequestID != "call_touch" || req.Kind != string(eventstore.InputPermission) ||
		!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
		t.Fatalf("permission request %s, want one for call_touch offering allow and deny", jsonOf(req))
	}
	if _, err := os.Stat(filepath.Join(dir, "made-by-tool")); err == nil {
		t.Fatal("the command ran before the answer")
	}
	if ack := r.send(t, ref, "answer", map[string]string{"requestId": req.RequestID, "text": eventstore.AnswerAllow}); ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer: %+v", ack)
	}
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if _, err := os.Stat(filepath.Join(dir, "made-by-tool")); err != nil {
		t.Errorf("the command did not run in the working directory: %v", err)
	}
	if got, want := messages(r, t, ref), []string{text}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q; records:\n%s", got, want, dump(r, t, ref))
	}
	conv := srv.Conversation()
	if len(conv) != 2 || srv.Exhausted() {
		t.Fatalf("conversation requests:\n%s\nwant 2, the script played to its end", requestsOf(srv))
	}
	if res, ok := conv[1].ToolResult("call_touch"); !ok || res.IsError || !strings.Contains(res.Content, "hello-from-tool") {
		t.Errorf("tool result %+v (found %v), want the command's output", res, ok)
	}
}
