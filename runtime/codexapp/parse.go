package codexapp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/codex"
)

// reader is what the Driver keeps of the process's stdout: the exec
// parser, which reads each notification once rendered as an exec event.
//
// `codex exec --json` is itself a rendering of these notifications
// (thread/started is thread.started, item/completed item.completed, a
// commandExecution item a command_execution one, turn/completed
// turn.completed or turn.failed): rendering them the same way here and
// reading them with the exec parser makes a Codex tool call, message,
// plan, error or turn end the same records whichever way Codex runs.
// What exec has no event for (usage as it grows, approval requests, an
// interrupted turn, responses) the reader reports itself, on the same
// stream of ids.
type reader struct {
	exec *codex.Driver
}

// lineTypes are the methods the reader knows, as of Codex 0.169.0:
// requests Codex sends, and its notifications. Responses have none.
var lineTypes = []string{
	"configWarning", "deprecationNotice", "error", "item/commandExecution/requestApproval",
	"item/completed", "item/fileChange/requestApproval", "item/started", "serverRequest/resolved",
	"thread/started", "thread/tokenUsage/updated", "turn/completed", "turn/plan/updated",
	"turn/started", "warning",
}

// silent are notifications that say nothing the journal keeps: session
// metadata, and the streamed deltas of what also arrives whole (asked not
// to be sent, see quiet).
var silent = map[string]bool{
	"thread/status/changed": true, "thread/settings/updated": true,
	"mcpServer/startupStatus/updated": true, "account/updated": true, "account/rateLimits/updated": true,
	"thread/name/updated": true, "skills/changed": true, "remoteControl/status/changed": true,
	"app/list/updated": true, "thread/compacted": true, "hook/started": true, "hook/completed": true,
	"item/agentMessage/delta": true, "item/plan/delta": true,
	"item/reasoning/summaryTextDelta": true, "item/reasoning/summaryPartAdded": true,
	"item/reasoning/textDelta": true, "item/commandExecution/outputDelta": true,
	"item/fileChange/outputDelta": true, "item/fileChange/patchUpdated": true, "turn/diff/updated": true,
	"thread/readState/changed": true, "mcpServer/event/stream/notification": true,
}

// rpcMessage is any JSON-RPC message: a request (method and id), a
// notification (method) or a response (id, result or error).
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// params are the fields of the notifications and requests the reader
// reads; each has some.
type params struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Thread   *struct {
		ID string `json:"id"`
	} `json:"thread"`
	Turn *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"turn"`
	Item       *item `json:"item"`
	TokenUsage *struct {
		Total struct {
			InputTokens  *int64 `json:"inputTokens"`
			OutputTokens *int64 `json:"outputTokens"`
		} `json:"total"`
	} `json:"tokenUsage"`
	Plan []struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	} `json:"plan"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message    string          `json:"message"`
	Summary    string          `json:"summary"`
	ItemID     string          `json:"itemId"`
	RequestID  json.RawMessage `json:"requestId"`
	ApprovalID string          `json:"approvalId"`
	Command    string          `json:"command"`
	Cwd        string          `json:"cwd"`
	Reason     string          `json:"reason"`
	GrantRoot  string          `json:"grantRoot"`
}

// item is a ThreadItem of the app-server protocol (v2).
type item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Text             string          `json:"text"`
	Status           string          `json:"status"`
	Command          string          `json:"command"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int64          `json:"exitCode"`
	Changes          []change        `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Error            json.RawMessage `json:"error"`
	Result           json.RawMessage `json:"result"`
	Query            string          `json:"query"`
	Action           *struct {
		Type  string `json:"type"`
		Query string `json:"query"`
		URL   string `json:"url"`
	} `json:"action"`
}

type change struct {
	Path string `json:"path"`
	Kind struct {
		Type string `json:"type"`
	} `json:"kind"`
}

