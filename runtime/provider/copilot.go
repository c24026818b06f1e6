package provider

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// copilotParser reads GitHub Copilot CLI `--output-format json`, and the
// lines of the session's events file
// ($COPILOT_HOME/session-state/<session id>/events.jsonl) fed to the same
// parser: the events the file shares with stdout carry the same ids and are
// read once.
//
// Usage. Copilot CLI 1.0.102 prints no token counts on stdout: its JSON
// output leaves out assistant.usage (the usage of each model call) and
// session.shutdown (the session's totals), and assistant.message carries no
// outputTokens. The events file has them: a session.usage_record per model
// call, and the usage of a compaction in session.compaction_complete. The
// parser reads each as an increment, the call's input (cached prompt tokens
// included) and output: after each, the totals are what the server counted
// after that call. An assistant.usage event has the same shape, and the
// outputTokens of an assistant.message (Copilot CLI 1.0.36 printed them) are
// the output of its call. Each call is counted once: by apiCallId, which
// every chunk of a call's response shares, else by the call's accounting
// sequence, else by messageId. session.shutdown's totals are the session's,
// across every run of a resumed session, and are not read; nor is the
// result's usage, which counts premium requests, not tokens.
type copilotParser struct {
	*stream
	// lastText is the last assistant message since the previous result;
	// claim is the claim session.task_complete made for this run, if any.
	lastText string
	claim    *copilotClaim
	// sessionErr is a session.error not reported yet: the result that
	// follows it fails the run with it as the reason.
	sessionErr *heldError
	// callFailure describes the last failed model call, for the retry that
	// follows it.
	callFailure string
	// sqlCalls holds the todos queries of sql tool calls that have not
	// ended; todos is the table they build.
	sqlCalls recent[string]
	todos    todoTable
}

type copilotClaim struct {
	failed bool
	reason string
}

// copilotLineTypes are the line types the Copilot CLI parser reads, as of
// Copilot CLI 1.0.102.
var copilotLineTypes = []string{
	"abort", "assistant.idle", "assistant.intent", "assistant.message", "assistant.message_delta",
	"assistant.message_start", "assistant.reasoning", "assistant.reasoning_delta", "assistant.streaming_delta",
	"assistant.tool_call_delta", "assistant.turn_end", "assistant.turn_retry", "assistant.turn_start",
	"assistant.usage", "model.call_failure", "model.call_final_result", "model.call_finished",
	"model.call_start", "permission.completed", "permission.requested", "result",
	"session.background_tasks_changed", "session.compaction_complete", "session.compaction_start",
	"session.error", "session.idle", "session.info", "session.mcp_server_status_changed",
	"session.mcp_servers_loaded", "session.resume", "session.shutdown", "session.skills_loaded",
	"session.start", "session.task_complete", "session.title_changed", "session.todos_changed",
	"session.tools_updated", "session.usage_record", "session.warning", "subagent.completed",
	"subagent.failed", "subagent.started", "system.message", "tool.execution_complete",
	"tool.execution_partial_result", "tool.execution_progress", "tool.execution_start",
	"tool.shell_output", "user.message",
}

// copilotEvent is the envelope every line shares. Data is decoded by type.
type copilotEvent struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Data      json.RawMessage `json:"data"`
	ExitCode  *int64          `json:"exitCode"`
	SessionID string          `json:"sessionId"`
}

type copilotMessage struct {
	MessageID        string `json:"messageId"`
	APICallID        string `json:"apiCallId"`
	Content          string `json:"content"`
	OutputTokens     *int64 `json:"outputTokens"`
	TurnID           string `json:"turnId"`
	ParentToolCallID string `json:"parentToolCallId"`
}

// copilotUsage is the usage of one model call (assistant.usage, and
// session.usage_record's usage).
type copilotUsage struct {
	APICallID    string `json:"apiCallId"`
	InputTokens  *int64 `json:"inputTokens"`
	OutputTokens *int64 `json:"outputTokens"`
	Accounting   *struct {
		SourceSessionID string `json:"sourceSessionId"`
		Sequence        *int64 `json:"sequence"`
	} `json:"accounting"`
}

// key names the model call the usage is of; fallback when it says nothing.
func (u *copilotUsage) key(fallback string) string {
	switch {
	case u.APICallID != "":
		return u.APICallID
	case u.Accounting != nil && u.Accounting.Sequence != nil:
		return fmt.Sprintf("accounting/%s/%d", u.Accounting.SourceSessionID, *u.Accounting.Sequence)
	}
	return fallback
}

