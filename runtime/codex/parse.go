package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// output is what the Driver keeps of one process's stdout, which it reads
// as `codex exec --json` writes it.
//
// Usage. turn.completed carries usage, and no other event does; what it
// counts depends on the version (session): input_tokens already includes
// cached_input_tokens and output_tokens includes reasoning_output_tokens,
// so neither is added again.
type output struct {
	*agent.Stream
	// process is the usage this process reported so far, for a CLI that
	// reports its process's own.
	process agent.Tokens
	// lastText is the last agent message of the current turn, the summary
	// of its completion claim.
	lastText string
	// held is an error event not reported yet: Codex reports a failure
	// that ends the turn twice, as an error event and then as turn.failed
	// with the same message, and only the next line tells which it is.
	held *heldError
}

// session is what the Driver knows of the usage of the Codex thread its
// processes continue, from one process to the next.
//
// Codex 0.169.0 (and, taken as the default, any version not known
// otherwise) reports in turn.completed the thread's running totals:
// `exec resume` loads the thread's totals, so the first turn of a resumed
// process already counts every turn before it. They are reported as
// cumulative, less what the executions this one resumes counted of the
// thread (before): each execution counts only its own tokens, and a
// restarted daemon, whose driver knows nothing of the turns before, still
// gets the totals right. Codex 0.147 to 0.150 report only the process's
// own usage, from zero in each `exec resume`: each turn.completed adds
// what it says beyond the process's last report. A version not known to
// report its process's usage that reports totals below the thread's last
// ones is taken to report per process from then on: a total never goes
// down.
type session struct {
	version string
	// before is what the executions this one resumes counted of the
	// thread.
	before agent.Tokens
	// thread is the thread's running totals as far as they are known.
	thread agent.Tokens
	// perProcess says turn.completed counts only its process's usage.
	perProcess bool
}

// perProcessUsage are the versions whose turn.completed counts only the
// process's own usage (seen in 0.147.0 to 0.150.1).
var perProcessUsage = [2]string{"0.147.0", "0.151.0"}

// SetAgentVersion reads the output as the given version writes it.
func (d *Driver) SetAgentVersion(v string) {
	d.session.version = v
	d.session.perProcess = agent.InRange(v, perProcessUsage[0], perProcessUsage[1])
}

// CountedBefore is what the executions this one resumes counted of the
// thread.
func (d *Driver) CountedBefore(t agent.Tokens) {
	d.session.before = t
	d.session.thread = t
}

// usage reads a turn.completed's usage as the version means it.
func (d *Driver) usage(u *codexUsage) {
	now := agent.Tokens{Input: agent.Deref(agent.NonNegative(u.InputTokens)), Output: agent.Deref(agent.NonNegative(u.OutputTokens))}
	s := &d.session
	if !s.perProcess && (now.Input < s.thread.Input || now.Output < s.thread.Output) {
		s.perProcess = true
	}
	if s.perProcess {
		in, out := max(now.Input-d.process.Input, 0), max(now.Output-d.process.Output, 0)
		d.process = now
		s.thread = agent.Tokens{Input: agent.AddSat(s.thread.Input, in), Output: agent.AddSat(s.thread.Output, out)}
		d.Increment(in, out)
		return
	}
	s.thread = now
	d.CumulativeUsage(agent.Ptr(max(now.Input-s.before.Input, 0)), agent.Ptr(max(now.Output-s.before.Output, 0)))
}

// heldError is an error event waiting for the line after it.
type heldError struct {
	reason, detail string
	raw            []byte
}

// lineTypes are the line types the Codex parser reads, as of Codex
// 0.169.0.
var lineTypes = []string{
	"error", "item.completed", "item.started", "item.updated",
	"thread.started", "turn.completed", "turn.failed", "turn.started",
}

type codexEvent struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	Error    *codexError `json:"error"`
	Message  string      `json:"message"`
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Status           string          `json:"status"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int64          `json:"exit_code"`
	Changes          []codexChange   `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Error            *codexError     `json:"error"`
	Result           *codexResult    `json:"result"`
	Query            string          `json:"query"`
	Action           json.RawMessage `json:"action"`
	Message          string          `json:"message"`
	Items            []codexTodo     `json:"items"`
}

