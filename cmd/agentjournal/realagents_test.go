//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// The conformance suite: the real Claude Code, Codex and Copilot CLIs, at
// the versions fixtures/realagent pins, driven by a scripted model server on
// loopback, launched through `agentjournal run` and through a daemon, with
// every assertion made on the journal.

// realCLI is one agent CLI of the suite.
type realCLI struct {
	agent string // the adapter
	name  string // the CLI, as fixtures/realagent names it
	env   func(testing.TB, string) []string
	// shell is a call of the CLI's shell tool.
	shell func(id, command string) modelserver.ToolCall
	// usage is what the journal must count for a turn's scripted usage:
	// the CLIs on the Messages API count cached prompt tokens as input,
	// Codex's Responses API already includes them in input_tokens.
	usage func(modelserver.Usage) execution.Usage
}

func messagesUsage(u modelserver.Usage) execution.Usage {
	in, out := u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens, u.OutputTokens
	total := in + out
	return execution.Usage{InputTokens: &in, OutputTokens: &out, TotalTokens: &total}
}

func responsesUsage(u modelserver.Usage) execution.Usage {
	in, out := u.InputTokens, u.OutputTokens
	total := in + out
	return execution.Usage{InputTokens: &in, OutputTokens: &out, TotalTokens: &total}
}

var realCLIs = []realCLI{
	{agent: "claude-code", name: "claude", env: realagent.ClaudeEnv, usage: messagesUsage,
		shell: func(id, command string) modelserver.ToolCall {
			return modelserver.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": "Run the command"}}
		}},
	{agent: "codex", name: "codex", env: realagent.CodexEnv, usage: responsesUsage,
		shell: func(id, command string) modelserver.ToolCall {
			return modelserver.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": command}}
		}},
	{agent: "copilot", name: "copilot", env: realagent.CopilotEnv, usage: messagesUsage,
		shell: func(id, command string) modelserver.ToolCall {
			return modelserver.ToolCall{ID: id, Name: "bash", Input: map[string]any{"command": command, "description": "Run the command"}}
		}},
}

// eachCLI runs test for every CLI of the suite, in parallel.
func eachCLI(t *testing.T, test func(t *testing.T, c realCLI)) {
	for _, c := range realCLIs {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			test(t, c)
		})
	}
}

// realTimeout bounds one run of a real CLI: a hang fails the test.
const realTimeout = 2 * time.Minute

// agentArgs are the flags and command that launch the real CLI in workDir
// with the environment the fixture gives it, talking to the model server at
// url: the CLI itself is the command, as a user would give it.
func agentArgs(t *testing.T, c realCLI, url, workDir string) []string {
	t.Helper()
	args := []string{"--dir", workDir}
	for _, kv := range c.env(t, url) {
		args = append(args, "--env", kv)
	}
	return append(args, "--", realagent.Bin(t, c.name))
}

// runReal runs `agentjournal run` on dir, bounded by realTimeout.
func runReal(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runBounded(t, dir, append([]string{"run"}, args...)...)
}

