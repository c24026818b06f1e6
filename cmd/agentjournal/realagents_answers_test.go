//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
)

// colorQuestion is Claude Code's AskUserQuestion with two options.
func colorQuestion(id string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "AskUserQuestion", Input: map[string]any{"questions": []any{map[string]any{
		"question": "Which color should the button be?", "header": "Color", "multiSelect": false,
		"options": []any{map[string]any{"label": "Red", "description": "A red button"}, map[string]any{"label": "Blue", "description": "A blue button"}}}}}}
}

// answersOf are the answer messages of a journal, as "source: text".
func answersOf(recs []eventstore.Record) []string {
	var out []string
	for _, rec := range recs {
		if m, ok := rec.(*eventstore.MessageAccepted); ok && m.MessageType == "answer" {
			text, _ := m.Text()
			out = append(out, string(m.Source)+": "+text)
		}
	}
	return out
}

// answerReached waits for the end of the execution's first turn and checks
// that the answer to the question of the tool call toolID went back to the
// model as that call's result, holding want.
func answerReached(t *testing.T, srv *modelserver.Server, dir, url, token, id, toolID, want string) {
	t.Helper()
	awaitReal(t, dir, id, "the end of the turn", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 1
	})
	conv := srv.Conversation()
	if len(conv) < 2 {
		t.Fatalf("%d conversation requests, want the answer sent back", len(conv))
	}
	if res, ok := conv[1].ToolResult(toolID); !ok || !strings.Contains(res.Content, want) {
		t.Fatalf("tool result %+v (found %v), want the answer %s", res, ok, want)
	}
}

// TestRealAgentQuestionByNumber: an answer to Claude Code's question given
// by the number of its choice (2) is the choice's label, in the journal and
// for the model.
func TestRealAgentQuestionByNumber(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := realCLIs[0]
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I need to ask.", ToolCalls: []modelserver.ToolCall{colorQuestion("toolu_ask_2")}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "You chose.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	srv := modelserver.Start(t, sc)
	id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "Pick a color"}, agentArgs(t, c, srv.URL(), t.TempDir())...)...))
	st := awaitReal(t, dir, id, "the question", func(st execution.State) bool { return st.AwaitingInput() })
	mustRunReal(t, dir, "send", id, "--answer", st.LastInputRequest.RequestID, "2")
	answerReached(t, srv, dir, url, token, id, "toolu_ask_2", "Blue")
	if got, want := answersOf(readJournalAPI(t, url, token, id)), []string{"operator: Blue"}; !slices.Equal(got, want) {
		t.Fatalf("answers %q, want %q", got, want)
	}
	mustRunReal(t, dir, "stop", id)
}

// TestRealAgentPermissionsAllowAsksNoQuestion: `run --permissions allow`
// answers permission requests; a question is not one, and is not answered
// "allow". With no terminal to ask at, run declines it, and the model is
// told the operator declined.
func TestRealAgentPermissionsAllowAsksNoQuestion(t *testing.T) {
	t.Parallel()
	c := realCLIs[0]
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I need to ask.", ToolCalls: []modelserver.ToolCall{colorQuestion("toolu_ask_3")}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "I will pick myself.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	r := runScenario(t, c, sc, "Pick a color", "--permissions", "allow")
	if got, want := answersOf(r.records), []string{"system: deny"}; !slices.Equal(got, want) {
		r.failf(t, "answers %q, want %q", got, want)
	}
	conv := r.srv.Conversation()
	if len(conv) < 2 {
		r.failf(t, "%d conversation requests, want the question's outcome sent back", len(conv))
	}
	if res, ok := conv[1].ToolResult("toolu_ask_3"); !ok || strings.Contains(res.Content, "allow") || !strings.Contains(res.Content, "declined") {
		r.failf(t, "tool result %+v (found %v), want the question declined, never answered allow", res, ok)
	}
}

var executionID = regexp.MustCompile(`ae-[0-9a-f]+`)