// codexResult is what an MCP tool call returned: MCP content blocks.
type codexResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// codexAction is what a web_search item did: a search, or a page opened
// or searched.
type codexAction struct {
	Type  string `json:"type"`
	Query string `json:"query"`
	URL   string `json:"url"`
}

type codexTodo struct {
	Text      string `json:"text"`
	Completed bool   `json:"completed"`
}

type codexUsage struct {
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`
}

type codexError struct {
	Message string `json:"message"`
}

// Parse reads one line of Codex's stdout.
func (d *Driver) Parse(line []byte) []agent.Event {
	var ev codexEvent
	if d.Decode(line, &ev) {
		d.LineType = ev.Type
		if ev.Type != "turn.failed" {
			d.release()
		}
		d.event(&ev)
	}
	return d.Finish()
}

// Flush reports an error event held back when the stream ends right after
// it. Its events take the ids of a line after the last.
func (d *Driver) Flush() []agent.Event {
	if d.held == nil {
		return nil
	}
	d.NextLine()
	d.release()
	return d.Finish()
}

// release reports a held error event as what it turned out to be: an error
// the turn went on after (a retry, a reconnection).
func (d *Driver) release() {
	h := d.held
	if h == nil {
		return
	}
	d.held = nil
	d.Add(d.DiagnosticFor(agent.CodeProviderError, "error", "Codex reported an error: "+h.reason, h.raw))
}

func (d *Driver) event(ev *codexEvent) {
	switch ev.Type {
	case "thread.started":
		d.LearnSession(ev.ThreadID, "")
	case "turn.started":
		d.lastText = ""
	case "item.started":
		d.item(ev.Item, false)
	case "item.updated":
		// A running item changes: only a todo list says something new.
		if it := ev.Item; it != nil && it.Type == "todo_list" {
			d.todoList(it)
		}
	case "item.completed":
		d.item(ev.Item, true)
	case "turn.completed":
		if u := ev.Usage; u != nil {
			d.usage(u)
		}
		d.Completed(d.lastText, "Codex completed the turn")
		d.EndTurn(false, "")
		d.lastText = ""
	case "turn.failed":
		reason, detail := "Codex turn failed", ""
		if ev.Error != nil && ev.Error.Message != "" {
			reason, detail = agent.ErrorMessage(ev.Error.Message)
		}
		if h := d.held; h != nil && h.reason != reason {
			d.release()
		}
		d.held = nil
		d.EndTurn(true, d.Failed(reason, detail))
		d.lastText = ""
	case "error":
		msg := ev.Message
		if msg == "" {
			msg = "Codex reported an error without a message"
		}
		reason, detail := agent.ErrorMessage(msg)
		d.held = &heldError{reason: reason, detail: detail, raw: []byte(textclip.Fit(string(d.Raw()), agent.MaxRawBytes))}
	default:
		d.UnknownLine(ev.Type)
	}
}

// item handles item.started (done false) and item.completed (done true).
// Tool items open a call when they start and close it when they complete;
// an item that completes without having started opens and closes in the
// same line.
func (d *Driver) item(it *codexItem, done bool) {
	if it == nil {
		d.BadEvent("item event without an item")
		return
	}
	switch it.Type {
	case "agent_message":
		if done {
			d.Message(it.Text)
			d.lastText = it.Text
		}
	case "reasoning":
		// Private reasoning: not an operator message.
	case "todo_list":
		d.todoList(it)
	case "command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search":
		name, act, target := d.tool(it)
		d.OpenTool(it.ID, name, act, target)
		if done {
			d.CloseTool(it.ID, codexOutcome(it))
		}
	case "error":
		if done {
			msg := it.Message
			if msg == "" {
				msg = "Codex reported an error item without a message"
			}
			d.Diagnose(agent.CodeProviderError, "Codex reported an error: "+msg)
		}
	default:
		d.Unknown("item", it.Type)
	}
}

// todoList reports the todo list as the plan; the same list seen again (the
// item repeats it on every update and on completion) is reported once.
func (d *Driver) todoList(it *codexItem) {
	items := make([]eventstore.PlanItem, 0, min(len(it.Items), agent.MaxPlanItems))
	for _, t := range it.Items {
		status := eventstore.PlanItemOpen
		if t.Completed {
			status = eventstore.PlanItemDone
		}
		if pi, ok := agent.NewPlanItem("", t.Text, status); ok {
			items = append(items, pi)
		}
	}
	d.ReportPlan(items)
}

// codexOutcome reads how a tool item ended: a failed status, or a command's
// non-zero exit code, is a failure; a command's error is the end of its
// output. Its output is a command's aggregated output, an MCP call's text
// content, or a file change's paths.
func codexOutcome(it *codexItem) agent.Outcome {
	out := agent.Outcome{Output: codexOutput(it)}
	switch it.Type {
	case "command_execution":
		if it.Status != "failed" && it.Status != "declined" && (it.ExitCode == nil || *it.ExitCode == 0) {
			return out
		}
		out.Failed, out.Err, out.Exit = true, agent.Tail(it.AggregatedOutput, agent.MaxErrorBytes), it.ExitCode
		if out.Err == "" && it.Status == "declined" {
			out.Err = "the command was declined"
		}
	case "mcp_tool_call", "collab_tool_call", "file_change":
		if it.Status != "failed" {
			return out
		}
		out.Failed = true
		if it.Error != nil {
			out.Err = it.Error.Message
		}
		if it.Type == "mcp_tool_call" && strings.TrimSpace(out.Err) == "" {
			// A failed MCP call's error is what the tool returned, in
			// its result.
			out.Err = out.Output
		}
	}
	return out
}

// codexOutput is what a tool item returned, as text.
func codexOutput(it *codexItem) string {
	switch it.Type {
	case "command_execution":
		return it.AggregatedOutput
	case "mcp_tool_call":
		if it.Result == nil {
			return ""
		}
		var texts []string
		for _, c := range it.Result.Content {
			if c.Type == "text" && c.Text != "" {
				texts = append(texts, c.Text)
			}
		}
		return strings.Join(texts, "\n")
	case "file_change":
		// The change itself is in the work tree: its paths say what it
		// touched.
		lines := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			lines = append(lines, strings.TrimSpace(c.Kind+" "+c.Path))
		}
		return strings.Join(lines, "\n")
	}
	return ""
}

func (d *Driver) tool(it *codexItem) (string, eventstore.Activity, *eventstore.Target) {
	switch it.Type {
	case "command_execution":
		if it.Command == "" {
			return it.Type, eventstore.ActivityExecuting, agent.ToolTarget(it.Type)
		}
		return it.Type, eventstore.ActivityExecuting, agent.CommandTarget(it.Command)
	case "file_change":
		if len(it.Changes) == 0 || it.Changes[0].Path == "" {
			return it.Type, eventstore.ActivityEditing, agent.ToolTarget(it.Type)
		}
		t := agent.FileTarget(it.Changes[0].Path)
		if n := len(it.Changes); n > 1 {
			t.Label = fmt.Sprintf("%d files", n)
		}
		return it.Type, eventstore.ActivityEditing, t
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != "" {
			name = it.Server + "." + it.Tool
		}
		act, target := agent.ToolActivity(it.Tool, agent.Args(it.Arguments))
		if target.Kind == eventstore.TargetTool || target.Kind == eventstore.TargetUnknown {
			target = agent.ToolTarget(name)
		}
		return name, act, target
	case "collab_tool_call":
		name := it.Type
		if it.Tool != "" {
			name = it.Tool
		}
		return name, eventstore.ActivityExecuting, agent.ToolTarget(name)
	default: // web_search
		var a codexAction
		if len(it.Action) > 0 && it.Action[0] == '{' {
			_ = json.Unmarshal(it.Action, &a)
		}
		if (a.Type == "open_page" || a.Type == "find_in_page") && a.URL != "" {
			return it.Type, eventstore.ActivityReviewing, agent.URLTarget(a.URL)
		}
		q := it.Query
		if q == "" {
			q = a.Query
		}
		if q == "" {
			return it.Type, eventstore.ActivityReviewing, agent.ToolTarget(it.Type)
		}
		return it.Type, eventstore.ActivityReviewing, agent.SearchTarget(q, "")
	}
}