// runBounded runs any command on dir, bounded by realTimeout: a command
// that waits on a hung agent or daemon fails the test instead of stalling.
func runBounded(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), realTimeout)
	defer cancel()
	var stdout, stderr syncBuffer
	m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" },
		HomeDir: func() (string, error) { return "", errors.New("tests name the data directory") }}
	code := m.Run(ctx, append([]string{"--data", dir}, args...))
	if ctx.Err() != nil && t.Context().Err() == nil {
		t.Fatalf("agentjournal %s did not end within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), realTimeout, stdout.String(), stderr.String())
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// mustRunReal is runBounded for commands that must succeed; it returns
// stdout.
func mustRunReal(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return runBounded(t, dir, args...).succeeded(t, args)
}

var runningAny = regexp.MustCompile(`agentjournal: running (ae-[0-9a-f]+) \(`)

// realRun is one `agentjournal run` of a real CLI against a script.
type realRun struct {
	cli     realCLI
	srv     *modelserver.Server
	sc      modelserver.Scenario
	work    string
	dir     string // the data directory
	res     result
	id      string
	records []eventstore.Record
}

func (r *realRun) failf(t *testing.T, format string, args ...any) {
	t.Helper()
	var journal strings.Builder
	for _, rec := range r.records {
		data, _ := eventstore.Encode(rec)
		journal.Write(data)
		journal.WriteByte('\n')
	}
	t.Fatalf("%s: "+format+"\nexit %d\nstderr:\n%s\njournal:\n%s", append(append([]any{r.cli.agent}, args...), r.res.code, r.res.stderr, journal.String())...)
}

func runScenario(t *testing.T, c realCLI, sc modelserver.Scenario, prompt string, flags ...string) *realRun {
	t.Helper()
	srv := modelserver.Start(t, sc)
	work := t.TempDir()
	dir := t.TempDir()
	args := append(append([]string{"--agent", c.agent, "--prompt", prompt}, flags...), agentArgs(t, c, srv.URL(), work)...)
	r := &realRun{cli: c, srv: srv, sc: sc, work: work, dir: dir, res: runReal(t, dir, args...)}
	m := runningAny.FindStringSubmatch(r.res.stderr)
	if m == nil {
		t.Fatalf("%s: run did not launch (exit %d):\n%s", c.agent, r.res.code, r.res.stderr)
	}
	r.id = m[1]
	r.records = journalOf(t, dir, r.id)
	return r
}

func (r *realRun) state(t *testing.T) *execution.State {
	t.Helper()
	st, err := execution.Replay(r.records)
	if err != nil {
		r.failf(t, "replay: %v", err)
	}
	return st
}

// messageTexts are the texts of the agent's message signals.
func messageTexts(recs []eventstore.Record) []string {
	var out []string
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if m, ok := o.Signal.Payload.(*eventstore.MessageSignal); ok {
				out = append(out, m.Text)
			}
		}
	}
	return out
}

// usageSteps is the usage total after each usage observation, as replay
// folds it.
func usageSteps(t *testing.T, recs []eventstore.Record) []execution.Usage {
	t.Helper()
	st := &execution.State{}
	var steps []execution.Usage
	for _, rec := range recs {
		if _, err := st.Apply(rec); err != nil {
			t.Fatal(err)
		}
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalUsage {
			steps = append(steps, st.Usage)
		}
	}
	return steps
}

// serverTotals are the running usage totals the model server reported, one
// per conversation request it answered with usage, in order.
func (r *realRun) serverTotals() []execution.Usage {
	var in, out int64
	var totals []execution.Usage
	for _, req := range r.srv.Conversation() {
		if req.Turn < 0 || req.Turn >= len(r.sc.Turns) || r.sc.Turns[req.Turn].Error != nil {
			continue
		}
		u := r.cli.usage(r.sc.Turns[req.Turn].Usage)
		in, out = in+*u.InputTokens, out+*u.OutputTokens
		i, o, tot := in, out, in+out
		totals = append(totals, execution.Usage{InputTokens: &i, OutputTokens: &o, TotalTokens: &tot})
	}
	return totals
}

func fmtUsage(u execution.Usage) string {
	f := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("in %s out %s total %s", f(u.InputTokens), f(u.OutputTokens), f(u.TotalTokens))
}

// checkUsage asserts that the journal's token totals are exactly the
// server's at every point: each usage observation moves the total to the
// server's running total after some request, never back, and the last one
// to the server's final total.
func (r *realRun) checkUsage(t *testing.T) {
	t.Helper()
	steps, want := usageSteps(t, r.records), r.serverTotals()
	if len(want) == 0 {
		r.failf(t, "the server answered no request with usage")
	}
	if len(steps) == 0 {
		r.failf(t, "no usage in the journal; the server reported %s", fmtUsage(want[len(want)-1]))
	}
	k := 0
	for i, s := range steps {
		for k < len(want) && fmtUsage(want[k]) != fmtUsage(s) {
			k++
		}
		if k == len(want) {
			var ws []string
			for _, w := range want {
				ws = append(ws, fmtUsage(w))
			}
			var gs []string
			for _, g := range steps {
				gs = append(gs, fmtUsage(g))
			}
			r.failf(t, "usage step %d is %s, which is not a running total the server reported (in order):\nserver: %s\njournal: %s",
				i+1, fmtUsage(s), strings.Join(ws, "; "), strings.Join(gs, "; "))
		}
	}
	if got, w := fmtUsage(steps[len(steps)-1]), fmtUsage(want[len(want)-1]); got != w {
		r.failf(t, "final usage %s, want the server's %s", got, w)
	}
}

