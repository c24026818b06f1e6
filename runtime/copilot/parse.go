package copilot

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// output is what the Driver keeps of one process's output, which it reads
// as GitHub Copilot CLI `--output-format json` writes it, with the lines of
// the session's events file
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
type output struct {
	*agent.Stream
	// lastText is the last assistant message since the previous result;
	// claim is the claim session.task_complete made for this run, if any.
	lastText string
	claim    *copilotClaim
	// sessionErr is a session.error not reported yet: the result that
	// follows it fails the run with it as the reason.
	sessionErr *sessionError
	// callFailure describes the last failed model call, for the retry that
	// follows it.
	callFailure string
	// sqlCalls holds the todos queries of sql tool calls that have not
	// ended; todos is the table they build.
	sqlCalls agent.Recent[string]
	todos    todoTable
}

// sessionError is a session.error waiting for the result after it.
type sessionError struct {
	reason string
	raw    []byte
}

type copilotClaim struct {
	failed bool
	reason string
}

// lineTypes are the line types the Copilot CLI parser reads, as of
// Copilot CLI 1.0.102.
var lineTypes = []string{
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

// Parse reads one line of Copilot CLI's stdout or of its session's events
// file.
func (d *Driver) Parse(line []byte) []agent.Event {
	var ev copilotEvent
	if d.Decode(line, &ev) && !d.Seen(ev.ID) {
		d.LineType = ev.Type
		if ev.SessionID != "" {
			d.LearnSession(ev.SessionID, "")
		}
		d.Native.MessageID = agent.NativeID(ev.ID)
		d.event(&ev)
	}
	return d.Finish()
}

func (d *Driver) event(ev *copilotEvent) {
	switch ev.Type {
	case "assistant.message":
		var v copilotMessage
		if d.data(ev, &v) {
			d.Native.TurnID = agent.NativeID(v.TurnID)
			// A sub-agent's messages are its own conversation, not the
			// operator's; its usage counts all the same.
			if v.ParentToolCallID == "" {
				d.Message(v.Content)
				if v.Content != "" {
					d.lastText = v.Content
				}
			}
			d.StepUsage(orDefault(v.APICallID, v.MessageID), nil, v.OutputTokens)
		}
	case "assistant.usage":
		var v copilotUsage
		if d.data(ev, &v) {
			d.StepUsage(v.key(ev.ID), v.InputTokens, v.OutputTokens)
		}
	case "session.usage_record":
		var v struct {
			Usage *copilotUsage `json:"usage"`
		}
		if d.data(ev, &v) && v.Usage != nil {
			d.StepUsage(v.Usage.key(ev.ID), v.Usage.InputTokens, v.Usage.OutputTokens)
		}
	case "session.compaction_complete":
		var v struct {
			AttemptID string        `json:"compactionAttemptId"`
			Used      *copilotUsage `json:"compactionTokensUsed"`
		}
		if d.data(ev, &v) && v.Used != nil {
			d.StepUsage("compaction/"+orDefault(v.AttemptID, ev.ID), v.Used.InputTokens, v.Used.OutputTokens)
		}
	case "session.start":
		var v struct {
			SessionID string `json:"sessionId"`
			Version   string `json:"copilotVersion"`
		}
		if d.data(ev, &v) {
			d.LearnSession(v.SessionID, v.Version)
		}
	case "tool.execution_start":
		var v copilotTool
		if d.data(ev, &v) {
			d.Native.TurnID = agent.NativeID(v.TurnID)
			a := agent.Args(v.Arguments)
			act, target := agent.ToolActivity(v.ToolName, a)
			if strings.EqualFold(v.ToolName, "sql") && touchesTodos(agent.StringArg(a, "query")) {
				act = eventstore.ActivityPlanning
			}
			d.OpenTool(v.ToolCallID, v.ToolName, act, target)
			d.toolStarted(&v, a)
		}
	case "tool.execution_complete":
		var v copilotTool
		if d.data(ev, &v) {
			d.Native.TurnID = agent.NativeID(v.TurnID)
			out := copilotOutcome(&v)
			d.CloseTool(v.ToolCallID, out)
			d.toolEnded(&v, out)
		}
	case "session.task_complete":
		var v copilotTaskComplete
		if d.data(ev, &v) {
			if v.Success != nil && !*v.Success {
				reason := d.Failed(orDefault(v.Summary, "Copilot reported the task as not completed"), "")
				d.claim = &copilotClaim{failed: true, reason: reason}
				return
			}
			d.Completed(v.Summary, "Copilot reported the task complete")
			d.claim = &copilotClaim{}
		}
	case "session.error":
		var v copilotError
		if d.data(ev, &v) {
			msg := strings.TrimSpace(v.Message)
			if msg == "" {
				msg = "Copilot reported an error without a message"
			}
			d.releaseSessionError()
			d.sessionErr = &sessionError{reason: msg, raw: []byte(textclip.Fit(string(d.Raw()), agent.MaxRawBytes))}
		}
	case "assistant.turn_start":
		// The session went on after an error: it did not end the run.
		d.releaseSessionError()
	case "model.call_failure":
		var v copilotCallFailure
		if d.data(ev, &v) {
			d.callFailure = describeCallFailure(&v)
		}
	case "assistant.turn_retry":
		var v copilotRetry
		if d.data(ev, &v) {
			msg := "Copilot CLI retries the model request"
			if v.Reason != "" {
				msg += " (" + textclip.Fit(v.Reason, agent.MaxTypeBytes) + ")"
			}
			if d.callFailure != "" {
				msg += " after " + d.callFailure
			}
			d.Diagnose(agent.CodeProviderError, msg)
		}
	case "session.warning":
		var v copilotError
		if d.data(ev, &v) && strings.TrimSpace(v.Message) != "" {
			d.Diagnose(agent.CodeProviderError, "Copilot CLI warns: "+v.Message)
		}
	case "tool.execution_progress":
		var v copilotTool
		if d.data(ev, &v) {
			if name, ok := d.OpenCall(v.ToolCallID); ok {
				d.ToolRunning(name)
			}
		}
	case "result":
		d.result(ev)
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
		d.UnknownLine(ev.Type)
	}
}

// Flush reports a session error held back when the stream ends without the
// result. Its events take the ids of a line after the last.
func (d *Driver) Flush() []agent.Event {
	if d.sessionErr == nil {
		return nil
	}
	d.NextLine()
	d.releaseSessionError()
	return d.Finish()
}

// result ends the run: a failed claim when exitCode is not 0 (Copilot
// exits 0 even when the run failed), with the session's error as the
// reason; otherwise a completed claim with the last assistant message,
// unless session.task_complete made the claim. Then the end of the turn.
func (d *Driver) result(ev *copilotEvent) {
	switch {
	case ev.ExitCode != nil && *ev.ExitCode != 0:
		reason, detail := fmt.Sprintf("Copilot ended the run with exit code %v", *ev.ExitCode), ""
		if e := d.sessionErr; e != nil {
			reason, detail = e.reason, fmt.Sprintf("exit code %v", *ev.ExitCode)
		}
		d.sessionErr = nil
		d.EndTurn(true, d.Failed(reason, detail))
	case d.claim != nil:
		d.releaseSessionError()
		d.EndTurn(d.claim.failed, d.claim.reason)
	default:
		d.releaseSessionError()
		d.Completed(d.lastText, "Copilot ended the run with exit code 0")
		d.EndTurn(false, "")
	}
	d.lastText, d.claim = "", nil
}

// releaseSessionError reports a held session.error as an error the run
// went on after.
func (d *Driver) releaseSessionError() {
	if e := d.sessionErr; e != nil {
		d.sessionErr = nil
		d.Add(d.DiagnosticFor(agent.CodeProviderError, "session.error", "Copilot CLI reported an error: "+e.reason, e.raw))
	}
}

// copilotOutcome reads how a tool call ended: success false is a failure
// with the error's message; a shell command that exits non-zero is a
// failure too (Copilot reports it as a success), with the end of its
// output.
func copilotOutcome(d *copilotTool) agent.Outcome {
	var exit *int64
	if d.ShellExecution != nil {
		exit = d.ShellExecution.ExitCode
	}
	output := shellStatus.ReplaceAllString(resultContent(d.Result), "")
	switch {
	case d.Success != nil && !*d.Success:
		msg := errorText(d.Error)
		if msg == "" {
			msg = agent.Tail(output, agent.MaxErrorBytes)
		}
		return agent.Outcome{Failed: true, Err: msg, Exit: exit, Output: output}
	case exit != nil && *exit != 0:
		return agent.Outcome{Failed: true, Err: agent.Tail(output, agent.MaxErrorBytes), Exit: exit, Output: output}
	}
	return agent.Outcome{Output: output}
}

// shellStatus is the note Copilot CLI appends to a shell command's output;
// the exit code says the same.
var shellStatus = regexp.MustCompile(`\s*<shellId: [^>]*>\s*$`)

// errorText reads a tool error: {"message": …} or a string.
func errorText(raw json.RawMessage) string {
	return stringOr(raw, func(e toolError) string { return e.Message })
}

// resultContent reads a tool result's content: {"content": …} or a string.
func resultContent(raw json.RawMessage) string {
	return stringOr(raw, func(r toolResult) string { return r.Content })
}

// toolError and toolResult are the object forms of a tool's error and of
// its result.
type (
	toolError struct {
		Message string `json:"message"`
	}
	toolResult struct {
		Content string `json:"content"`
	}
)

// stringOr reads raw as a JSON string or, when it is an object, decodes it
// as T and returns what field reads of it: a tool's error and result come
// either way.
func stringOr[T any](raw json.RawMessage, field func(T) string) string {
	if s := agent.JSONString(raw); s != "" {
		return s
	}
	var v T
	if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &v) == nil {
		return field(v)
	}
	return ""
}

