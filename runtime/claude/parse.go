package claude

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// output is what the Driver keeps of one process's stdout, which it reads
// as Claude Code writes it with `--output-format stream-json --verbose`.
//
// Usage. Every usage signal brings the totals to what the server had
// counted after some request, never to a mix of counts it never had.
// Claude Code prints each content block of a model response as soon as the
// block ends, before the response's final usage arrives: the message.usage
// of an assistant line is the response's start, with final prompt counts
// and a placeholder output count (1 in every capture), so assistant lines
// add nothing. A response's final counts arrive in the stream_event
// message_delta of its message (with --include-partial-messages), which
// adds the response, prompt and output, once per message id. The result
// line carries model_usage_since_last_result: every request the process
// made since the previous result (subagents and the CLI's own requests
// included), per model. The parser adds what that says beyond what it
// counted since the previous result, so that after each result the totals
// are exactly what the server reported. A request whose final counts no
// line will give (a subagent's: its lines have no stream events) leaves
// the totals behind the server's until the result: message_delta lines
// after it wait for the result too. Versions without
// model_usage_since_last_result (2.1.263, for one) give
// modelUsage: every request of the process so far, subagents included,
// per model, so the result adds what it grew by since the process's
// previous result. Its first result in a process that resumed a session
// counts the session's earlier processes too (the CLI restores them): the
// runs before it (before) are taken off, and a fork, whose share of the
// session is not known, counts result.usage, the query's own total, for
// its first result. Without either, result.usage is what the query
// counted. A process that ends without a result (killed, crashed) counts
// the usage its assistant lines and message_delta events said since the
// last result, once per message id, as the CLI itself sums it.
// Everything is an increment: totals never go back, and a second process
// of the same execution (a resume) adds to the first. Input tokens are
// input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
type output struct {
	*agent.Stream
	// model is the sum of the last result's modelUsage in this process,
	// nil before its first.
	model *agent.Tokens
	// unsettled are the messages seen since the last result with the
	// largest usage any line gave for them, counted at the end of the
	// output when no result comes.
	unsettled []unsettledMessage
	// subCalls are the tool calls each subagent opened, by the tool call
	// that started the subagent: a subagent that fails or is stopped
	// leaves them without a result.
	subCalls map[string][]string
	// tasks are the background tasks whose start was reported, with what
	// they are (the notification of their end does not say).
	tasks agent.Recent[string]
	// window is what this parser counted since the last result: input,
	// output.
	window [2]int64
	// behind says a request since the last result will have its usage
	// counted only by the next result.
	behind bool
	// streamMsg and streamIn are the message id and prompt count of the
	// last stream_event message_start, for a message_delta that does not
	// name its message or repeat the prompt count.
	streamMsg string
	streamIn  *int64
}

// maxChoices bounds the choices of a question.
const maxChoices = 50

// maxUnsettled bounds the messages whose usage waits for a result,
// maxSubCalls the calls remembered per subagent and maxTasks the tasks
// whose start was reported.
const (
	maxUnsettled = 1000
	maxSubCalls  = 256
	maxTasks     = 256
)

// unsettledMessage is a message's usage as its lines gave it, before a
// result counted it.
type unsettledMessage struct {
	id      string
	in, out int64
}

// Phases of the status observations that follow Claude Code's background
// tasks (subagents, background shells), from its task_started and
// task_notification lines. They are written in journals: never rename one.
const (
	PhaseTaskStarted   = "claude-task-started"
	PhaseTaskCompleted = "claude-task-completed"
	PhaseTaskFailed    = "claude-task-failed"
	PhaseTaskStopped   = "claude-task-stopped"
)

// lineTypes are the line types the Claude Code parser reads, as of Claude
// Code 2.1.328.
var lineTypes = []string{
	"assistant", "auth_status", "control_cancel_request", "control_request", "control_response",
	"keep_alive", "prompt_suggestion", "rate_limit_event", "result", "stream_event", "system",
	"tool_progress", "tool_use_summary", "user",
}

