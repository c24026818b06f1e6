package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// claudeParser reads Claude Code `--output-format stream-json --verbose`.
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
// after it wait for the result too. Without model_usage_since_last_result
// (older CLIs) result.usage, the query's own total, takes its place.
// Everything is an increment: totals never go back, and a second process of
// the same execution (a resume) adds to the first. Input tokens are
// input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
type claudeParser struct {
	*stream
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

// claudeLineTypes are the line types the Claude Code parser reads, as of
// Claude Code 2.1.328.
var claudeLineTypes = []string{
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
	return sumCounts(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
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

type claudeControlRequest struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	Suggestions json.RawMessage `json:"permission_suggestions"`
}

func (p *claudeParser) Parse(line []byte) []Event {
	var ev claudeEvent
	if p.start(line, &ev) && !p.seen(ev.UUID) {
		p.lineType = ev.Type
		var version string
		if ev.Type == "system" && ev.Subtype == "init" {
			version = jsonString(ev.Version)
			var names []string
			if p.field(ev.SlashCommands, "slash_commands", &names) && len(names) > 0 {
				list := make([]Command, 0, len(names))
				for _, n := range names {
					list = append(list, Command{Name: n})
				}
				p.advertise(list)
			}
		}
		if ev.SessionID != "" || version != "" {
			p.learnSession(ev.SessionID, version)
		}
		p.native.MessageID = nativeID(ev.UUID)
		p.event(&ev)
	}
	return p.finish()
}

// field decodes a field of the line into v; an absent or null field leaves
// v as it is. A field of the wrong shape is a bad-event naming it.
func (p *claudeParser) field(raw json.RawMessage, name string, v any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	if err := json.Unmarshal(raw, v); err != nil {
		p.badEvent(fmt.Sprintf("%s %s: %v", clip(p.lineType, maxTypeBytes), name, err))
		return false
	}
	return true
}

func (p *claudeParser) event(ev *claudeEvent) {
	switch ev.Type {
	case "assistant":
		p.assistant(ev)
	case "user":
		p.user(ev)
	case "result":
		p.result(ev)
	case "system":
		p.system(ev)
	case "stream_event":
		p.streamEvent(ev)
	case "tool_progress":
		var name string
		if p.field(ev.ToolName, "tool_name", &name) {
			p.toolRunning(name)
		}
	case "rate_limit_event":
		p.rateLimit(ev)
	case "control_request":
		p.controlRequest(ev)
	case "auth_status":
		if msg := jsonString(ev.Error); msg != "" {
			p.diagnose(CodeProviderError, "Claude Code authentication failed: "+msg)
		}
	case "control_response", "control_cancel_request", "keep_alive", "tool_use_summary", "prompt_suggestion":
		// Answers to the runtime's own requests, a request withdrawn with
		// the tool call it was for, liveness, and summaries and
		// suggestions of what the lines around them already say.
	default:
		p.unknownLine(ev.Type)
	}
}

// system lines are session metadata (init, status, hooks, compaction,
// tasks); only a retried API request says something the journal needs.
func (p *claudeParser) system(ev *claudeEvent) {
	if ev.Subtype != "api_retry" {
		return
	}
	var attempt, maxRetries, status *int64
	if !p.field(ev.Attempt, "attempt", &attempt) || !p.field(ev.MaxRetries, "max_retries", &maxRetries) ||
		!p.field(ev.ErrorStatus, "error_status", &status) {
		return
	}
	what := jsonString(ev.Error)
	if status != nil {
		what = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", *status, what))
	}
	if what == "" {
		what = "a connection error"
	}
	p.diagnose(CodeProviderError, fmt.Sprintf("Claude Code retries the model request (attempt %s of %s) after %s",
		countText(attempt), countText(maxRetries), what))
}

// chat decodes the message of an assistant or user line and whether a
// subagent wrote it.
func (p *claudeParser) chat(ev *claudeEvent) (m *claudeMessage, sub, ok bool) {
	var parent *string
	if !p.field(ev.ParentToolUseID, "parent_tool_use_id", &parent) || !p.field(ev.Message, "message", &m) {
		return nil, false, false
	}
	return m, parent != nil && *parent != "", true
}

func (p *claudeParser) assistant(ev *claudeEvent) {
	m, sub, ok := p.chat(ev)
	if !ok {
		return
	}
	if m == nil {
		p.badEvent("assistant event without a message")
		return
	}
	blocks, text, ok := p.content(m.Content)
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
		p.message(text)
	}
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			if !quiet {
				p.message(b.Text)
			}
		case b.Type == "tool_use" || b.Type == "server_tool_use" || b.Type == "mcp_tool_use":
			act, target := toolActivity(b.Name, args(b.Input))
			p.openTool(b.ID, b.Name, act, target)
			if !sub && strings.EqualFold(b.Name, "TodoWrite") {
				p.todoWrite(b.ID, b.Input)
			}
		case strings.HasSuffix(b.Type, "tool_result"):
			// Server-side tools answer in the assistant message itself.
			p.closeTool(b.ToolUseID, claudeOutcome(&b))
		case b.Type == "thinking" || b.Type == "redacted_thinking":
			// Private reasoning is not an operator-facing message.
		default:
			p.unknown("assistant content block", b.Type)
		}
	}
	// The line's usage is the response's start, not its end. A subagent's
	// response has no stream events to end it: the totals wait for the
	// result.
	if sub && m.Usage != nil {
		p.behind = true
	}
}