// toolStarted reads the plan a call writes: update_todo's checklist, and a
// sql call's todos statements, which count once the call succeeded.
func (d *Driver) toolStarted(v *copilotTool, a map[string]json.RawMessage) {
	switch strings.ToLower(v.ToolName) {
	case "update_todo":
		d.updateTodo(v.ToolCallID, a)
	case "sql":
		q := agent.StringArg(a, "query")
		db := agent.StringArg(a, "database")
		switch {
		case v.ToolCallID == "" || !touchesTodos(q) || db != "" && db != "session":
		case len(q) > maxSQLBytes:
			d.todos.unknown = true
		default:
			d.sqlCalls.Put(agent.Key(v.ToolCallID), q)
		}
	}
}

func (d *Driver) toolEnded(v *copilotTool, out agent.Outcome) {
	k := agent.Key(v.ToolCallID)
	q, ok := d.sqlCalls.Get(k)
	if !ok {
		return
	}
	d.sqlCalls.Put(k, "")
	if out.Failed || q == "" {
		return
	}
	if d.todos.apply(q) {
		d.ReportPlan(d.todos.plan())
	}
}

// checklistItem is one line of a markdown checklist: "- [ ] text" or
// "- [x] text".
var checklistItem = regexp.MustCompile(`^\s*[-*+]\s*\[([ xX~-])\]\s*(.+?)\s*$`)