// claudeEvent is what every line shares. The other fields change shape from
// one line type to another (a system line's message is a string, an
// assistant line's an object), so they stay raw until the handler of the
// line's type decodes the ones it reads: a field of another line type can
// never make a line unreadable.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`

	Version         json.RawMessage `json:"claude_code_version"`
	SlashCommands   json.RawMessage `json:"slash_commands"`
	ParentToolUseID json.RawMessage `json:"parent_tool_use_id"`
	Message         json.RawMessage `json:"message"`
	IsError         json.RawMessage `json:"is_error"`
	Result          json.RawMessage `json:"result"`
	Errors          json.RawMessage `json:"errors"`
	Usage           json.RawMessage `json:"usage"`
	SinceLastResult json.RawMessage `json:"model_usage_since_last_result"`
	Attempt         json.RawMessage `json:"attempt"`
	MaxRetries      json.RawMessage `json:"max_retries"`
	ErrorStatus     json.RawMessage `json:"error_status"`
	Error           json.RawMessage `json:"error"`
	Event           json.RawMessage `json:"event"`
	APIMessageID    json.RawMessage `json:"api_message_id"`
	ToolName        json.RawMessage `json:"tool_name"`
	RateLimit       json.RawMessage `json:"rate_limit_info"`
	RequestID       json.RawMessage `json:"request_id"`
	Request         json.RawMessage `json:"request"`
	ModelUsage      json.RawMessage `json:"modelUsage"`
	TaskID          json.RawMessage `json:"task_id"`
	ToolUseID       json.RawMessage `json:"tool_use_id"`
	Status          json.RawMessage `json:"status"`
	Description     json.RawMessage `json:"description"`
	SubagentType    json.RawMessage `json:"subagent_type"`
	Summary         json.RawMessage `json:"summary"`
	Reason          json.RawMessage `json:"reason"`
	TaskType        json.RawMessage `json:"task_type"`
	Backgrounded    json.RawMessage `json:"is_backgrounded"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
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
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type claudeUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
}

func (u *claudeUsage) input() *int64 {
	return agent.SumCounts(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
}

type claudeModelUsage struct {
	InputTokens              *int64 `json:"inputTokens"`
	OutputTokens             *int64 `json:"outputTokens"`
	CacheReadInputTokens     *int64 `json:"cacheReadInputTokens"`
	CacheCreationInputTokens *int64 `json:"cacheCreationInputTokens"`
}

type claudeStreamEvent struct {
	Type    string         `json:"type"`
	Message *claudeMessage `json:"message"`
	Usage   *claudeUsage   `json:"usage"`
}

type claudeRateLimit struct {
	Status        string `json:"status"`
	ResetsAt      *int64 `json:"resetsAt"`
	RateLimitType string `json:"rateLimitType"`
}

// claudeControlRequest is the request of a control_request line.
type claudeControlRequest struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	Suggestions json.RawMessage `json:"permission_suggestions"`
}

// Parse reads one line of Claude Code's stdout.
func (d *Driver) Parse(line []byte) []agent.Event {
	var ev claudeEvent
	if d.Decode(line, &ev) && !d.Seen(ev.UUID) {
		d.LineType = ev.Type
		var version string
		if ev.Type == "system" && ev.Subtype == "init" {
			version = agent.JSONString(ev.Version)
			var names []string
			if d.field(ev.SlashCommands, "slash_commands", &names) && len(names) > 0 {
				list := make([]agent.Command, 0, len(names))
				for _, n := range names {
					list = append(list, agent.Command{Name: n})
				}
				d.Advertise(list)
			}
		}
		if ev.SessionID != "" || version != "" {
			d.LearnSession(ev.SessionID, version)
		}
		d.Native.MessageID = agent.NativeID(ev.UUID)
		d.event(&ev)
	}
	return d.Finish()
}

// field decodes a field of the line into v; an absent or null field leaves
// v as it is. A field of the wrong shape is a bad-event naming it.
func (d *Driver) field(raw json.RawMessage, name string, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	if err := json.Unmarshal(raw, v); err != nil {
		d.BadEvent(fmt.Sprintf("%s %s: %v", textclip.Fit(d.LineType, agent.MaxTypeBytes), name, err))
		return false
	}
	return true
}

func (d *Driver) event(ev *claudeEvent) {
	switch ev.Type {
	case "assistant":
		d.assistant(ev)
	case "user":
		d.user(ev)
	case "result":
		d.result(ev)
	case "system":
		d.system(ev)
	case "stream_event":
		d.streamEvent(ev)
	case "tool_progress":
		var name string
		if d.field(ev.ToolName, "tool_name", &name) {
			d.ToolRunning(name)
		}
	case "rate_limit_event":
		d.rateLimit(ev)
	case "control_request":
		d.controlRequest(ev)
	case "auth_status":
		if msg := agent.JSONString(ev.Error); msg != "" {
			d.Diagnose(agent.CodeProviderError, "Claude Code authentication failed: "+msg)
		}
	case "control_response", "control_cancel_request", "keep_alive", "tool_use_summary", "prompt_suggestion":
		// Answers to the runtime's own requests, a request withdrawn with
		// the tool call it was for, liveness, and summaries and
		// suggestions of what the lines around them already say.
	default:
		d.UnknownLine(ev.Type)
	}
}

// system lines are session metadata (init, status, hooks, compaction,
// task progress); a retried API request and a background task's start and
// end say something the journal needs.
func (d *Driver) system(ev *claudeEvent) {
	switch ev.Subtype {
	case "task_started", "task_notification":
		d.task(ev)
		return
	case "api_retry":
	default:
		return
	}
	var attempt, maxRetries, status *int64
	if !d.field(ev.Attempt, "attempt", &attempt) || !d.field(ev.MaxRetries, "max_retries", &maxRetries) ||
		!d.field(ev.ErrorStatus, "error_status", &status) {
		return
	}
	what := agent.JSONString(ev.Error)
	if status != nil {
		what = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", *status, what))
	}
	if what == "" {
		what = "a connection error"
	}
	d.Diagnose(agent.CodeProviderError, fmt.Sprintf("Claude Code retries the model request (attempt %s of %s) after %s",
		countText(attempt), countText(maxRetries), what))
}

// task reports a subagent, or a task run in the background, that started
// or ended; a shell command the CLI follows as a task while the call waits
// for it says nothing its tool call does not, unless it fails. A task that
// failed or was stopped leaves the calls its subagent opened without
// results: they end with it, failed with its error.
func (d *Driver) task(ev *claudeEvent) {
	desc, kind := agent.JSONString(ev.Description), agent.JSONString(ev.SubagentType)
	id, call := agent.JSONString(ev.TaskID), agent.JSONString(ev.ToolUseID)
	name := "background task"
	if kind != "" {
		name = "subagent " + agent.OneLine(kind, agent.MaxTypeBytes)
	}
	if ev.Subtype == "task_started" {
		var background bool
		_ = json.Unmarshal(ev.Backgrounded, &background)
		if agent.JSONString(ev.TaskType) != "local_agent" && !background {
			return
		}
		if id != "" {
			d.tasks.Put(agent.Key(id), name)
		}
		summary := "Claude Code started a " + name
		if desc != "" {
			summary += ": " + agent.OneLine(desc, agent.MaxLabelBytes)
		}
		d.Observe(&eventstore.StatusSignal{Phase: PhaseTaskStarted, Summary: summary})
		return
	}
	status, text := agent.JSONString(ev.Status), agent.JSONString(ev.Reason)
	started, ok := d.tasks.Get(agent.Key(id))
	if !ok && status == "completed" {
		return
	}
	if ok {
		name = started
	}
	if text == "" {
		text = agent.JSONString(ev.Summary)
	}
	label := "Claude Code's " + name
	if id != "" {
		label += " " + agent.OneLine(id, agent.MaxTypeBytes)
	}
	var phase, summary string
	switch status {
	case "completed":
		phase, summary = PhaseTaskCompleted, label+" completed"
	case "failed":
		phase, summary = PhaseTaskFailed, label+" failed"
	default: // stopped, killed
		phase, summary = PhaseTaskStopped, label+" was "+orStatus(status)
	}
	if text != "" {
		summary += ": " + text
	}
	d.Observe(&eventstore.StatusSignal{Phase: phase, Summary: textclip.Fit(summary, agent.MaxSummaryBytes)})
	if status != "completed" {
		why := "the subagent that made the call ended first"
		if text != "" {
			why += ": " + text
		}
		for _, c := range d.subCalls[call] {
			d.CloseTool(c, agent.Outcome{Failed: true, Err: why})
		}
	}
	delete(d.subCalls, call)
}

func orStatus(s string) string {
	if s == "" {
		return "stopped"
	}
	return textclip.Fit(s, agent.MaxTypeBytes)
}

// chat decodes the message of an assistant or user line and the tool call
// that started the subagent that wrote it, "" for the main agent.
func (d *Driver) chat(ev *claudeEvent) (m *claudeMessage, parent string, ok bool) {
	var p *string
	if !d.field(ev.ParentToolUseID, "parent_tool_use_id", &p) || !d.field(ev.Message, "message", &m) {
		return nil, "", false
	}
	if p != nil {
		parent = *p
	}
	return m, parent, true
}

func (d *Driver) assistant(ev *claudeEvent) {
	m, parent, ok := d.chat(ev)
	if !ok {
		return
	}
	sub := parent != ""
	if m == nil {
		d.BadEvent("assistant event without a message")
		return
	}
	blocks, text, ok := d.content(m.Content)
	if !ok {
		return
	}
	// A subagent's own conversation (parent_tool_use_id set) is not
	// operator-facing: its tool calls and its usage are reported, not its
	// text or its plan. Nor is the text Claude Code writes in place of a
	// reply it did not get (model "<synthetic>", "API Error: …"): the
	// result that follows says the same as its claim.
	quiet := sub || m.Model == "<synthetic>"
	if !quiet {
		d.Message(text)
	}
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			if !quiet {
				d.Message(b.Text)
			}
		case b.Type == "tool_use" || b.Type == "server_tool_use" || b.Type == "mcp_tool_use":
			act, target := toolActivity(b.Name, agent.Args(b.Input))
			d.OpenTool(b.ID, b.Name, act, target)
			if sub && b.ID != "" {
				d.subCall(parent, b.ID)
			}
			if !sub && strings.EqualFold(b.Name, "TodoWrite") {
				d.todoWrite(b.ID, b.Input)
			}
		case strings.HasSuffix(b.Type, "tool_result"):
			// Server-side tools answer in the assistant message itself.
			d.CloseTool(b.ToolUseID, claudeOutcome(&b))
		case b.Type == "thinking" || b.Type == "redacted_thinking":
			// Private reasoning is not an operator-facing message.
		default:
			d.Unknown("assistant content block", b.Type)
		}
	}
	// The line's usage is the response's start, not its end. A subagent's
	// response has no stream events to end it: the totals wait for the
	// result.
	if m.Usage != nil {
		d.unsettle(m.ID, m.Usage.input(), m.Usage.OutputTokens)
		if sub {
			d.behind = true
		}
	}
}

// subCall remembers a call a subagent opened.
func (d *Driver) subCall(parent, id string) {
	if d.subCalls == nil {
		d.subCalls = map[string][]string{}
	}
	if len(d.subCalls) >= maxSubCalls {
		return
	}
	if calls := d.subCalls[parent]; len(calls) < maxSubCalls {
		d.subCalls[parent] = append(calls, id)
	}
}

// Flush counts, when the output ended without a result after them, the
// messages no result counted, and ends the tool calls left open: no result
// will come for them. Its events take the ids of a line after the last.
func (d *Driver) Flush() []agent.Event {
	d.NextLine()
	for _, u := range d.unsettled {
		d.StepUsage(u.id, &u.in, &u.out)
	}
	d.unsettled = nil
	d.AbandonTools("Claude Code's output ended before the call's result")
	return d.Finish()
}

// user lines carry tool results, which close their calls; the rest is the
// prompt echoed back.
func (d *Driver) user(ev *claudeEvent) {
	m, _, ok := d.chat(ev)
	if !ok || m == nil {
		return
	}
	blocks, _, ok := d.content(m.Content)
	if !ok {
		return
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			d.CloseTool(b.ToolUseID, claudeOutcome(&b))
		}
	}
}

// toolResult ends a call, and makes a successful TodoWrite's list the plan.
func (d *Driver) toolResult(b *claudeBlock) {
	out := claudeOutcome(b)
	d.CloseTool(b.ToolUseID, out)
	d.SettlePlan(b.ToolUseID, out.Failed)
}

// claudeOutcome reads a tool_result block: its content is the call's
// output, is_error says the call failed, and then the content says why. A
// shell command's failed result starts with "Exit code N".
func claudeOutcome(b *claudeBlock) agent.Outcome {
	text := resultText(b.Content)
	if !b.IsError {
		return agent.Outcome{Output: text}
	}
	if inner, ok := strings.CutPrefix(text, "<tool_use_error>"); ok {
		text = strings.TrimSuffix(inner, "</tool_use_error>")
	}
	out := agent.Outcome{Failed: true, Err: textclip.Fit(text, agent.MaxErrorBytes), Output: text}
	if rest, ok := strings.CutPrefix(text, "Exit code "); ok {
		digits, _, _ := strings.Cut(rest, "\n")
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
			out.Exit = &n
		}
	}
	return out
}

// resultText is the text of a tool result's content, a string or its text
// blocks joined by newlines; other blocks (an image) are left out.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" || bl.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
	}
	return b.String()
}

// todoWrite reads the todo list a TodoWrite call sets, the plan once the
// call succeeds.
func (d *Driver) todoWrite(id string, input json.RawMessage) {
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
			ID      string `json:"id"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil {
		d.BadEvent("TodoWrite input is not a list of todos with content and status")
		return
	}
	items := make([]eventstore.PlanItem, 0, min(len(in.Todos), agent.MaxPlanItems))
	for _, t := range in.Todos {
		if it, ok := agent.NewPlanItem(t.ID, t.Content, agent.TodoStatus(t.Status)); ok {
			items = append(items, it)
		}
	}
	d.PlanWhenDone(id, items)
}