// toolCalls are the tool call parts of the journal's activity updates.
func toolCalls(recs []eventstore.Record) []*eventstore.ActivityUpdated {
	var out []*eventstore.ActivityUpdated
	for _, rec := range recs {
		if a, ok := rec.(*eventstore.ActivityUpdated); ok && a.ToolCall != nil {
			out = append(out, a)
		}
	}
	return out
}

// callEnd finds the end of a tool call whose start targeted a command
// containing command.
func callEnd(recs []eventstore.Record, command string) (start, end *eventstore.ActivityUpdated) {
	for _, a := range toolCalls(recs) {
		switch {
		case start == nil && a.ToolCall.Status == eventstore.ToolCallStarted && a.CurrentTarget != nil &&
			a.CurrentTarget.Kind == eventstore.TargetCommand && strings.Contains(a.CurrentTarget.Label, command):
			start = a
		case start != nil && a.ToolCall.Status != eventstore.ToolCallStarted && a.ToolCall.ID == start.ToolCall.ID:
			return start, a
		}
	}
	return start, nil
}

func (r *realRun) checkEnd(t *testing.T, lc eventstore.Lifecycle) *execution.State {
	t.Helper()
	st := r.state(t)
	if st.Lifecycle != lc || st.Attention != eventstore.AttentionNone {
		r.failf(t, "ended %s/%s (%s), want %s with attention none", st.Lifecycle, st.Attention, st.LifecycleReason, lc)
	}
	if st.ProtocolDescriptor.SessionShape != eventstore.ShapeOneShot {
		r.failf(t, "header session shape %q, want one-shot", st.ProtocolDescriptor.SessionShape)
	}
	if l := st.Latest; l.CurrentTarget != nil || (l.Telemetry != nil && l.Telemetry.ActiveToolName != "") {
		r.failf(t, "after the end latest still shows a target %+v / tool %+v", l.CurrentTarget, l.Telemetry)
	}
	return st
}

// checkNative asserts that the agent's messages carry its session id.
func (r *realRun) checkNative(t *testing.T) {
	t.Helper()
	for _, rec := range r.records {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage {
			if o.Native == nil || o.Native.SessionID == "" {
				r.failf(t, "message observation %s has no native session id (%+v)", o.ObservationID, o.Native)
			}
			return
		}
	}
	r.failf(t, "no message observation")
}

func TestRealAgentText(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		text := "Hello from the scripted model. " + strings.Repeat("All done. ", 3)
		sc := modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 4,
			Usage: modelserver.Usage{InputTokens: 120, OutputTokens: 17, CacheReadInputTokens: 30, CacheCreationInputTokens: 5}}}}
		if c.agent == "codex" {
			sc.Turns[0].Usage.CacheCreationInputTokens = 0
		}
		r := runScenario(t, c, sc, "Say hello")
		if r.res.code != exitOK {
			r.failf(t, "run exit %d, want 0", r.res.code)
		}
		if got := messageTexts(r.records); !slices.Contains(got, text) {
			r.failf(t, "messages %q, want %q among them", got, text)
		}
		r.checkEnd(t, eventstore.LifecycleCompleted)
		r.checkUsage(t)
		r.checkNative(t)
	})
}

func TestRealAgentLongAnswer(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		var b strings.Builder
		for i := range 400 {
			fmt.Fprintf(&b, "Line %d of a long answer, streamed in many pieces.\n", i)
		}
		text := strings.TrimSpace(b.String())
		sc := modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 200, Usage: modelserver.Usage{InputTokens: 50, OutputTokens: 4000}}}}
		r := runScenario(t, c, sc, "Write a long answer")
		if got := messageTexts(r.records); !slices.Contains(got, text) {
			r.failf(t, "the long answer is not one message of %d bytes; messages: %d", len(text), len(got))
		}
		r.checkEnd(t, eventstore.LifecycleCompleted)
		r.checkUsage(t)
	})
}