// Parse reads one line of Codex's stdout: a response to the client, a
// request Codex waits on, or a notification.
func (d *Driver) Parse(line []byte) []agent.Event {
	var m rpcMessage
	if len(line) > agent.MaxLineBytes || json.Unmarshal(bytes.TrimSpace(line), &m) != nil {
		// Blank, too long, not JSON or not an object: the stream says
		// which.
		return d.local(line, "", nil)
	}
	if m.Method == "" && len(m.ID) == 0 {
		// JSON of another kind (Codex writes no "jsonrpc" member, so a
		// message is known by its method or id): named by its type, like
		// any other line the parser does not know.
		var k struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(bytes.TrimSpace(line), &k)
		return d.local(line, k.Type, func(s *agent.Stream) {
			if slices.Contains(lineTypes, k.Type) {
				s.BadEvent(fmt.Sprintf("a %q line that is neither a request, a notification nor a response", k.Type))
				return
			}
			s.UnknownLine(k.Type)
		})
	}
	var p params
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return d.local(line, m.Method, func(s *agent.Stream) { s.BadEvent("params: " + err.Error()) })
		}
	}
	switch {
	case m.Method == "":
		return d.response(line, &m)
	case len(m.ID) > 0 && string(m.ID) != "null":
		return d.request(line, &m, &p)
	}
	return d.notification(line, m.Method, &p)
}

// Flush reports an error notification held back when the output ends
// right after it (the exec parser's rule).
func (d *Driver) Flush() []agent.Event { return d.out.exec.Flush() }

// local reads a line the reader reports itself, by fn, on the exec
// parser's stream of ids.
func (d *Driver) local(line []byte, method string, fn func(s *agent.Stream)) []agent.Event {
	s := d.out.exec.Stream
	var v rpcMessage
	if s.Decode(line, &v) && fn != nil {
		s.LineType = method
		fn(s)
	}
	return s.Finish()
}

// exec reads a notification as the exec event it renders to, and gives
// its observations Codex's turn: native.turnId, and for a message, the
// turn as native.messageId, the id thread/fork forks through.
func (d *Driver) exec(ev map[string]any, turn string) []agent.Event {
	b, err := json.Marshal(ev)
	if err != nil {
		b = []byte("{}")
	}
	evs := d.out.exec.Parse(b)
	if turn == "" {
		return evs
	}
	for _, e := range evs {
		o := e.Observation
		if o == nil {
			continue
		}
		if o.Native == nil {
			o.Native = &eventstore.NativeIDs{}
		}
		o.Native.TurnID = agent.NativeID(turn)
		if o.Signal != nil && o.Signal.Type == eventstore.SignalMessage {
			o.Native.MessageID = agent.NativeID(turn)
		}
	}
	return evs
}

// response reads a response to the client's request: it wakes the
// request's caller, and a thread in it names the session.
func (d *Driver) response(line []byte, m *rpcMessage) []agent.Event {
	d.answered(m.ID, response{result: m.Result, err: m.Error})
	var r params
	_ = json.Unmarshal(m.Result, &r)
	return d.local(line, "", func(s *agent.Stream) {
		if r.Thread != nil && r.Thread.ID != "" {
			s.LearnSession(r.Thread.ID, "")
		}
	})
}

