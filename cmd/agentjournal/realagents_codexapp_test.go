//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// The conformance suite's Codex through `codex app-server` (the codex-app
// agent): the real pinned Codex, one process per execution, against the
// scripted model server.

// codexApp is Codex as the codex-app agent drives it: the same CLI, shell
// tool and usage as the codex agent.
var codexApp = realCLI{agent: "codex-app", name: "codex", env: realagent.CodexEnv, usage: responsesUsage,
	shell: func(id, command string) modelserver.ToolCall {
		return modelserver.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": command}}
	}}

// newProcesses are the deliveries that started a process of their own
// (exec's next turn), by reason.
func newProcesses(recs []eventstore.Record) []string {
	var out []string
	for _, rec := range recs {
		if d, ok := rec.(*eventstore.MessageDelivery); ok && strings.Contains(d.Reason, "process") {
			out = append(out, d.MessageID+": "+d.Reason)
		}
	}
	return out
}

// checkUnderstood asserts that the reader knew every line Codex wrote:
// no diagnostic says a line was unknown, malformed or of a bad shape.
func checkUnderstood(t *testing.T, r *realRun) {
	t.Helper()
	for _, rec := range r.records {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok && d.Code != "provider-error" {
				r.failf(t, "diagnostic %s: %s", d.Code, d.Message)
			}
		}
	}
}

// escalated is a shell call the model asks to run outside the sandbox,
// which Codex runs only once approved.
func escalated(id, command string) modelserver.ToolCall {
	return modelserver.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": command,
		"sandbox_permissions": "require_escalated", "justification": "The file must be made"}}
}

// TestRealCodexAppText: a one-shot run through app-server ends completed
// with the model's text and its usage, the session named.
func TestRealCodexAppText(t *testing.T) {
	t.Parallel()
	text := "Hello from the scripted model. " + strings.Repeat("All done. ", 3)
	sc := modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 4,
		Usage: modelserver.Usage{InputTokens: 120, OutputTokens: 17, CacheReadInputTokens: 30}}}}
	r := runScenario(t, codexApp, sc, "Say hello")
	if r.res.code != exitOK {
		r.failf(t, "run exit %d, want 0", r.res.code)
	}
	if got := messageTexts(r.records); !slices.Contains(got, text) {
		r.failf(t, "messages %q, want %q among them", got, text)
	}
	r.checkEnd(t, eventstore.LifecycleCompleted)
	r.checkUsage(t)
	r.checkNative(t)
	checkUnderstood(t, r)
}

// launchToApproval launches codex-app in a daemon on dir, against a
// script whose first answer is a call of command the model asks to run
// outside the sandbox, and waits for the approval request.
func launchToApproval(t *testing.T, dir, callID, command string, then modelserver.Turn) (srv *modelserver.Server, sc modelserver.Scenario, work, id string, st execution.State) {
	t.Helper()
	sc = modelserver.Scenario{Turns: []modelserver.Turn{
		{ToolCalls: []modelserver.ToolCall{escalated(callID, command)}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}}, then,
	}}
	srv = modelserver.Start(t, sc)
	work = t.TempDir()
	id = strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", codexApp.agent, "--prompt", "Make the file"}, agentArgs(t, codexApp, srv.URL(), work)...)...))
	st = awaitReal(t, dir, id, "the permission request", func(st execution.State) bool { return st.AwaitingInput() })
	return srv, sc, work, id, st
}

// TestRealCodexAppPermission: Codex asks before running a command the
// model wants run outside the sandbox; the request opens an input request in the journal, and
// the operator's answer goes back as the approval's decision: allowed, the
// command runs; denied, Codex reports it declined to the model.
func TestRealCodexAppPermission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	for _, answer := range []string{eventstore.AnswerAllow, eventstore.AnswerDeny} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			srv, _, work, id, st := launchToApproval(t, dir, "call_perm_1", "touch made-by-tool",
				modelserver.Turn{Text: "Finished.", Usage: modelserver.Usage{InputTokens: 130, OutputTokens: 5}})
			req := st.LastInputRequest
			if req.Kind != string(eventstore.InputPermission) || req.Tool == nil || req.Tool.Name != "command_execution" ||
				!strings.Contains(req.Question, "touch made-by-tool") ||
				!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
				t.Fatalf("input request %+v, want a permission for the command with allow and deny", req)
			}
			if out := mustRunReal(t, dir, "send", id, "--answer", req.RequestID, answer); !strings.Contains(out, "delivered") {
				t.Fatalf("answer printed %q, want it delivered", out)
			}
			awaitReal(t, dir, id, "the end of the turn", func(st execution.State) bool {
				return waitingForOperator(st) && !st.AwaitingInput() && turnsEnded(readJournalAPI(t, url, token, id)) == 1
			})
			conv := srv.Conversation()
			if len(conv) < 2 {
				t.Fatalf("Codex made %d conversation requests, want the tool result sent back", len(conv))
			}
			res, ok := conv[1].ToolResult("call_perm_1")
			_, statErr := os.Stat(filepath.Join(work, "made-by-tool"))
			recs := readJournalAPI(t, url, token, id)
			_, end := callEnd(recs, "touch made-by-tool")
			switch answer {
			case eventstore.AnswerAllow:
				if !ok || statErr != nil {
					t.Fatalf("allowed: tool result %+v (found %v), file: %v; want the command run", res, ok, statErr)
				}
				if end == nil || end.ToolCall.Status != eventstore.ToolCallSucceeded {
					t.Fatalf("allowed: the call's end %+v, want succeeded", end)
				}
			default:
				if !ok || statErr == nil || !strings.Contains(strings.ToLower(res.Content), "reject") && !strings.Contains(strings.ToLower(res.Content), "declin") {
					t.Fatalf("denied: tool result %+v (found %v), file: %v; want the denial reported to the model and no file", res, ok, statErr)
				}
			}
			mustRunReal(t, dir, "stop", id)
		})
	}
}

