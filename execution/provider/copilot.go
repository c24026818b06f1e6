package provider

import (
	"encoding/json"
	"fmt"
)

// copilotParser reads GitHub Copilot CLI `--output-format json`.
//
// Usage. Copilot reports no input tokens and no totals: each
// assistant.message carries the outputTokens of its one model request. They
// are reported as increments of output tokens, once per messageId. The
// result's usage (premiumRequests, durations, code changes) holds no token
// counts and yields no usage signal.
type copilotParser struct {
	*stream
	// lastText is the last assistant message since the previous result;
	// claimed says a session.task_complete already made this run's claim.
	lastText string
	claimed  bool
}

// copilotEvent is the envelope every line shares. Data is decoded by type.
type copilotEvent struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Data     json.RawMessage `json:"data"`
	ExitCode *int64          `json:"exitCode"`
}

type copilotMessage struct {
	MessageID    string `json:"messageId"`
	Content      string `json:"content"`
	OutputTokens *int64 `json:"outputTokens"`
}

type copilotTool struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments"`
}

type copilotTaskComplete struct {
	Summary string `json:"summary"`
	Success *bool  `json:"success"`
}

func (p *copilotParser) Parse(line []byte) []Event {
	var ev copilotEvent
	if p.start(line, &ev) && !p.seen(ev.ID) {
		p.event(&ev)
	}
	return p.finish()
}

func (p *copilotParser) event(ev *copilotEvent) {
	switch ev.Type {
	case "assistant.message":
		var d copilotMessage
		if p.data(ev, &d) {
			p.message(d.Content)
			if d.Content != "" {
				p.lastText = d.Content
			}
			p.stepUsage(d.MessageID, nil, d.OutputTokens)
		}
	case "tool.execution_start":
		var d copilotTool
		if p.data(ev, &d) {
			act, target := toolActivity(d.ToolName, args(d.Arguments))
			p.openTool(d.ToolCallID, d.ToolName, act, target)
		}
	case "tool.execution_complete":
		var d copilotTool
		if p.data(ev, &d) {
			p.closeTool(d.ToolCallID)
		}
	case "session.task_complete":
		var d copilotTaskComplete
		if p.data(ev, &d) {
			p.claimed = true
			if d.Success != nil && !*d.Success {
				p.failed(orDefault(d.Summary, "Copilot reported the task as not completed"), "")
				return
			}
			p.completed(d.Summary, "Copilot reported the task complete")
		}
	case "result":
		// exitCode, not the process status, says whether the run failed.
		switch {
		case ev.ExitCode != nil && *ev.ExitCode != 0:
			p.failed(fmt.Sprintf("Copilot ended the run with exit code %d", *ev.ExitCode), "")
		case !p.claimed:
			p.completed(p.lastText, "Copilot ended the run with exit code 0")
		}
		p.lastText, p.claimed = "", false
	case "session.mcp_server_status_changed", "session.mcp_servers_loaded", "session.skills_loaded",
		"session.tools_updated", "session.info", "user.message", "assistant.turn_start", "assistant.turn_end",
		"assistant.reasoning", "assistant.reasoning_delta", "assistant.message_delta", "function":
		// Session setup, the echoed prompt, turn delimiters, reasoning, and
		// streamed deltas of a message that arrives whole in
		// assistant.message: transport evidence, not semantics.
	default:
		p.unknown("event", ev.Type)
	}
}

func (p *copilotParser) data(ev *copilotEvent, v any) bool {
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		p.badEvent(fmt.Sprintf("%s event without data", clip(ev.Type, 100)))
		return false
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		p.badEvent(fmt.Sprintf("%s data: %v", clip(ev.Type, 100), err))
		return false
	}
	return true
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
