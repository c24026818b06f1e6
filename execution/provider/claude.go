package provider

import (
	"encoding/json"
	"fmt"
	"strings"
)

// claudeParser reads Claude Code `--output-format stream-json --verbose`.
//
// Usage. An assistant line's message.usage is the usage of one model request
// (a step); every line of the step (one per content block) repeats it under
// the same message id, and the output count of early lines may be a
// placeholder. Steps are reported as increments, once per message id, later
// higher counts as the difference. The result line's usage is the total of
// every step of the query (one user turn) it ends; queries in the same
// process are reported separately. The parser adds each result's totals to
// those of the results before it and reports the sum as cumulative: the
// running total of the launch, which replaces the increments counted so far
// (and corrects their placeholders). total_cost_usd and modelUsage are
// process-lifetime totals of a different scope (they also count subagents
// and background requests) and are not read. Input tokens are input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens: every prompt token
// the model read, as Codex counts them.
type claudeParser struct {
	*stream
	// base is the sum of the results read so far: input, output.
	base [2]*int64
}

type claudeEvent struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	UUID            string          `json:"uuid"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         *claudeMessage  `json:"message"`
	IsError         bool            `json:"is_error"`
	Result          string          `json:"result"`
	Errors          json.RawMessage `json:"errors"`
	Usage           *claudeUsage    `json:"usage"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

type claudeUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
}

func (u *claudeUsage) input() *int64 {
	return sumCounts(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
}

func (p *claudeParser) Parse(line []byte) []Event {
	var ev claudeEvent
	if p.start(line, &ev) && !p.seen(ev.UUID) {
		p.event(&ev)
	}
	return p.finish()
}

func (p *claudeParser) event(ev *claudeEvent) {
	switch ev.Type {
	case "assistant":
		p.assistant(ev)
	case "user":
		p.user(ev)
	case "result":
		p.result(ev)
	case "system", "stream_event", "control_request", "control_response", "control_cancel_request", "keep_alive":
		// Session metadata (init: cwd, tools, model, session id; compaction
		// and hook notices), partial deltas of messages that arrive whole
		// later, and control traffic: transport evidence, not semantics.
	default:
		p.unknown("event", ev.Type)
	}
}

func (p *claudeParser) assistant(ev *claudeEvent) {
	m := ev.Message
	if m == nil {
		p.badEvent("assistant event without a message")
		return
	}
	blocks, text, ok := p.content(m.Content)
	if !ok {
		return
	}
	// A subagent's own conversation (parent_tool_use_id set) is not
	// operator-facing and its usage is not part of the result totals: only
	// its tool calls are reported.
	sub := ev.ParentToolUseID != nil && *ev.ParentToolUseID != ""
	if !sub {
		p.message(text)
	}
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			if !sub {
				p.message(b.Text)
			}
		case b.Type == "tool_use" || b.Type == "server_tool_use" || b.Type == "mcp_tool_use":
			act, target := toolActivity(b.Name, args(b.Input))
			p.openTool(b.ID, b.Name, act, target)
		case strings.HasSuffix(b.Type, "tool_result"):
			// Server-side tools answer in the assistant message itself.
			p.closeTool(b.ToolUseID)
		case b.Type == "thinking" || b.Type == "redacted_thinking":
			// Private reasoning is not an operator-facing message.
		default:
			p.unknown("assistant content block", b.Type)
		}
	}
	if m.Usage != nil && !sub {
		p.stepUsage(m.ID, m.Usage.input(), m.Usage.OutputTokens)
	}
}

// user lines carry tool results, which close their calls; the rest is the
// prompt echoed back.
func (p *claudeParser) user(ev *claudeEvent) {
	if ev.Message == nil {
		return
	}
	blocks, _, ok := p.content(ev.Message.Content)
	if !ok {
		return
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			p.closeTool(b.ToolUseID)
		}
	}
}

// content decodes message content: an array of blocks or a plain string.
func (p *claudeParser) content(raw json.RawMessage) ([]claudeBlock, string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", true
	}
	var blocks []claudeBlock
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			p.badEvent(fmt.Sprintf("message content: %v", err))
			return nil, "", false
		}
		return nil, text, true
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		p.badEvent(fmt.Sprintf("message content: %v", err))
		return nil, "", false
	}
	return blocks, "", true
}

// result ends a query: its usage, then a completed or failed claim.
func (p *claudeParser) result(ev *claudeEvent) {
	if u := ev.Usage; u != nil {
		in, out := nonNegative(u.input()), nonNegative(u.OutputTokens)
		if in != nil {
			p.base[0] = ptr(addSat(deref(p.base[0]), *in))
		}
		if out != nil {
			p.base[1] = ptr(addSat(deref(p.base[1]), *out))
		}
		if in != nil || out != nil {
			p.cumulativeUsage(p.base[0], p.base[1])
		}
	}
	var errs []string
	if len(ev.Errors) > 0 && ev.Errors[0] == '[' {
		_ = json.Unmarshal(ev.Errors, &errs)
	}
	if !ev.IsError && !strings.HasPrefix(ev.Subtype, "error") {
		p.completed(ev.Result, "Claude Code finished the turn without a result text")
		return
	}
	reason, detail := ev.Result, strings.Join(errs, "\n")
	if strings.TrimSpace(reason) == "" {
		reason = "Claude Code ended the turn with " + orUnknown(ev.Subtype)
		if len(errs) > 0 {
			reason, detail = errs[0], strings.Join(errs[1:], "\n")
		}
	}
	p.failed(reason, detail)
}

func orUnknown(s string) string {
	if s == "" {
		return "an error"
	}
	return clip(s, 100)
}