// count adds increments to what was counted since the last result.
func (p *claudeParser) count(in, out int64) {
	p.window[0] = addSat(p.window[0], in)
	p.window[1] = addSat(p.window[1], out)
}

// user lines carry tool results, which close their calls; the rest is the
// prompt echoed back.
func (p *claudeParser) user(ev *claudeEvent) {
	m, _, ok := p.chat(ev)
	if !ok || m == nil {
		return
	}
	blocks, _, ok := p.content(m.Content)
	if !ok {
		return
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			p.closeTool(b.ToolUseID, claudeOutcome(&b))
		}
	}
}

// toolResult ends a call, and makes a successful TodoWrite's list the plan.
func (p *claudeParser) toolResult(b *claudeBlock) {
	out := claudeOutcome(b)
	p.closeTool(b.ToolUseID, out)
	if b.ToolUseID == "" {
		return
	}
	k := key(b.ToolUseID)
	if items, ok := p.plans.get(k); ok && items != nil {
		p.plans.put(k, nil)
		if !out.failed {
			p.reportPlan(items)
		}
	}
}

// claudeOutcome reads a tool_result block: is_error says the call failed,
// and the content says why. A shell command's result starts with "Exit
// code N".
func claudeOutcome(b *claudeBlock) outcome {
	if !b.IsError {
		return outcome{}
	}
	text := resultText(b.Content)
	if inner, ok := strings.CutPrefix(text, "<tool_use_error>"); ok {
		text = strings.TrimSuffix(inner, "</tool_use_error>")
	}
	out := outcome{failed: true, err: text}
	if rest, ok := strings.CutPrefix(text, "Exit code "); ok {
		digits, _, _ := strings.Cut(rest, "\n")
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
			out.exit = &n
		}
	}
	return out
}

// resultText is the text of a tool result's content, a string or text
// blocks joined by newlines, clipped to maxErrorBytes: the start says what
// went wrong.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return clip(s, maxErrorBytes)
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
		if b.Len() > maxErrorBytes {
			break
		}
	}
	return clip(b.String(), maxErrorBytes)
}