// notification reads what Codex says of its thread.
func (d *Driver) notification(line []byte, method string, p *params) []agent.Event {
	switch method {
	case "thread/started":
		if p.Thread == nil || p.Thread.ID == "" {
			return d.local(line, method, func(s *agent.Stream) { s.BadEvent("thread/started without a thread id") })
		}
		return d.exec(map[string]any{"type": "thread.started", "thread_id": p.Thread.ID}, "")
	case "turn/started":
		if p.Turn != nil {
			d.mu.Lock()
			if d.ended != p.Turn.ID {
				d.turn = p.Turn.ID
			}
			d.mu.Unlock()
			return d.exec(map[string]any{"type": "turn.started"}, p.Turn.ID)
		}
		return d.exec(map[string]any{"type": "turn.started"}, "")
	case "item/started", "item/completed":
		if p.Item == nil {
			return d.local(line, method, func(s *agent.Stream) { s.BadEvent(method + " without an item") })
		}
		it := execItem(p.Item)
		if it == nil {
			return d.local(line, method, nil)
		}
		typ := "item.started"
		if method == "item/completed" {
			typ = "item.completed"
		}
		return d.exec(map[string]any{"type": typ, "item": it}, p.TurnID)
	case "turn/plan/updated":
		todo := make([]map[string]any, 0, len(p.Plan))
		for _, s := range p.Plan {
			todo = append(todo, map[string]any{"text": s.Step, "completed": s.Status == "completed"})
		}
		return d.exec(map[string]any{"type": "item.updated", "item": map[string]any{"id": "plan-" + p.TurnID, "type": "todo_list", "items": todo}}, p.TurnID)
	case "thread/tokenUsage/updated":
		// The thread's running totals, after each model request: input
		// already counts cached input, output reasoning output, as in
		// exec's turn.completed.
		return d.local(line, method, func(s *agent.Stream) {
			if u := p.TokenUsage; u != nil {
				s.CumulativeUsage(u.Total.InputTokens, u.Total.OutputTokens)
			}
		})
	case "turn/completed":
		return d.turnCompleted(line, p)
	case "serverRequest/resolved":
		// Codex no longer waits on the request (its turn was
		// interrupted): an answer to it has nothing to answer.
		d.resolved(p.RequestID)
		return d.local(line, method, nil)
	case "error":
		msg := ""
		if p.Error != nil {
			msg = p.Error.Message
		}
		return d.exec(map[string]any{"type": "error", "message": msg}, p.TurnID)
	case "warning", "configWarning", "deprecationNotice":
		msg := p.Message
		if msg == "" {
			msg = p.Summary
		}
		return d.local(line, method, func(s *agent.Stream) {
			s.Diagnose(agent.CodeProviderError, "Codex warned ("+method+"): "+textclip.Fit(msg, agent.MaxErrorBytes))
		})
	}
	if silent[method] {
		return d.local(line, method, nil)
	}
	return d.local(line, method, func(s *agent.Stream) { s.UnknownLine(method) })
}

// turnCompleted reads the end of a turn: completed or failed as exec
// reports them; an interrupted turn ends without a claim, as the operator
// asked.
func (d *Driver) turnCompleted(line []byte, p *params) []agent.Event {
	if p.Turn == nil {
		return d.local(line, "turn/completed", func(s *agent.Stream) { s.BadEvent("turn/completed without a turn") })
	}
	d.mu.Lock()
	if d.turn == p.Turn.ID {
		d.turn = ""
	}
	d.ended = p.Turn.ID
	d.mu.Unlock()
	switch p.Turn.Status {
	case "failed":
		msg := ""
		if p.Turn.Error != nil {
			msg = p.Turn.Error.Message
		}
		return d.exec(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}}, p.Turn.ID)
	case "interrupted":
		return d.local(line, "turn/completed", func(s *agent.Stream) { s.EndTurn(false, "") })
	}
	return d.exec(map[string]any{"type": "turn.completed"}, p.Turn.ID)
}

// execItem renders a ThreadItem as the exec item Codex prints for it; nil
// for an item that says nothing the journal keeps (the user's own
// message, hooks, compaction). A type exec does not know keeps its name,
// and the exec parser reports it as unknown.
func execItem(it *item) map[string]any {
	status := it.Status
	if status == "inProgress" {
		status = "in_progress"
	}
	out := map[string]any{"id": it.ID, "type": it.Type}
	switch it.Type {
	case "userMessage", "hookPrompt", "contextCompaction", "sleep", "plan", "enteredReviewMode",
		"exitedReviewMode", "subAgentActivity", "functionCallOutput":
		return nil
	case "agentMessage":
		out["type"], out["text"] = "agent_message", it.Text
	case "reasoning":
		out["type"] = "reasoning"
	case "commandExecution":
		out["type"], out["command"], out["status"] = "command_execution", it.Command, status
		if it.AggregatedOutput != nil {
			out["aggregated_output"] = *it.AggregatedOutput
		}
		if it.ExitCode != nil {
			out["exit_code"] = *it.ExitCode
		}
	case "fileChange":
		changes := make([]map[string]any, 0, len(it.Changes))
		for _, c := range it.Changes {
			changes = append(changes, map[string]any{"path": c.Path, "kind": c.Kind.Type})
		}
		out["type"], out["changes"], out["status"] = "file_change", changes, status
		if status == "declined" {
			// exec never declines a change (it cannot ask), and reads
			// only a failed one as failed.
			out["status"], out["error"] = "failed", map[string]any{"message": "the file change was declined"}
		}
	case "mcpToolCall":
		out["type"], out["server"], out["tool"], out["status"] = "mcp_tool_call", it.Server, it.Tool, status
		if len(it.Arguments) > 0 {
			out["arguments"] = it.Arguments
		}
		if len(it.Result) > 0 && string(it.Result) != "null" {
			out["result"] = it.Result
		}
		if len(it.Error) > 0 && string(it.Error) != "null" {
			out["error"] = it.Error
		}
	case "collabAgentToolCall":
		out["type"], out["tool"], out["status"] = "collab_tool_call", it.Tool, status
	case "webSearch":
		out["type"], out["query"] = "web_search", it.Query
		if a := it.Action; a != nil {
			typ := map[string]string{"openPage": "open_page", "findInPage": "find_in_page"}[a.Type]
			if typ == "" {
				typ = a.Type
			}
			out["action"] = map[string]any{"type": typ, "query": a.Query, "url": a.URL}
		}
	}
	return out
}