// content decodes message content: an array of blocks or a plain string.
func (d *Driver) content(raw json.RawMessage) ([]claudeBlock, string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", true
	}
	var blocks []claudeBlock
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			d.BadEvent(fmt.Sprintf("message content: %v", err))
			return nil, "", false
		}
		return nil, text, true
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		d.BadEvent(fmt.Sprintf("message content: %v", err))
		return nil, "", false
	}
	return blocks, "", true
}

// streamEvent reads the partial messages of --include-partial-messages for
// the one thing the whole messages lack: a response's final usage, in its
// message_delta.
func (d *Driver) streamEvent(ev *claudeEvent) {
	var e *claudeStreamEvent
	if !d.field(ev.Event, "event", &e) || e == nil {
		return
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			d.streamMsg, d.streamIn = e.Message.ID, nil
			if e.Message.Usage != nil {
				d.streamIn = e.Message.Usage.input()
			}
		}
	case "message_delta":
		if e.Usage == nil {
			return
		}
		id, in := agent.JSONString(ev.APIMessageID), e.Usage.input()
		if id == "" {
			id = d.streamMsg
		}
		if in == nil && id == d.streamMsg {
			in = d.streamIn
		}
		d.unsettle(id, in, e.Usage.OutputTokens)
		if d.behind {
			return
		}
		d.count(d.StepUsage(id, in, e.Usage.OutputTokens))
	}
}