func TestRealAgentShellTool(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		command := "echo hello-from-tool && touch made-by-tool"
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{Text: "I will run a command.", ToolCalls: []modelserver.ToolCall{c.shell("call_shell_1", command)},
				Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 100}},
			{Text: "The command printed hello-from-tool.", Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 12, CacheReadInputTokens: 150}},
		}}
		r := runScenario(t, c, sc, "Run the command", "--permissions", "allow")
		if _, err := os.Stat(filepath.Join(r.work, "made-by-tool")); err != nil {
			r.failf(t, "the tool did not run: %v", err)
		}
		start, end := callEnd(r.records, "echo hello-from-tool")
		if start == nil || end == nil {
			r.failf(t, "no tool call targeting the command, started and ended (%d tool call updates)", len(toolCalls(r.records)))
		}
		if end.ToolCall.Status != eventstore.ToolCallSucceeded {
			r.failf(t, "tool call ended %s (%s), want succeeded", end.ToolCall.Status, end.ToolCall.Error)
		}
		r.checkEnd(t, eventstore.LifecycleCompleted)
		r.checkUsage(t)
	})
}

func TestRealAgentFailingTool(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		command := "echo broken-tool >&2; exit 3"
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{ToolCalls: []modelserver.ToolCall{c.shell("call_fail_1", command)}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}},
			{Text: "The command failed.", Usage: modelserver.Usage{InputTokens: 140, OutputTokens: 8}},
		}}
		r := runScenario(t, c, sc, "Run the failing command", "--permissions", "allow")
		_, end := callEnd(r.records, "broken-tool")
		if end == nil {
			r.failf(t, "no ended tool call targeting the command")
		}
		if end.ToolCall.Status != eventstore.ToolCallFailed || end.ToolCall.Error == "" {
			r.failf(t, "failing command recorded as %s with error %q, want failed with its error", end.ToolCall.Status, end.ToolCall.Error)
		}
		if ec := end.ToolCall.ExitCode; ec != nil && *ec != 3 {
			r.failf(t, "exit code %d, want 3", *ec)
		}
		r.checkEnd(t, eventstore.LifecycleCompleted)
	})
}

func TestRealAgentAPIError(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		sc := modelserver.Scenario{Turns: []modelserver.Turn{{Error: &modelserver.APIError{Status: 400, Message: "prompt is too long for the scripted model"}, Repeat: 20}}}
		r := runScenario(t, c, sc, "Say hello")
		if r.res.code == exitOK {
			r.failf(t, "run exit 0 after an API error, want 1")
		}
		st := r.checkEnd(t, eventstore.LifecycleFailed)
		if !strings.Contains(st.LifecycleReason, "too long") && !strings.Contains(st.LifecycleReason, "400") {
			r.failf(t, "failure reason %q does not carry the API error", st.LifecycleReason)
		}
		var claims int
		for _, rec := range r.records {
			if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalFailedClaim {
				claims++
				if strings.HasPrefix(strings.TrimSpace(o.Signal.Payload.(*eventstore.FailedClaimSignal).Reason), "{") {
					r.failf(t, "failure reason is raw JSON: %s", o.Signal.Payload.(*eventstore.FailedClaimSignal).Reason)
				}
			}
		}
		if claims != 1 {
			r.failf(t, "%d failure claims, want exactly one", claims)
		}
	})
}

// readJournalAPI reads an execution's journal through the daemon's API.
func readJournalAPI(t *testing.T, url, token, id string) []eventstore.Record {
	t.Helper()
	var out []eventstore.Record
	for _, m := range journalRecords(t, url, token, id) {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := eventstore.Decode(data)
		if err != nil {
			t.Fatalf("record from the API does not decode: %v\n%s", err, data)
		}
		out = append(out, r)
	}
	return out
}

// awaitReal polls the execution until ok holds, within realTimeout.
func awaitReal(t *testing.T, dir, id, what string, ok func(execution.State) bool) execution.State {
	t.Helper()
	return awaitStateWithin(t, dir, id, what, realTimeout, ok)
}

func waitingForOperator(st execution.State) bool {
	return st.Lifecycle == eventstore.LifecycleRunning && st.Attention == eventstore.AttentionAwaitingOperator
}

// turnsEnded counts the turn ends the runtime recorded.
func turnsEnded(recs []eventstore.Record) int {
	n := 0
	for _, rec := range recs {
		if s, ok := rec.(*eventstore.StateChanged); ok && strings.Contains(s.Reason, "ended; waiting for the next message") {
			n++
		}
	}
	return n
}