type copilotTool struct {
	ToolCallID     string          `json:"toolCallId"`
	ToolName       string          `json:"toolName"`
	Arguments      json.RawMessage `json:"arguments"`
	TurnID         string          `json:"turnId"`
	Success        *bool           `json:"success"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	ShellExecution *struct {
		ExitCode *int64 `json:"exitCode"`
	} `json:"shellExecution"`
}

type copilotTaskComplete struct {
	Summary string `json:"summary"`
	Success *bool  `json:"success"`
}

type copilotError struct {
	Message    string `json:"message"`
	StatusCode *int64 `json:"statusCode"`
}

type copilotCallFailure struct {
	StatusCode   *int64 `json:"statusCode"`
	ErrorMessage string `json:"errorMessage"`
}

type copilotRetry struct {
	Reason string `json:"reason"`
}

func (p *copilotParser) Parse(line []byte) []Event {
	var ev copilotEvent
	if p.start(line, &ev) && !p.seen(ev.ID) {
		p.lineType = ev.Type
		if ev.SessionID != "" {
			p.learnSession(ev.SessionID, "")
		}
		p.native.MessageID = nativeID(ev.ID)
		p.event(&ev)
	}
	return p.finish()
}

func (p *copilotParser) event(ev *copilotEvent) {
	switch ev.Type {
	case "assistant.message":
		var d copilotMessage
		if p.data(ev, &d) {
			p.native.TurnID = nativeID(d.TurnID)
			// A sub-agent's messages are its own conversation, not the
			// operator's; its usage counts all the same.
			if d.ParentToolCallID == "" {
				p.message(d.Content)
				if d.Content != "" {
					p.lastText = d.Content
				}
			}
			p.stepUsage(orDefault(d.APICallID, d.MessageID), nil, d.OutputTokens)
		}
	case "assistant.usage":
		var d copilotUsage
		if p.data(ev, &d) {
			p.stepUsage(d.key(ev.ID), d.InputTokens, d.OutputTokens)
		}
	case "session.usage_record":
		var d struct {
			Usage *copilotUsage `json:"usage"`
		}
		if p.data(ev, &d) && d.Usage != nil {
			p.stepUsage(d.Usage.key(ev.ID), d.Usage.InputTokens, d.Usage.OutputTokens)
		}
	case "session.compaction_complete":
		var d struct {
			AttemptID string        `json:"compactionAttemptId"`
			Used      *copilotUsage `json:"compactionTokensUsed"`
		}
		if p.data(ev, &d) && d.Used != nil {
			p.stepUsage("compaction/"+orDefault(d.AttemptID, ev.ID), d.Used.InputTokens, d.Used.OutputTokens)
		}
	case "session.start":
		var d struct {
			SessionID string `json:"sessionId"`
			Version   string `json:"copilotVersion"`
		}
		if p.data(ev, &d) {
			p.learnSession(d.SessionID, d.Version)
		}
	case "tool.execution_start":
		var d copilotTool
		if p.data(ev, &d) {
			p.native.TurnID = nativeID(d.TurnID)
			a := args(d.Arguments)
			act, target := toolActivity(d.ToolName, a)
			if strings.EqualFold(d.ToolName, "sql") && touchesTodos(stringArg(a, "query")) {
				act = eventstore.ActivityPlanning
			}
			p.openTool(d.ToolCallID, d.ToolName, act, target)
			p.toolStarted(&d, a)
		}
	case "tool.execution_complete":
		var d copilotTool
		if p.data(ev, &d) {
			p.native.TurnID = nativeID(d.TurnID)
			out := copilotOutcome(&d)
			p.closeTool(d.ToolCallID, out)
			p.toolEnded(&d, out)
		}
	case "session.task_complete":
		var d copilotTaskComplete
		if p.data(ev, &d) {
			if d.Success != nil && !*d.Success {
				reason := p.failed(orDefault(d.Summary, "Copilot reported the task as not completed"), "")
				p.claim = &copilotClaim{failed: true, reason: reason}
				return
			}
			p.completed(d.Summary, "Copilot reported the task complete")
			p.claim = &copilotClaim{}
		}
	case "session.error":
		var d copilotError
		if p.data(ev, &d) {
			msg := strings.TrimSpace(d.Message)
			if msg == "" {
				msg = "Copilot reported an error without a message"
			}
			p.releaseSessionError()
			p.sessionErr = &heldError{reason: msg, raw: []byte(clip(string(p.raw), maxRawBytes))}
		}
	case "assistant.turn_start":
		// The session went on after an error: it did not end the run.
		p.releaseSessionError()
	case "model.call_failure":
		var d copilotCallFailure
		if p.data(ev, &d) {
			p.callFailure = describeCallFailure(&d)
		}
	case "assistant.turn_retry":
		var d copilotRetry
		if p.data(ev, &d) {
			msg := "Copilot CLI retries the model request"
			if d.Reason != "" {
				msg += " (" + clip(d.Reason, maxTypeBytes) + ")"
			}
			if p.callFailure != "" {
				msg += " after " + p.callFailure
			}
			p.diagnose(CodeProviderError, msg)
		}
	case "session.warning":
		var d copilotError
		if p.data(ev, &d) && strings.TrimSpace(d.Message) != "" {
			p.diagnose(CodeProviderError, "Copilot CLI warns: "+d.Message)
		}
	case "tool.execution_progress":
		var d copilotTool
		if p.data(ev, &d) {
			if c, ok := p.open[key(d.ToolCallID)]; ok {
				p.toolRunning(c.name)
			}
		}
	case "result":
		p.result(ev)
	case "session.mcp_server_status_changed", "session.mcp_servers_loaded", "session.skills_loaded",
		"session.tools_updated", "session.info", "session.background_tasks_changed", "session.todos_changed",
		"session.title_changed", "session.idle", "session.compaction_start", "session.resume", "session.shutdown",
		"system.message", "permission.requested", "permission.completed",
		"user.message", "assistant.turn_end", "assistant.idle", "assistant.intent",
		"assistant.reasoning", "assistant.reasoning_delta", "assistant.message_start", "assistant.message_delta",
		"assistant.streaming_delta", "assistant.tool_call_delta", "model.call_start", "model.call_finished",
		"model.call_final_result", "tool.execution_partial_result", "tool.shell_output",
		"subagent.started", "subagent.completed", "subagent.failed", "abort":
		// Session setup, the echoed prompt and system message, turn and
		// model call delimiters, reasoning, streamed deltas of a message
		// that arrives whole in assistant.message, partial tool output, a
		// todo change the sql call's end reports, permission decisions the
		// tool's end reports, and the session's totals (see Usage):
		// transport evidence, not semantics.
	default:
		p.unknownLine(ev.Type)
	}
}

// Flush reports a session error held back when the stream ends without the
// result. Its events take the ids of a line after the last.
func (p *copilotParser) Flush() []Event {
	if p.sessionErr == nil {
		return nil
	}
	p.line++
	p.events, p.overflow, p.lineType = nil, 0, ""
	p.releaseSessionError()
	return p.finish()
}

// result ends the run: a failed claim when exitCode is not 0 (Copilot
// exits 0 even when the run failed), with the session's error as the
// reason; otherwise a completed claim with the last assistant message,
// unless session.task_complete made the claim. Then the end of the turn.
func (p *copilotParser) result(ev *copilotEvent) {
	switch {
	case ev.ExitCode != nil && *ev.ExitCode != 0:
		reason, detail := fmt.Sprintf("Copilot ended the run with exit code %d", *ev.ExitCode), ""
		if e := p.sessionErr; e != nil {
			reason, detail = e.reason, fmt.Sprintf("exit code %d", *ev.ExitCode)
		}
		p.sessionErr = nil
		p.turnEnd(true, p.failed(reason, detail))
	case p.claim != nil:
		p.releaseSessionError()
		p.turnEnd(p.claim.failed, p.claim.reason)
	default:
		p.releaseSessionError()
		p.completed(p.lastText, "Copilot ended the run with exit code 0")
		p.turnEnd(false, "")
	}
	p.lastText, p.claim = "", nil
}

// releaseSessionError reports a held session.error as an error the run
// went on after.
func (p *copilotParser) releaseSessionError() {
	if e := p.sessionErr; e != nil {
		p.sessionErr = nil
		p.add(p.diagnosticFor(CodeProviderError, "session.error", "Copilot CLI reported an error: "+e.reason, e.raw))
	}
}

// copilotOutcome reads how a tool call ended: success false is a failure
// with the error's message; a shell command that exits non-zero is a
// failure too (Copilot reports it as a success), with the end of its
// output.
func copilotOutcome(d *copilotTool) outcome {
	var exit *int64
	if d.ShellExecution != nil {
		exit = d.ShellExecution.ExitCode
	}
	switch {
	case d.Success != nil && !*d.Success:
		msg := errorText(d.Error)
		if msg == "" {
			msg = tail(resultContent(d.Result), maxErrorBytes)
		}
		return outcome{failed: true, err: msg, exit: exit}
	case exit != nil && *exit != 0:
		return outcome{failed: true, err: tail(shellStatus.ReplaceAllString(resultContent(d.Result), ""), maxErrorBytes), exit: exit}
	}
	return outcome{}
}

// shellStatus is the note Copilot CLI appends to a shell command's output;
// the exit code says the same.
var shellStatus = regexp.MustCompile(`\s*<shellId: [^>]*>\s*$`)

// errorText reads a tool error: {"message": …} or a string.
func errorText(raw json.RawMessage) string {
	if s := jsonString(raw); s != "" {
		return s
	}
	var e struct {
		Message string `json:"message"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &e) == nil {
		return e.Message
	}
	return ""
}