// result ends a query: the usage not counted yet, a completed or failed
// claim, and the end of the turn.
func (d *Driver) result(ev *claudeEvent) {
	var (
		usage        *claudeUsage
		since, model map[string]claudeModelUsage
		isError      bool
	)
	if !d.field(ev.Usage, "usage", &usage) || !d.field(ev.SinceLastResult, "model_usage_since_last_result", &since) ||
		!d.field(ev.ModelUsage, "modelUsage", &model) || !d.field(ev.IsError, "is_error", &isError) {
		return
	}
	d.resultUsage(usage, since, model)
	var errs []string
	if len(ev.Errors) > 0 && ev.Errors[0] == '[' {
		_ = json.Unmarshal(ev.Errors, &errs)
	}
	text := agent.JSONString(ev.Result)
	if !isError && !strings.HasPrefix(ev.Subtype, "error") {
		d.Completed(text, "Claude Code finished the turn without a result text")
		d.EndTurn(false, "")
		return
	}
	reason, detail := text, strings.Join(errs, "\n")
	if strings.TrimSpace(reason) == "" {
		reason = "Claude Code ended the turn with " + orUnknown(ev.Subtype)
		if len(errs) > 0 {
			reason, detail = errs[0], strings.Join(errs[1:], "\n")
		}
	}
	d.EndTurn(true, d.Failed(reason, detail))
}