// todoWrite reads the todo list a TodoWrite call sets, the plan once the
// call succeeds.
func (p *claudeParser) todoWrite(id string, input json.RawMessage) {
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
			ID      string `json:"id"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil {
		p.badEvent("TodoWrite input is not a list of todos with content and status")
		return
	}
	items := make([]eventstore.PlanItem, 0, min(len(in.Todos), maxPlanItems))
	for _, t := range in.Todos {
		if it, ok := planItem(t.ID, t.Content, todoStatus(t.Status)); ok {
			items = append(items, it)
		}
	}
	p.planWhenDone(id, items)
}

// todoStatus maps the todo statuses of Claude Code (pending, in_progress,
// completed) and Copilot CLI (pending, in_progress, done, blocked) to plan
// item statuses. A status not known is open: the item is not done.
func todoStatus(s string) eventstore.PlanItemStatus {
	switch strings.ToLower(s) {
	case "in_progress", "in-progress", "inprogress", "active":
		return eventstore.PlanItemInProgress
	case "completed", "complete", "done":
		return eventstore.PlanItemDone
	case "cancelled", "canceled", "dropped", "removed":
		return eventstore.PlanItemDropped
	}
	return eventstore.PlanItemOpen
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

// streamEvent reads the partial messages of --include-partial-messages for
// the one thing the whole messages lack: a response's final usage, in its
// message_delta.
func (p *claudeParser) streamEvent(ev *claudeEvent) {
	var e *claudeStreamEvent
	if !p.field(ev.Event, "event", &e) || e == nil {
		return
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			p.streamMsg, p.streamIn = e.Message.ID, nil
			if e.Message.Usage != nil {
				p.streamIn = e.Message.Usage.input()
			}
		}
	case "message_delta":
		if e.Usage == nil || p.behind {
			return
		}
		id, in := jsonString(ev.APIMessageID), e.Usage.input()
		if id == "" {
			id = p.streamMsg
		}
		if in == nil && id == p.streamMsg {
			in = p.streamIn
		}
		p.count(p.stepUsage(id, in, e.Usage.OutputTokens))
	}
}

// result ends a query: the usage not counted yet, a completed or failed
// claim, and the end of the turn.
func (p *claudeParser) result(ev *claudeEvent) {
	var (
		usage   *claudeUsage
		since   map[string]claudeModelUsage
		isError bool
	)
	if !p.field(ev.Usage, "usage", &usage) || !p.field(ev.SinceLastResult, "model_usage_since_last_result", &since) ||
		!p.field(ev.IsError, "is_error", &isError) {
		return
	}
	p.resultUsage(usage, since)
	var errs []string
	if len(ev.Errors) > 0 && ev.Errors[0] == '[' {
		_ = json.Unmarshal(ev.Errors, &errs)
	}
	text := jsonString(ev.Result)
	if !isError && !strings.HasPrefix(ev.Subtype, "error") {
		p.completed(text, "Claude Code finished the turn without a result text")
		p.turnEnd(false, "")
		return
	}
	reason, detail := text, strings.Join(errs, "\n")
	if strings.TrimSpace(reason) == "" {
		reason = "Claude Code ended the turn with " + orUnknown(ev.Subtype)
		if len(errs) > 0 {
			reason, detail = errs[0], strings.Join(errs[1:], "\n")
		}
	}
	p.turnEnd(true, p.failed(reason, detail))
}

// resultUsage adds what the result says the server counted since the
// previous result beyond what the lines in between added.
func (p *claudeParser) resultUsage(usage *claudeUsage, since map[string]claudeModelUsage) {
	var in, out *int64
	switch {
	case since != nil:
		in, out = ptr[int64](0), ptr[int64](0)
		for _, m := range since {
			in = ptr(addSat(*in, deref(sumCounts(m.InputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens))))
			out = ptr(addSat(*out, deref(nonNegative(m.OutputTokens))))
		}
	case usage != nil:
		in, out = nonNegative(usage.input()), nonNegative(usage.OutputTokens)
	}
	var dIn, dOut int64
	if in != nil && *in > p.window[0] {
		dIn = *in - p.window[0]
	}
	if out != nil && *out > p.window[1] {
		dOut = *out - p.window[1]
	}
	p.increment(dIn, dOut)
	p.window, p.behind = [2]int64{}, false
}

// rateLimit reports a rate limit that is not simply "allowed": a warning
// or a refusal is what the operator needs to know.
func (p *claudeParser) rateLimit(ev *claudeEvent) {
	var r *claudeRateLimit
	if !p.field(ev.RateLimit, "rate_limit_info", &r) {
		return
	}
	if r == nil {
		p.badEvent("rate_limit_event without rate_limit_info")
		return
	}
	if r.Status == "allowed" {
		return
	}
	msg := fmt.Sprintf("Claude Code reports a rate limit (rate_limit_event): status %q", clip(r.Status, maxTypeBytes))
	if r.RateLimitType != "" {
		msg += " for the " + clip(r.RateLimitType, maxTypeBytes) + " limit"
	}
	if r.ResetsAt != nil && *r.ResetsAt > 0 && *r.ResetsAt < 1<<40 {
		msg += ", which resets at " + time.Unix(*r.ResetsAt, 0).UTC().Format(time.RFC3339)
	}
	p.diagnose(CodeProviderError, msg)
}

// controlRequest reads a request Claude Code waits on (--permission-prompt-tool
// stdio): permission to run a tool, or a question of AskUserQuestion.
func (p *claudeParser) controlRequest(ev *claudeEvent) {
	id := jsonString(ev.RequestID)
	p.native.RequestID = nativeID(id)
	var r *claudeControlRequest
	if !p.field(ev.Request, "request", &r) {
		return
	}
	if r == nil {
		p.badEvent("control_request without a request")
		return
	}
	if r.Subtype != "can_use_tool" {
		p.diagnose(CodeUnknownEvent, fmt.Sprintf("Claude Code control request subtype %q is not handled by this parser (%s); the CLI waits for an answer to it",
			clip(r.Subtype, maxTypeBytes), p.agent()))
		return
	}
	sig := &eventstore.NeedsInputSignal{
		RequestID: inputRequestID(id, p.prefix, p.nextKey()),
		Tool:      &eventstore.ToolUse{Name: toolName(r.ToolName), Input: toolInput(r.Input)},
	}
	if r.ToolName == "AskUserQuestion" {
		sig.Kind = string(eventstore.InputQuestion)
		sig.Question, sig.Choices = askUserQuestion(r.Input)
	} else {
		sig.Kind = string(eventstore.InputPermission)
		sig.Question = permissionQuestion(r.ToolName, args(r.Input))
		sig.Choices = []string{eventstore.AnswerAllow, eventstore.AnswerDeny}
		if suggested(r.Suggestions) {
			sig.Choices = append(sig.Choices, eventstore.AnswerAllowAlways)
		}
	}
	p.observe(sig)
}

// inputRequestID is the request id of a needs-input signal: the CLI's own
// when the journal can keep it, else one derived from it (a hash of a long
// id, the line's place for a missing one), so that a replay derives the
// same.
func inputRequestID(id, prefix, lineKey string) string {
	if nativeID(id) != "" {
		return id
	}
	if id == "" {
		return prefix + "-" + lineKey + "-request"
	}
	sum := sha256.Sum256([]byte(id))
	return "request-" + hex.EncodeToString(sum[:16])
}

// toolInput decodes a tool's input for the runtime, which answers with it.
// Numbers keep their exact text. An input that is not an object, or too
// big for a record, is left out.
func toolInput(raw json.RawMessage) map[string]any {
	if len(raw) == 0 || raw[0] != '{' || len(raw) > maxToolInputBytes {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// permissionQuestion is the one line that asks for permission: the tool
// and its main argument.
func permissionQuestion(tool string, a map[string]json.RawMessage) string {
	name := oneLine(tool, maxTypeBytes)
	if name == "" {
		name = "an unnamed tool"
	}
	if arg := oneLine(mainArg(a), 200); arg != "" {
		return "Allow " + name + ": " + arg + "?"
	}
	return "Allow " + name + "?"
}

// askUserQuestion reads AskUserQuestion's input: the question texts and
// the labels of their options.
func askUserQuestion(raw json.RawMessage) (string, []string) {
	var in struct {
		Questions []struct {
			Question string `json:"question"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(raw, &in)
	var texts, choices []string
	for _, q := range in.Questions {
		if t := strings.TrimSpace(q.Question); t != "" {
			texts = append(texts, t)
		}
		for _, o := range q.Options {
			if l := strings.TrimSpace(o.Label); l != "" && len(choices) < maxChoices {
				choices = append(choices, clip(l, maxLabelBytes))
			}
		}
	}
	question := clip(strings.Join(texts, "\n"), maxSummaryBytes)
	if question == "" {
		question = "Claude Code asks a question without text"
	}
	return question, choices
}

// suggested reports a non-empty permission_suggestions array: Claude Code
// then offers to remember the answer.
func suggested(raw json.RawMessage) bool {
	var v []json.RawMessage
	return len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &v) == nil && len(v) > 0
}

// jsonString reads a JSON string; anything else is "".
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
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
	return clip(s, 100)
}
