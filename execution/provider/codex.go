package provider

import (
	"encoding/json"
	"fmt"

	"github.com/agentjournal/agentjournal/eventstore"
)

// codexParser reads `codex exec --json`.
//
// Usage. turn.completed carries the thread's running totals (Codex's
// total_token_usage), not the turn's own: they are reported as cumulative,
// and totals equal to the last ones are dropped. input_tokens already
// includes cached_input_tokens and output_tokens includes
// reasoning_output_tokens, so neither is added again. No other event carries
// usage.
type codexParser struct {
	*stream
	// lastText is the last agent message of the current turn, the summary
	// of its completion claim.
	lastText string
}

type codexEvent struct {
	Type    string      `json:"type"`
	Item    *codexItem  `json:"item"`
	Usage   *codexUsage `json:"usage"`
	Error   *codexError `json:"error"`
	Message string      `json:"message"`
}

type codexItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Command   string          `json:"command"`
	Changes   []codexChange   `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Query     string          `json:"query"`
	Message   string          `json:"message"`
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
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
		p.event(&ev)
	}
	return p.finish()
}

func (p *codexParser) event(ev *codexEvent) {
	switch ev.Type {
	case "thread.started":
		// The thread id is session metadata.
	case "turn.started":
		p.lastText = ""
	case "item.started":
		p.item(ev.Item, false)
	case "item.updated":
		// Intermediate item states (a growing todo list, a running
		// command): the start and the completion say what matters.
	case "item.completed":
		p.item(ev.Item, true)
	case "turn.completed":
		if u := ev.Usage; u != nil {
			p.cumulativeUsage(u.InputTokens, u.OutputTokens)
		}
		p.completed(p.lastText, "Codex completed the turn")
		p.lastText = ""
	case "turn.failed":
		reason := "Codex turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			reason = ev.Error.Message
		}
		p.failed(reason, "")
		p.lastText = ""
	case "error":
		msg := ev.Message
		if msg == "" {
			msg = "Codex reported an error without a message"
		}
		p.diagnose(CodeProviderError, msg)
	default:
		p.unknown("event", ev.Type)
	}
}

// item handles item.started (done false) and item.completed (done true).
// Tool items open a call when they start and close it when they complete;
// an item that completes without having started (file changes do) opens and
// closes in the same line.
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
	case "reasoning", "todo_list":
		// Private reasoning and the agent's plan: not operator messages.
	case "command_execution", "file_change", "mcp_tool_call", "web_search":
		name, act, target := p.tool(it)
		p.openTool(it.ID, name, act, target)
		if done {
			p.closeTool(it.ID)
		}
	case "error":
		if done {
			msg := it.Message
			if msg == "" {
				msg = "Codex reported an error item without a message"
			}
			p.diagnose(CodeProviderError, msg)
		}
	default:
		p.unknown("item", it.Type)
	}
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
	default: // web_search
		if it.Query == "" {
			return it.Type, eventstore.ActivityReviewing, toolTarget(it.Type)
		}
		return it.Type, eventstore.ActivityReviewing, &eventstore.Target{Kind: eventstore.TargetTool, Label: clip(it.Query, maxLabelBytes)}
	}
}