func TestRealAgentConversation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	eachCLI(t, func(t *testing.T, c realCLI) {
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{Text: "First answer.", Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
			{Text: "Second answer.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
		}}
		srv := modelserver.Start(t, sc)
		work := t.TempDir()
		id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "First question"}, agentArgs(t, c, srv.URL(), work)...)...))
		awaitReal(t, dir, id, "the wait after turn 1", func(st execution.State) bool {
			return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 1
		})
		if out := mustRunReal(t, dir, "send", id, "Second", "question"); !strings.Contains(out, "delivered") {
			t.Fatalf("send printed %q, want the prompt delivered", out)
		}
		awaitReal(t, dir, id, "the wait after turn 2", func(st execution.State) bool {
			return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 2
		})
		mustRunReal(t, dir, "stop", id)
		st := awaitReal(t, dir, id, "the end", func(st execution.State) bool { return st.Lifecycle.Final() })
		recs := readJournalAPI(t, url, token, id)
		r := &realRun{cli: c, srv: srv, sc: sc, records: recs}
		if st.Lifecycle != eventstore.LifecycleCompleted || st.Attention != eventstore.AttentionNone {
			r.failf(t, "stopped conversation ended %s/%s (%s), want completed, not cancelled", st.Lifecycle, st.Attention, st.LifecycleReason)
		}
		msgs := messageTexts(recs)
		if !slices.Contains(msgs, "First answer.") || !slices.Contains(msgs, "Second answer.") {
			r.failf(t, "messages %q, want both turns' answers", msgs)
		}
		var skipped []string
		for _, rec := range recs {
			if d, ok := rec.(*eventstore.MessageDelivery); ok && d.Status != eventstore.DeliveryDelivered {
				skipped = append(skipped, d.MessageID+": "+string(d.Status)+" "+d.Reason)
			}
		}
		if len(skipped) > 0 {
			r.failf(t, "deliveries not delivered: %q", skipped)
		}
		if conv := srv.Conversation(); len(conv) != 2 || !slices.ContainsFunc(conv[1].UserTexts(), func(s string) bool { return strings.Contains(s, "First question") }) {
			r.failf(t, "the second turn did not continue the first one's session: %d conversation requests", len(conv))
		}
		r.checkUsage(t)
	})
}

// TestRealAgentPermission: Claude Code asks before running a command that
// writes a file; the request opens an input request in the journal, and the
// operator's answer goes back to the CLI.
func TestRealAgentPermission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := realCLIs[0]
	for _, answer := range []string{eventstore.AnswerAllow, eventstore.AnswerDeny} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			sc := modelserver.Scenario{Turns: []modelserver.Turn{
				{ToolCalls: []modelserver.ToolCall{c.shell("toolu_perm_1", "echo permitted && touch made-by-tool")}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}},
				{Text: "Finished.", Usage: modelserver.Usage{InputTokens: 130, OutputTokens: 5}},
			}}
			srv := modelserver.Start(t, sc)
			work := t.TempDir()
			id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "Make the file"}, agentArgs(t, c, srv.URL(), work)...)...))
			st := awaitReal(t, dir, id, "the permission request", func(st execution.State) bool { return st.AwaitingInput() })
			req := st.LastInputRequest
			if req.Kind != string(eventstore.InputPermission) || req.Tool == nil || req.Tool.Name != "Bash" ||
				!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
				t.Fatalf("input request %+v, want a permission for Bash with allow and deny", req)
			}
			if out := mustRunReal(t, dir, "send", id, "--answer", req.RequestID, answer); !strings.Contains(out, "delivered") {
				t.Fatalf("answer printed %q, want it delivered", out)
			}
			awaitReal(t, dir, id, "the end of the turn", func(st execution.State) bool {
				return waitingForOperator(st) && !st.AwaitingInput() && turnsEnded(readJournalAPI(t, url, token, id)) == 1
			})
			conv := srv.Conversation()
			if len(conv) < 2 {
				t.Fatalf("the CLI made %d conversation requests, want the tool result sent back", len(conv))
			}
			res, ok := conv[1].ToolResult("toolu_perm_1")
			_, statErr := os.Stat(filepath.Join(work, "made-by-tool"))
			switch answer {
			case eventstore.AnswerAllow:
				if !ok || res.IsError || statErr != nil {
					t.Fatalf("allowed: tool result %+v (found %v), file: %v; want the tool run", res, ok, statErr)
				}
			default:
				if !ok || !res.IsError || statErr == nil {
					t.Fatalf("denied: tool result %+v (found %v), file: %v; want the denial reported to the model and no file", res, ok, statErr)
				}
			}
			recs := readJournalAPI(t, url, token, id)
			var delivered bool
			for _, rec := range recs {
				if d, ok := rec.(*eventstore.MessageDelivery); ok && strings.HasPrefix(d.MessageID, "msg-") && d.Status == eventstore.DeliveryDelivered {
					delivered = true
				}
			}
			if !delivered {
				t.Fatalf("the answer's delivery is not in the journal")
			}
			mustRunReal(t, dir, "stop", id)
		})
	}
}