// request reads a request Codex waits on. Approvals of a command or a
// file change become permission requests answered by the operator
// (Encode); anything else is refused at once, so that the turn does not
// wait on an answer that will never come.
func (d *Driver) request(line []byte, m *rpcMessage, p *params) []agent.Event {
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		return d.local(line, m.Method, func(s *agent.Stream) { d.approvalAsked(s, m, p) })
	}
	err := d.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601,
		"message": fmt.Sprintf("this client does not answer %s", m.Method)}})
	return d.local(line, m.Method, func(s *agent.Stream) {
		msg := fmt.Sprintf("Codex asked %s, which this client does not answer: it was refused", textclip.Fit(m.Method, agent.MaxTypeBytes))
		if err != nil {
			msg += " (the refusal could not be written: " + err.Error() + ")"
		}
		s.Diagnose(codeRefused, msg)
	})
}

// approvalAsked reports an approval request as a needs-input permission
// request, after remembering what its answer responds to. The request id
// is the approval's own, else its item's (the tool call's), which both
// the call's activity and the answer name.
func (d *Driver) approvalAsked(s *agent.Stream, m *rpcMessage, p *params) {
	native := p.ApprovalID
	if native == "" {
		native = p.ItemID
	}
	id := agent.InputRequestID(native, s.Prefix(), s.NextKey())
	d.mu.Lock()
	d.pending[id] = &approval{rpcID: m.ID}
	d.mu.Unlock()
	s.Native.TurnID = agent.NativeID(p.TurnID)
	s.Native.RequestID = agent.NativeID(string(m.ID))
	sig := &eventstore.NeedsInputSignal{RequestID: id, Kind: string(eventstore.InputPermission),
		Choices: []string{eventstore.AnswerAllow, eventstore.AnswerDeny, eventstore.AnswerAllowAlways}}
	input := map[string]any{}
	if p.Reason != "" {
		input["reason"] = p.Reason
	}
	if m.Method == "item/commandExecution/requestApproval" {
		sig.Question = "Allow Codex to run a command?"
		if c := agent.OneLine(p.Command, 200); c != "" {
			sig.Question = "Allow Codex to run: " + c + "?"
		}
		input["command"] = p.Command
		if p.Cwd != "" {
			input["cwd"] = p.Cwd
		}
		sig.Tool = &eventstore.ToolUse{Name: "command_execution", Input: input}
	} else {
		sig.Question = "Allow Codex to change files?"
		if p.GrantRoot != "" {
			input["grantRoot"] = p.GrantRoot
			sig.Question = "Allow Codex to write under " + agent.OneLine(p.GrantRoot, 200) + "?"
		}
		sig.Tool = &eventstore.ToolUse{Name: "file_change", Input: input}
	}
	if p.Reason != "" {
		sig.Question += " (" + agent.OneLine(p.Reason, 200) + ")"
	}
	s.Observe(sig)
}