// TestRealAgentActivityFollowsTheTool: while Claude Code's shell command
// runs (it reads a FIFO the test writes only then), `ls` and `show` say the
// execution is executing, not idle; and `show` says its tokens once.
func TestRealAgentActivityFollowsTheTool(t *testing.T) {
	t.Parallel()
	c := realCLIs[0]
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will wait.", ToolCalls: []modelserver.ToolCall{c.shell("toolu_wait_1", "cat "+fifo)}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Done waiting.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	srv := modelserver.Start(t, sc)
	dir := t.TempDir()
	done := make(chan result, 1)
	go func() {
		done <- runReal(t, dir, append([]string{"--agent", c.agent, "--prompt", "Wait", "--permissions", "allow"}, agentArgs(t, c, srv.URL(), t.TempDir())...)...)
	}()
	var ls, show string
	deadline := time.Now().Add(realTimeout)
	// ls goes through run once run serves (daemon.json); before, it would
	// open the data directory itself, and run would find it in use.
	for {
		if _, err := os.Stat(filepath.Join(dir, "daemon.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run never served its data directory")
		}
		time.Sleep(20 * time.Millisecond)
	}
	executing := regexp.MustCompile(`(?m)^activity: +executing$`)
	for {
		ls = run(t, dir, "ls").stdout
		// The tool call starts before its permission is answered, and
		// show while the permission waits says idle: both are asked again
		// until the command itself runs.
		if id := executionID.FindString(ls); id != "" && strings.Contains(ls, "executing") {
			show = run(t, dir, "show", id).stdout
			if executing.MatchString(show) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ls and show never both said executing while the command ran:\nls:\n%s\nshow:\n%s", ls, show)
		}
		select {
		case r := <-done:
			t.Fatalf("run ended (exit %d) before ls said executing:\n%s\nls:\n%s", r.code, r.stderr, ls)
		default:
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The command ends once the FIFO has a writer that closes it.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if r := <-done; r.code != exitOK {
		t.Fatalf("run exit %d:\n%s", r.code, r.stderr)
	}
	if n := strings.Count(show, "in 100/out 10") + strings.Count(show, "tokens="); n > 1 {
		t.Errorf("show says the tokens %d times:\n%s", n, show)
	}
}

// TestRealAgentStopDuringPermission: stopping Claude Code while its
// permission request is open cancels the execution; it did not complete
// the turn it was asked to do.
func TestRealAgentStopDuringPermission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServe(t, dir)
	c := realCLIs[0]
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will run it.", ToolCalls: []modelserver.ToolCall{c.shell("toolu_perm_1", "touch stopped-before")}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Ran it.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	srv := modelserver.Start(t, sc)
	id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "Run it"}, agentArgs(t, c, srv.URL(), t.TempDir())...)...))
	awaitReal(t, dir, id, "the permission request", func(st execution.State) bool {
		return st.AwaitingInput() && st.LastInputRequest.Kind == string(eventstore.InputPermission)
	})
	mustRunReal(t, dir, "stop", id)
	st := awaitReal(t, dir, id, "the end", func(st execution.State) bool { return st.Lifecycle.Final() })
	if st.Lifecycle != eventstore.LifecycleCancelled {
		t.Fatalf("stopped during a permission request: %s (%s), want cancelled", st.Lifecycle, st.LifecycleReason)
	}
}

// TestRealGeminiToolCallAfterPermission: Gemini CLI announces a tool call
// it asked permission for with no tool_call, only its completed update;
// the call is still journaled, started and ended, with its command.
func TestRealGeminiToolCallAfterPermission(t *testing.T) {
	t.Parallel()
	c := geminiCLI
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will run a command.", ToolCalls: []modelserver.ToolCall{c.shell("call_touch_1", "touch made-by-gemini")}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Done.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	r := runScenario(t, c, sc, "Touch it", "--permissions", "allow")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-gemini")); err != nil {
		r.failf(t, "the tool did not run: %v", err)
	}
	start, end := callEnd(r.records, "touch made-by-gemini")
	if start == nil || end == nil || end.ToolCall.Status != eventstore.ToolCallSucceeded {
		r.failf(t, "the call is not journaled started and succeeded: start %+v, end %+v", start, end)
	}
}

// TestRealCopilotACPPermissionSubject: Copilot CLI over ACP titles its
// permission request with the model's words; the question also says the
// command it would run, from the request's raw input.
func TestRealCopilotACPPermissionSubject(t *testing.T) {
	t.Parallel()
	c := realCLIs[2]
	c.agent = "copilot-acp"
	command := "echo hi > note.txt && ls"
	call := c.shell("toolu_note_1", command)
	call.Input["description"] = "write note.txt and list the directory"
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will write the note.", ToolCalls: []modelserver.ToolCall{call}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Done.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	r := runScenario(t, c, sc, "Write the note", "--permissions", "deny")
	var questions []string
	for _, rec := range r.records {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if ni, ok := o.Signal.Payload.(*eventstore.NeedsInputSignal); ok {
				questions = append(questions, ni.Question)
			}
		}
	}
	if len(questions) == 0 || !strings.Contains(questions[0], command) {
		r.failf(t, "permission questions %q, want the first to say the command %q", questions, command)
	}
}