// TestRealAgentQuestion: Claude Code's AskUserQuestion becomes a question in
// the journal, with its options as choices; the answer reaches the model.
func TestRealAgentQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	c := realCLIs[0]
	input := map[string]any{"questions": []any{map[string]any{"question": "Which color should the button be?", "header": "Color", "multiSelect": false,
		"options": []any{map[string]any{"label": "Red", "description": "A red button"}, map[string]any{"label": "Blue", "description": "A blue button"}}}}}
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I need to ask.", ToolCalls: []modelserver.ToolCall{{ID: "toolu_ask_1", Name: "AskUserQuestion", Input: input}}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "You chose blue.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 5}},
	}}
	srv := modelserver.Start(t, sc)
	work := t.TempDir()
	id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "Pick a color"}, agentArgs(t, c, srv.URL(), work)...)...))
	st := awaitReal(t, dir, id, "the question", func(st execution.State) bool { return st.AwaitingInput() })
	req := st.LastInputRequest
	if !strings.Contains(req.Question, "Which color") || !slices.Equal(req.Choices, []string{"Red", "Blue"}) || req.Kind == string(eventstore.InputPermission) {
		t.Fatalf("input request %+v, want the question with choices Red and Blue", req)
	}
	mustRunReal(t, dir, "send", id, "--answer", req.RequestID, "Blue")
	answerReached(t, srv, dir, url, token, id, "toolu_ask_1", "Blue")
	if msgs := messageTexts(readJournalAPI(t, url, token, id)); !slices.Contains(msgs, "You chose blue.") {
		t.Fatalf("messages %q, want the answer's follow-up", msgs)
	}
	mustRunReal(t, dir, "stop", id)
}

// planCalls are, per CLI, the tool calls that set a plan of two items, the
// first in progress, then both done.
var planCalls = map[string][2]modelserver.ToolCall{
	"claude-code": {
		{ID: "toolu_todo_1", Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Write the file", "status": "in_progress", "activeForm": "Writing the file"},
			map[string]any{"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}}}},
		{ID: "toolu_todo_2", Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Write the file", "status": "completed", "activeForm": "Writing the file"},
			map[string]any{"content": "Run the tests", "status": "completed", "activeForm": "Running the tests"}}}},
	},
	"codex": {
		{ID: "call_plan_1", Name: "update_plan", Input: map[string]any{"plan": []any{
			map[string]any{"step": "Write the file", "status": "in_progress"}, map[string]any{"step": "Run the tests", "status": "pending"}}}},
		{ID: "call_plan_2", Name: "update_plan", Input: map[string]any{"plan": []any{
			map[string]any{"step": "Write the file", "status": "completed"}, map[string]any{"step": "Run the tests", "status": "completed"}}}},
	},
	"copilot": {
		{ID: "toolu_todo_1", Name: "sql", Input: map[string]any{"description": "Create todos",
			"query": "INSERT INTO todos (id, title, description, status) VALUES ('write-file', 'Write the file', 'Write hello.txt', 'in_progress'), ('run-tests', 'Run the tests', 'Run go test', 'pending');"}},
		{ID: "toolu_todo_2", Name: "sql", Input: map[string]any{"description": "Mark todos done",
			"query": "UPDATE todos SET status = 'done' WHERE id IN ('write-file', 'run-tests');"}},
	},
}