// rateLimit reports a rate limit that is not simply "allowed": a warning
// or a refusal is what the operator needs to know.
func (d *Driver) rateLimit(ev *claudeEvent) {
	var r *claudeRateLimit
	if !d.field(ev.RateLimit, "rate_limit_info", &r) {
		return
	}
	if r == nil {
		d.BadEvent("rate_limit_event without rate_limit_info")
		return
	}
	if r.Status == "allowed" {
		return
	}
	msg := fmt.Sprintf("Claude Code reports a rate limit (rate_limit_event): status %q", textclip.Fit(r.Status, agent.MaxTypeBytes))
	if r.RateLimitType != "" {
		msg += " for the " + textclip.Fit(r.RateLimitType, agent.MaxTypeBytes) + " limit"
	}
	if r.ResetsAt != nil && *r.ResetsAt > 0 && *r.ResetsAt < 1<<40 {
		msg += ", which resets at " + time.Unix(*r.ResetsAt, 0).UTC().Format(time.RFC3339)
	}
	d.Diagnose(agent.CodeProviderError, msg)
}

// controlRequest reads a request Claude Code waits on (--permission-prompt-tool
// stdio): permission to run a tool, or a question of AskUserQuestion.
func (d *Driver) controlRequest(ev *claudeEvent) {
	id := agent.JSONString(ev.RequestID)
	d.Native.RequestID = agent.NativeID(id)
	var r *claudeControlRequest
	if !d.field(ev.Request, "request", &r) {
		return
	}
	if r == nil {
		d.BadEvent("control_request without a request")
		return
	}
	if r.Subtype != "can_use_tool" {
		d.Diagnose(agent.CodeUnknownEvent, fmt.Sprintf("Claude Code control request subtype %q is not handled by this parser (%s); the CLI waits for an answer to it",
			textclip.Fit(r.Subtype, agent.MaxTypeBytes), d.AgentVersion()))
		return
	}
	// What Encode answers the request with comes out of this one reading
	// of the line, before its needs-input observation is recorded.
	d.remember(id, r)
	sig := &eventstore.NeedsInputSignal{
		RequestID: agent.InputRequestID(id, d.Prefix(), d.NextKey()),
		Tool:      &eventstore.ToolUse{Name: agent.ToolName(r.ToolName), Input: agent.ToolInput(r.Input)},
	}
	if r.ToolName == "AskUserQuestion" {
		sig.Kind = string(eventstore.InputQuestion)
		sig.Question, sig.Choices = askUserQuestion(r.Input)
	} else {
		sig.Kind = string(eventstore.InputPermission)
		sig.Question = permissionQuestion(r.ToolName, agent.Args(r.Input))
		sig.Choices = eventstore.PermissionChoices(true, suggested(r.Suggestions), true)
	}
	d.Observe(sig)
}

func countText(p *int64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatInt(*p, 10)
}

func orUnknown(s string) string {
	if s == "" {
		return "an error"
	}
	return textclip.Fit(s, 100)
}