// resultContent reads a tool result's content: {"content": …} or a string.
func resultContent(raw json.RawMessage) string {
	if s := jsonString(raw); s != "" {
		return s
	}
	var r struct {
		Content string `json:"content"`
	}
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &r) == nil {
		return r.Content
	}
	return ""
}

// toolStarted reads the plan a call writes: update_todo's checklist, and a
// sql call's todos statements, which count once the call succeeded.
func (p *copilotParser) toolStarted(d *copilotTool, a map[string]json.RawMessage) {
	switch strings.ToLower(d.ToolName) {
	case "update_todo":
		p.updateTodo(d.ToolCallID, a)
	case "sql":
		q := stringArg(a, "query")
		db := stringArg(a, "database")
		switch {
		case d.ToolCallID == "" || !touchesTodos(q) || db != "" && db != "session":
		case len(q) > maxSQLBytes:
			p.todos.unknown = true
		default:
			p.sqlCalls.put(key(d.ToolCallID), q)
		}
	}
}

func (p *copilotParser) toolEnded(d *copilotTool, out outcome) {
	k := key(d.ToolCallID)
	q, ok := p.sqlCalls.get(k)
	if !ok {
		return
	}
	p.sqlCalls.put(k, "")
	if out.failed || q == "" {
		return
	}
	if p.todos.apply(q) {
		p.reportPlan(p.todos.plan())
	}
}

