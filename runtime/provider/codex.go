package provider

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// codexParser reads `codex exec --json`.
//
// Usage. turn.completed carries the thread's running totals, not the
// turn's own: Codex 0.169.0 loads the thread's totals when `exec resume`
// starts a new process, so the first turn of a resumed process already
// counts every turn before it. They are reported as cumulative, and totals
// equal to the last ones are dropped. input_tokens already includes
// cached_input_tokens and output_tokens includes reasoning_output_tokens,
// so neither is added again. No other event carries usage.
type codexParser struct {
	*stream
	// lastText is the last agent message of the current turn, the summary
	// of its completion claim.
	lastText string
	// held is an error event not reported yet: Codex reports a failure
	// that ends the turn twice, as an error event and then as turn.failed
	// with the same message, and only the next line tells which it is.
	held *heldError
}

// heldError is an error event waiting for the line after it.
type heldError struct {
	reason, detail string
	raw            []byte
}

// codexLineTypes are the line types the Codex parser reads, as of Codex
// 0.169.0.
var codexLineTypes = []string{
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
	Query            string          `json:"query"`
	Action           json.RawMessage `json:"action"`
	Message          string          `json:"message"`
	Items            []codexTodo     `json:"items"`
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

func (p *codexParser) Parse(line []byte) []Event {
	var ev codexEvent
	if p.start(line, &ev) {
		p.lineType = ev.Type
		if ev.Type != "turn.failed" {
			p.release()
		}
		p.event(&ev)
	}
	return p.finish()
}

// Flush reports an error event held back when the stream ends right after
// it. Its events take the ids of a line after the last.
func (p *codexParser) Flush() []Event {
	if p.held == nil {
		return nil
	}
	p.line++
	p.events, p.overflow, p.lineType = nil, 0, ""
	p.release()
	return p.finish()
}

// release reports a held error event as what it turned out to be: an error
// the turn went on after (a retry, a reconnection).
func (p *codexParser) release() {
	h := p.held
	if h == nil {
		return
	}
	p.held = nil
	p.add(p.diagnosticFor(CodeProviderError, "error", "Codex reported an error: "+h.reason, h.raw))
}

func (p *codexParser) event(ev *codexEvent) {
	switch ev.Type {
	case "thread.started":
		p.learnSession(ev.ThreadID, "")
	case "turn.started":
		p.lastText = ""
	case "item.started":
		p.item(ev.Item, false)
	case "item.updated":
		// A running item changes: only a todo list says something new.
		if it := ev.Item; it != nil && it.Type == "todo_list" {
			p.todoList(it)
		}
	case "item.completed":
		p.item(ev.Item, true)
	case "turn.completed":
		if u := ev.Usage; u != nil {
			p.cumulativeUsage(u.InputTokens, u.OutputTokens)
		}
		p.completed(p.lastText, "Codex completed the turn")
		p.turnEnd(false, "")
		p.lastText = ""
	case "turn.failed":
		reason, detail := "Codex turn failed", ""
		if ev.Error != nil && ev.Error.Message != "" {
			reason, detail = errorMessage(ev.Error.Message)
		}
		if h := p.held; h != nil && h.reason != reason {
			p.release()
		}
		p.held = nil
		p.turnEnd(true, p.failed(reason, detail))
		p.lastText = ""
	case "error":
		msg := ev.Message
		if msg == "" {
			msg = "Codex reported an error without a message"
		}
		reason, detail := errorMessage(msg)
		p.held = &heldError{reason: reason, detail: detail, raw: []byte(clip(string(p.raw), maxRawBytes))}
	default:
		p.unknownLine(ev.Type)
	}
}

// errorMessage reads an error message that may be an API error body
// itself ({"error":{"message":…}}, {"type":"error","error":{…}},
// {"message":…}): the message inside is the reason, the body the detail.
func errorMessage(msg string) (reason, detail string) {
	trimmed := strings.TrimSpace(msg)
	if !strings.HasPrefix(trimmed, "{") {
		return trimmed, ""
	}
	var body struct {
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(trimmed), &body) != nil {
		return trimmed, ""
	}
	switch {
	case body.Error != nil && strings.TrimSpace(body.Error.Message) != "":
		return strings.TrimSpace(body.Error.Message), trimmed
	case strings.TrimSpace(body.Message) != "":
		return strings.TrimSpace(body.Message), trimmed
	}
	return trimmed, ""
}

// item handles item.started (done false) and item.completed (done true).
// Tool items open a call when they start and close it when they complete;
// an item that completes without having started opens and closes in the
// same line.
func (p *codexParser) item(it *codexItem, done bool) {
	if it == nil {
		p.badEvent("item event without an item")
		return
	}
	switch it.Type {
	case "agent_message":
		if done {
			p.message(it.Text)
			p.lastText = it.Text
		}
	case "reasoning":
		// Private reasoning: not an operator message.
	case "todo_list":
		p.todoList(it)
	case "command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search":
		name, act, target := p.tool(it)
		p.openTool(it.ID, name, act, target)
		if done {
			p.closeTool(it.ID, codexOutcome(it))
		}
	case "error":
		if done {
			msg := it.Message
			if msg == "" {
				msg = "Codex reported an error item without a message"
			}
			p.diagnose(CodeProviderError, "Codex reported an error: "+msg)
		}
	default:
		p.unknown("item", it.Type)
	}
}

// todoList reports the todo list as the plan; the same list seen again (the
// item repeats it on every update and on completion) is reported once.
func (p *codexParser) todoList(it *codexItem) {
	items := make([]eventstore.PlanItem, 0, min(len(it.Items), maxPlanItems))
	for _, t := range it.Items {
		status := eventstore.PlanItemOpen
		if t.Completed {
			status = eventstore.PlanItemDone
		}
		if pi, ok := planItem("", t.Text, status); ok {
			items = append(items, pi)
		}
	}
	p.reportPlan(items)
}

// codexOutcome reads how a tool item ended: a failed status, or a command's
// non-zero exit code, is a failure; a command's error is the end of its
// output.
func codexOutcome(it *codexItem) outcome {
	switch it.Type {
	case "command_execution":
		failed := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		if !failed {
			return outcome{}
		}
		msg := tail(it.AggregatedOutput, maxErrorBytes)
		if msg == "" && it.Status == "declined" {
			msg = "the command was declined"
		}
		return outcome{failed: true, err: msg, exit: it.ExitCode}
	case "mcp_tool_call", "collab_tool_call", "file_change":
		if it.Status != "failed" {
			return outcome{}
		}
		out := outcome{failed: true}
		if it.Error != nil {
			out.err = it.Error.Message
		}
		return out
	}
	return outcome{}
}

func (p *codexParser) tool(it *codexItem) (string, eventstore.Activity, *eventstore.Target) {
	switch it.Type {
	case "command_execution":
		if it.Command == "" {
			return it.Type, eventstore.ActivityExecuting, toolTarget(it.Type)
		}
		return it.Type, eventstore.ActivityExecuting, commandTarget(it.Command)
	case "file_change":
		if len(it.Changes) == 0 || it.Changes[0].Path == "" {
			return it.Type, eventstore.ActivityEditing, toolTarget(it.Type)
		}
		t := fileTarget(it.Changes[0].Path)
		if n := len(it.Changes); n > 1 {
			t.Label = fmt.Sprintf("%d files", n)
		}
		return it.Type, eventstore.ActivityEditing, t
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != "" {
			name = it.Server + "." + it.Tool
		}
		act, target := toolActivity(it.Tool, args(it.Arguments))
		if target.Kind == eventstore.TargetTool || target.Kind == eventstore.TargetUnknown {
			target = toolTarget(name)
		}
		return name, act, target
	case "collab_tool_call":
		name := it.Type
		if it.Tool != "" {
			name = it.Tool
		}
		return name, eventstore.ActivityExecuting, toolTarget(name)
	default: // web_search
		var a codexAction
		if len(it.Action) > 0 && it.Action[0] == '{' {
			_ = json.Unmarshal(it.Action, &a)
		}
		if (a.Type == "open_page" || a.Type == "find_in_page") && a.URL != "" {
			return it.Type, eventstore.ActivityReviewing, urlTarget(a.URL)
		}
		q := it.Query
		if q == "" {
			q = a.Query
		}
		if q == "" {
			return it.Type, eventstore.ActivityReviewing, toolTarget(it.Type)
		}
		return it.Type, eventstore.ActivityReviewing, searchTarget(q, "")
	}
}