func TestRealAgentPlan(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		calls := planCalls[c.agent]
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{Text: "Planning.", ToolCalls: []modelserver.ToolCall{calls[0]}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}},
			{ToolCalls: []modelserver.ToolCall{calls[1]}, Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
			{Text: "Plan done.", Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 5}},
		}}
		var flags []string
		if c.agent == "claude-code" {
			// Claude Code's todo tool is off in prompt mode unless asked for.
			flags = []string{"--env", "CLAUDE_CODE_ENABLE_TODO_TOOLS=1", "--env", "CLAUDE_CODE_ENABLE_TASKS=0"}
		}
		r := runScenario(t, c, sc, "Plan the work", flags...)
		var plans [][]eventstore.PlanItem
		for _, rec := range r.records {
			if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalPlan {
				plans = append(plans, o.Signal.Payload.(*eventstore.PlanSignal).Items)
			}
		}
		statuses := func(items []eventstore.PlanItem) string {
			var s []string
			for _, it := range items {
				s = append(s, it.Text+"="+string(it.Status))
			}
			return strings.Join(s, ", ")
		}
		want := []string{"Write the file=in-progress, Run the tests=open", "Write the file=done, Run the tests=done"}
		if c.agent == "codex" {
			// Codex's todo_list says only whether an item is done.
			want[0] = "Write the file=open, Run the tests=open"
		}
		var got []string
		for _, p := range plans {
			got = append(got, statuses(p))
		}
		if !slices.Equal(got, want) {
			r.failf(t, "plans %q, want %q", got, want)
		}
		if st := r.checkEnd(t, eventstore.LifecycleCompleted); statuses(st.Plan) != want[1] {
			r.failf(t, "the state's plan is %q, want %q", statuses(st.Plan), want[1])
		}
		// run prints the state it ended in: the plan and the tokens.
		if !strings.Contains(r.res.stdout, "plan (2 items):\n  [done] Write the file\n  [done] Run the tests\n") ||
			!strings.Contains(r.res.stdout, "tokens:") {
			r.failf(t, "run's summary does not show the plan and the tokens:\n%s", r.res.stdout)
		}
		r.checkUsage(t)
	})
}

// fileCalls are, per CLI, a tool call that writes hello.txt in dir and one
// that edits it.
func fileCalls(agent, dir string) []modelserver.ToolCall {
	path := filepath.Join(dir, "hello.txt")
	switch agent {
	case "claude-code":
		return []modelserver.ToolCall{
			{ID: "toolu_write_1", Name: "Write", Input: map[string]any{"file_path": path, "content": "hello\nworld\n"}},
			{ID: "toolu_edit_1", Name: "Edit", Input: map[string]any{"file_path": path, "old_string": "world", "new_string": "there"}},
		}
	case "codex":
		return []modelserver.ToolCall{
			{ID: "call_patch_1", Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch\n"}},
			{ID: "call_patch_2", Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Update File: hello.txt\n@@\n hello\n-world\n+there\n*** End Patch\n"}},
		}
	}
	return []modelserver.ToolCall{
		{ID: "toolu_create_1", Name: "create", Input: map[string]any{"path": path, "file_text": "hello\nworld\n"}},
		{ID: "toolu_edit_1", Name: "edit", Input: map[string]any{"path": path, "old_str": "world", "new_str": "there"}},
	}
}

func TestRealAgentFiles(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		work := t.TempDir()
		calls := fileCalls(c.agent, work)
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{Text: "Writing.", ToolCalls: calls[:1], Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}},
			{ToolCalls: calls[1:], Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
			{Text: "Edited.", Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 5}},
		}}
		if c.agent == "claude-code" {
			// A search, for its pattern as the target.
			sc.Turns[2].ToolCalls = []modelserver.ToolCall{{ID: "toolu_grep_1", Name: "Grep", Input: map[string]any{"pattern": "there", "path": work}}}
			sc.Turns = append(sc.Turns, modelserver.Turn{Text: "Found it.", Usage: modelserver.Usage{InputTokens: 220, OutputTokens: 4}})
		}
		srv := modelserver.Start(t, sc)
		dir := t.TempDir()
		args := append([]string{"--agent", c.agent, "--prompt", "Write and edit hello.txt", "--permissions", "allow"}, agentArgs(t, c, srv.URL(), work)...)
		r := &realRun{cli: c, srv: srv, sc: sc, work: work, res: runReal(t, dir, args...)}
		m := runningAny.FindStringSubmatch(r.res.stderr)
		if m == nil {
			t.Fatalf("run did not launch:\n%s", r.res.stderr)
		}
		r.id, r.records = m[1], journalOf(t, dir, m[1])
		if data, err := os.ReadFile(filepath.Join(work, "hello.txt")); err != nil || string(data) != "hello\nthere\n" {
			r.failf(t, "hello.txt is %q (%v), want it written and edited", data, err)
		}
		var files []string
		ended := map[string]eventstore.ToolCallStatus{}
		var search *eventstore.Target
		for _, a := range toolCalls(r.records) {
			switch {
			case a.ToolCall.Status != eventstore.ToolCallStarted:
				ended[a.ToolCall.ID] = a.ToolCall.Status
			case a.CurrentTarget != nil && a.CurrentTarget.Kind == eventstore.TargetFile:
				files = append(files, a.ToolCall.ID+" "+filepath.Base(a.CurrentTarget.Path))
			case a.CurrentTarget != nil && a.CurrentTarget.Kind == eventstore.TargetSearch:
				search = a.CurrentTarget
			}
		}
		if len(files) != 2 || !strings.HasSuffix(files[0], " hello.txt") || !strings.HasSuffix(files[1], " hello.txt") {
			r.failf(t, "file targets %q, want the write and the edit of hello.txt", files)
		}
		for _, f := range files {
			if id, _, _ := strings.Cut(f, " "); ended[id] != eventstore.ToolCallSucceeded {
				r.failf(t, "call %s ended %q, want succeeded", id, ended[id])
			}
		}
		if c.agent == "claude-code" && (search == nil || search.Label != "there" || search.Path != work) {
			r.failf(t, "search target %+v, want the pattern there in %s", search, work)
		}
		r.checkEnd(t, eventstore.LifecycleCompleted)
		r.checkUsage(t)
	})
}