// updateTodo reads update_todo's todos, the plan once the call succeeds: a
// markdown checklist, or a list of {content or title, status}.
func (d *Driver) updateTodo(id string, a map[string]json.RawMessage) {
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
			if it, ok := agent.NewPlanItem(t.ID, orDefault(t.Content, t.Title), agent.TodoStatus(t.Status)); ok && len(items) < agent.MaxPlanItems {
				items = append(items, it)
			}
		}
	} else {
		for _, line := range strings.Split(agent.StringArg(a, "todos"), "\n") {
			m := checklistItem.FindStringSubmatch(line)
			if m == nil || len(items) >= agent.MaxPlanItems {
				continue
			}
			status := eventstore.PlanItemOpen
			switch m[1] {
			case "x", "X":
				status = eventstore.PlanItemDone
			case "~", "-":
				status = eventstore.PlanItemInProgress
			}
			if it, ok := agent.NewPlanItem("", m[2], status); ok {
				items = append(items, it)
			}
		}
	}
	d.PlanWhenDone(id, items)
}

// describeCallFailure says what a failed model call answered: its status
// and the message of its error body.
func describeCallFailure(d *copilotCallFailure) string {
	msg, _ := agent.ErrorMessage(d.ErrorMessage)
	switch {
	case d.StatusCode != nil && msg != "":
		return fmt.Sprintf("HTTP %d: %s", *d.StatusCode, textclip.Fit(msg, agent.MaxLabelBytes))
	case d.StatusCode != nil:
		return fmt.Sprintf("HTTP %d", *d.StatusCode)
	}
	return textclip.Fit(msg, agent.MaxLabelBytes)
}

func (d *Driver) data(ev *copilotEvent, v any) bool {
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		d.BadEvent(fmt.Sprintf("%s event without data", textclip.Fit(ev.Type, 100)))
		return false
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		d.BadEvent(fmt.Sprintf("%s data: %v", textclip.Fit(ev.Type, 100), err))
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