// TestRealCodexAppSteer: a prompt sent while a turn runs (here, while it
// waits on an approval) steers that turn (turn/steer): Codex gives it to
// the model in the same turn's next request, and no second turn starts.
func TestRealCodexAppSteer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := codexApp
	srv, sc, _, id, st := launchToApproval(t, dir, "call_steer_1", "touch made-by-tool",
		modelserver.Turn{Text: "Finished, and steered.", Usage: modelserver.Usage{InputTokens: 140, OutputTokens: 6}})
	if out := mustRunReal(t, dir, "send", id, "Also say steered"); !strings.Contains(out, "delivered") {
		t.Fatalf("send during the turn printed %q, want the prompt delivered", out)
	}
	mustRunReal(t, dir, "send", id, "--answer", st.LastInputRequest.RequestID, eventstore.AnswerAllow)
	awaitReal(t, dir, id, "the end of the turn", func(st execution.State) bool {
		return waitingForOperator(st) && !st.AwaitingInput() && turnsEnded(readJournalAPI(t, url, token, id)) == 1
	})
	recs := readJournalAPI(t, url, token, id)
	r := &realRun{cli: c, srv: srv, sc: sc, records: recs}
	conv := srv.Conversation()
	if len(conv) != 2 || !slices.ContainsFunc(conv[1].UserTexts(), func(s string) bool { return strings.Contains(s, "Also say steered") }) {
		var texts [][]string
		for _, q := range conv {
			texts = append(texts, q.UserTexts())
		}
		r.failf(t, "conversation requests' user texts %q, want two, the second with the steering message", texts)
	}
	if msgs := messageTexts(recs); !slices.Contains(msgs, "Finished, and steered.") {
		r.failf(t, "messages %q, want the steered turn's answer", msgs)
	}
	checkUnderstood(t, r)
	mustRunReal(t, dir, "stop", id)
}

// turnEndSeq is the sequence of the runtime's record of the end of turn n.
func turnEndSeq(recs []eventstore.Record, n int) uint64 {
	for _, rec := range recs {
		if s, ok := rec.(*eventstore.StateChanged); ok && strings.HasPrefix(s.Reason, fmt.Sprintf("turn %d ended", n)) {
			return s.Sequence
		}
	}
	return 0
}