// TestRealConversationOutlivesItsDaemon: the daemon hosting a conversation
// stops between two turns, as for an upgrade, and the next daemon on the
// data directory takes it over: Claude Code runs on under its supervisor
// and is attached to; Codex and Copilot CLI, whose turns are processes of
// their own, wait for the next message, which resumes their session. The
// second turn continues the first one's session, and nothing the first
// daemon journaled is journaled again: the usage totals add up turn by
// turn.
func TestRealConversationOutlivesItsDaemon(t *testing.T) {
	t.Parallel()
	eachCLI(t, testConversationOutlivesItsDaemon)
}

func testConversationOutlivesItsDaemon(t *testing.T, c realCLI) {
	dir := t.TempDir()
	_, _, stopFirst := startServe(t, dir, "--on-stop=leave")
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "First answer.", Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Second answer.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
	}}
	srv := modelserver.Start(t, sc)
	id := strings.TrimSpace(mustRunReal(t, dir, append([]string{"launch", "--agent", c.agent, "--prompt", "First question"}, agentArgs(t, c, srv.URL(), t.TempDir())...)...))
	awaitReal(t, dir, id, "the wait after turn 1", waitingForOperator)
	if r := stopFirst(); r.code != 0 {
		t.Fatalf("the first daemon's stop: exit %d\n%s", r.code, r.stderr)
	}

	url, token, _ := startServe(t, dir)
	awaitReal(t, dir, id, "the attached execution", waitingForOperator)
	if out := mustRunReal(t, dir, "send", id, "Second", "question"); !strings.Contains(out, "delivered") {
		t.Fatalf("send printed %q, want the prompt delivered to the attached Claude", out)
	}
	awaitReal(t, dir, id, "the wait after turn 2", func(st execution.State) bool {
		return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 2
	})
	mustRunReal(t, dir, "stop", id)
	st := awaitReal(t, dir, id, "the end", func(st execution.State) bool { return st.Lifecycle.Final() })
	recs := readJournalAPI(t, url, token, id)
	r := &realRun{cli: c, srv: srv, sc: sc, records: recs}
	if st.Lifecycle != eventstore.LifecycleCompleted {
		r.failf(t, "ended %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	if msgs := messageTexts(recs); !slices.Equal(msgs, []string{"First answer.", "Second answer."}) {
		r.failf(t, "messages %q, want each turn's answer once", msgs)
	}
	seen := map[string]bool{}
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok {
			if seen[o.ObservationID] {
				r.failf(t, "observation %s journaled twice", o.ObservationID)
			}
			seen[o.ObservationID] = true
		}
	}
	if conv := srv.Conversation(); len(conv) != 2 || !slices.ContainsFunc(conv[1].UserTexts(), func(s string) bool { return strings.Contains(s, "First question") }) {
		r.failf(t, "the second turn did not continue the first one's session: %d conversation requests", len(conv))
	}
	r.checkUsage(t)
}