// checklistItem is one line of a markdown checklist: "- [ ] text" or
// "- [x] text".
var checklistItem = regexp.MustCompile(`^\s*[-*+]\s*\[([ xX~-])\]\s*(.+?)\s*$`)

// updateTodo reads update_todo's todos, the plan once the call succeeds: a
// markdown checklist, or a list of {content or title, status}.
func (p *copilotParser) updateTodo(id string, a map[string]json.RawMessage) {
	raw := a["todos"]
	if len(raw) == 0 {
		return
	}
	var items []eventstore.PlanItem
	if raw[0] == '[' {
		var todos []struct {
			ID      string `json:"id"`
			Content string `json:"content"`
			Title   string `json:"title"`
			Status  string `json:"status"`
		}
		if json.Unmarshal(raw, &todos) != nil {
			return
		}
		for _, t := range todos {
			if it, ok := planItem(t.ID, orDefault(t.Content, t.Title), todoStatus(t.Status)); ok && len(items) < maxPlanItems {
				items = append(items, it)
			}
		}
	} else {
		for _, line := range strings.Split(stringArg(a, "todos"), "\n") {
			m := checklistItem.FindStringSubmatch(line)
			if m == nil || len(items) >= maxPlanItems {
				continue
			}
			status := eventstore.PlanItemOpen
			switch m[1] {
			case "x", "X":
				status = eventstore.PlanItemDone
			case "~", "-":
				status = eventstore.PlanItemInProgress
			}
			if it, ok := planItem("", m[2], status); ok {
				items = append(items, it)
			}
		}
	}
	p.planWhenDone(id, items)
}

// describeCallFailure says what a failed model call answered: its status
// and the message of its error body.
func describeCallFailure(d *copilotCallFailure) string {
	msg, _ := errorMessage(d.ErrorMessage)
	switch {
	case d.StatusCode != nil && msg != "":
		return fmt.Sprintf("HTTP %d: %s", *d.StatusCode, clip(msg, maxLabelBytes))
	case d.StatusCode != nil:
		return fmt.Sprintf("HTTP %d", *d.StatusCode)
	}
	return clip(msg, maxLabelBytes)
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