// TestRealCodexAppForkResume: two turns run in one app-server process, the
// second continuing the first's thread, with the usage of both. A fork at
// the end of the first turn is Codex's own thread/fork through that turn: the fork's model request
// holds the first turn and not the second, in a thread of its own. A
// resume of the parent after it stopped is thread/resume: its request
// holds both turns.
func TestRealCodexAppForkResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := codexApp
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "First answer.", Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Second answer.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
		{Text: "Forked answer.", Usage: modelserver.Usage{InputTokens: 120, OutputTokens: 7}},
		{Text: "Resumed answer.", Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 9}},
	}}
	srv := modelserver.Start(t, sc)
	work := t.TempDir()
	// The fork and the resume run with the same environment: Codex keeps
	// its threads under CODEX_HOME.
	var envArgs []string
	for _, kv := range c.env(t, srv.URL()) {
		envArgs = append(envArgs, "--env", kv)
	}
	launch := append(append([]string{"launch", "--agent", c.agent, "--prompt", "First question", "--dir", work}, envArgs...), "--", realagent.Bin(t, c.name))
	id := strings.TrimSpace(mustRunReal(t, dir, launch...))
	awaitReal(t, dir, id, "the wait after turn 1", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 1
	})
	mustRunReal(t, dir, "send", id, "Second question")
	awaitReal(t, dir, id, "the wait after turn 2", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 2
	})
	parent := readJournalAPI(t, url, token, id)
	r := &realRun{cli: c, srv: srv, sc: sc, records: parent}
	if p := newProcesses(parent); len(p) > 0 {
		r.failf(t, "deliveries started processes %q, want one app-server for both turns", p)
	}
	if msgs := messageTexts(parent); !slices.Contains(msgs, "First answer.") || !slices.Contains(msgs, "Second answer.") {
		r.failf(t, "messages %q, want both turns' answers", msgs)
	}
	if conv := srv.Conversation(); len(conv) != 2 || !slices.ContainsFunc(conv[1].UserTexts(), func(s string) bool { return strings.Contains(s, "First question") }) {
		r.failf(t, "the second turn did not continue the first one's thread: %d conversation requests", len(conv))
	}
	r.checkUsage(t)
	checkUnderstood(t, r)
	at := turnEndSeq(parent, 1)
	if at == 0 {
		t.Fatalf("no end of turn 1 in the parent's journal")
	}
	fork := strings.TrimSpace(mustRunReal(t, dir, append([]string{"fork", id, "--at", fmt.Sprint(at), "--prompt", "Fork question"}, envArgs...)...))
	awaitReal(t, dir, fork, "the fork's first turn", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, fork)) == 1
	})
	frecs := readJournalAPI(t, url, token, fork)
	r.records = frecs
	if h, ok := frecs[0].(*eventstore.Header); !ok || h.ForkedFrom == nil || h.ForkedFrom.History != eventstore.HistoryNative {
		r.failf(t, "the fork's first record %+v, want a header with a fork link of native history", frecs[0])
	}
	conv := srv.Conversation()
	if len(conv) != 3 {
		r.failf(t, "%d conversation requests, want the fork's third", len(conv))
	}
	texts := strings.Join(conv[2].UserTexts(), "\n")
	if !strings.Contains(texts, "First question") || !strings.Contains(texts, "Fork question") || strings.Contains(texts, "Second question") {
		r.failf(t, "the fork's request holds %q, want the first turn and the fork's prompt, not the second turn", texts)
	}
	if ps, fs := sessionOf(parent), sessionOf(frecs); ps == "" || fs == "" || ps == fs {
		r.failf(t, "the fork's thread %q, the parent's %q: want a thread of its own", fs, ps)
	}
	if msgs := messageTexts(frecs); !slices.Contains(msgs, "Forked answer.") {
		r.failf(t, "the fork's messages %q, want its answer", msgs)
	}
	checkUnderstood(t, r)

	mustRunReal(t, dir, "stop", fork)
	mustRunReal(t, dir, "stop", id)
	awaitReal(t, dir, id, "the parent's end", func(st execution.State) bool { return st.Lifecycle.Final() })
	resumed := strings.TrimSpace(mustRunReal(t, dir, append([]string{"resume", id, "--prompt", "Resume question"}, envArgs...)...))
	awaitReal(t, dir, resumed, "the resumed run's first turn", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, resumed)) == 1
	})
	rrecs := readJournalAPI(t, url, token, resumed)
	r.records = rrecs
	conv = srv.Conversation()
	if len(conv) != 4 {
		r.failf(t, "%d conversation requests, want the resume's fourth", len(conv))
	}
	texts = strings.Join(conv[3].UserTexts(), "\n")
	if !strings.Contains(texts, "First question") || !strings.Contains(texts, "Second question") || !strings.Contains(texts, "Resume question") {
		r.failf(t, "the resume's request holds %q, want both turns and the new prompt", texts)
	}
	if got, want := sessionOf(rrecs), sessionOf(parent); got != want {
		r.failf(t, "the resumed run's thread %q, want the parent's %q", got, want)
	}
	mustRunReal(t, dir, "stop", resumed)
}

// sessionOf is the last session id the journal's observations carry.
func sessionOf(recs []eventstore.Record) string {
	s := ""
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok && o.Native != nil && o.Native.SessionID != "" {
			s = o.Native.SessionID
		}
	}
	return s
}

// TestRealCodexAppInterrupt: an interrupt message during a turn is
// turn/interrupt; the turn ends, without a claim, and the conversation
// waits for the next message.
func TestRealCodexAppInterrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := codexApp
	srv, sc, work, id, _ := launchToApproval(t, dir, "call_int_1", "touch made-by-tool",
		modelserver.Turn{Text: "Not reached.", Usage: modelserver.Usage{InputTokens: 140, OutputTokens: 6}})
	if out := mustRunReal(t, dir, "send", id, "--type", "interrupt", "stop"); !strings.Contains(out, "delivered") {
		t.Fatalf("interrupt printed %q, want it delivered", out)
	}
	awaitReal(t, dir, id, "the end of the interrupted turn", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 1
	})
	recs := readJournalAPI(t, url, token, id)
	r := &realRun{cli: c, srv: srv, sc: sc, records: recs}
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil &&
			(o.Signal.Type == eventstore.SignalCompletedClaim || o.Signal.Type == eventstore.SignalFailedClaim) {
			r.failf(t, "the interrupted turn made a %s claim, want none", o.Signal.Type)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "made-by-tool")); err == nil {
		r.failf(t, "the command ran although its turn was interrupted before its approval")
	}
	if n := len(srv.Conversation()); n != 1 {
		r.failf(t, "%d conversation requests, want the interrupted turn's one", n)
	}
	checkUnderstood(t, r)
	mustRunReal(t, dir, "stop", id)
}
