package acp

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/internal/textclip"

	protocol "github.com/agentjournal/agentjournal/acp"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// lineTypes are the methods (and "response") the ACP parser reads.
var lineTypes = []string{"fs/read_text_file", "fs/write_text_file", "response", "session/request_permission", "session/update", "terminal/create"}

// acpQuiet are the methods the client answers (or refuses) itself without
// anything to record here: the adapter reports a refusal.
var acpQuiet = map[string]bool{"terminal/output": true, "terminal/release": true,
	"terminal/wait_for_exit": true, "terminal/kill": true}

// output is what the Driver keeps of the agent process's stdout: its
// JSON-RPC messages. Agent message chunks are held until the message ends
// (another kind of message, a chunk of another message, the turn's end)
// and reported as one message signal.
type output struct {
	*agent.Stream
	text    strings.Builder
	textID  string // the messageId of the held chunks
	last    string // the kind of the last update
	message string // the last message reported in this turn
	// outputs hold the content a tool call's updates carried before its
	// end, by call id: ACP may send the content in one update and the
	// status in the next, which carries none.
	outputs agent.Recent[string]
}

// Phases of the status observations the ACP client records about its
// session. Persisted: never rename one.
const (
	// PhaseSessionLoaded: the agent loaded the session resumed
	// (session/load); the history it replayed was not journaled again.
	PhaseSessionLoaded = "acp-session-loaded"
	// PhaseHistoryReconstructed: the agent does not load sessions, so
	// a new one got the conversation retold ahead of its first prompt.
	PhaseHistoryReconstructed = "acp-history-reconstructed"
)

// loading tells the parser that the client sent session/load of session
// as JSON-RPC request id (its JSON text). The session's updates from then
// on are the agent replaying its history, which the resumed execution's
// journal holds already: they are counted, not journaled. The replay ends
// with the client's first prompt (prompting), not with the load's
// response: ACP has the agent replay before it answers, but Gemini CLI
// answers first and replays after.
func (d *Driver) loading(id, session string) {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	d.loadID, d.loadSession, d.replaying, d.replayed = id, session, true, 0
}

// prompting tells the parser that the client is sending a prompt: what
// the agent sends from now on is this execution's.
func (d *Driver) prompting() {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	d.replaying = false
}

// replay reads a line while a loaded session may still be replayed: it
// reports whether the line was the load's (a replayed update, the
// response).
func (d *Driver) replay(m protocol.Message) bool {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	switch {
	case m.Update != nil && d.replaying && m.Update.Session == d.loadSession:
		if d.loadID != "" {
			d.replayed++
		}
		return true
	case d.loadID == "" || m.Method != "" || m.ID != d.loadID:
		return false
	}
	session, n := d.loadSession, d.replayed
	d.loadID = ""
	if m.Error != nil {
		// Diagnosed as any error answer is; the client starts a new
		// session instead.
		d.replaying = false
		return false
	}
	d.LearnSession(session, "")
	d.Observe(&eventstore.StatusSignal{Phase: PhaseSessionLoaded,
		Summary: fmt.Sprintf("loaded the ACP session %s (session/load); the history it replays (%d updates before its answer) is not journaled again: the resumed execution's journal holds it", textclip.Fit(session, agent.MaxKeyBytes), n)})
	return true
}

// Parse reads one line of the agent's stdout: a JSON-RPC message.
func (d *Driver) Parse(line []byte) []agent.Event {
	d.feed(line)
	var raw map[string]any
	if !d.Decode(line, &raw) {
		return d.Finish()
	}
	m, err := protocol.Decode(d.Raw())
	d.LineType = m.Method
	if d.LineType == "" {
		d.LineType = "response"
	}
	if err != nil {
		d.flushText()
		if errors.Is(err, protocol.ErrNotJSONRPC) {
			// JSON of another kind: named by its type, like any other
			// line type the parser does not know.
			typ, _ := raw["type"].(string)
			if slices.Contains(lineTypes, typ) {
				d.LineType = typ
				d.BadEvent(fmt.Sprintf("a %q line that is not JSON-RPC 2.0: %v", typ, err))
			} else {
				d.UnknownLine(typ)
			}
		} else {
			d.BadEvent(fmt.Sprintf("%s: %v", textclip.Fit(d.LineType, agent.MaxTypeBytes), err))
		}
		return d.Finish()
	}
	if d.replay(m) {
		return d.Finish()
	}
	if m.Update == nil || m.Update.Kind != protocol.UpdateAgentMessage {
		d.flushText()
	}
	switch {
	case m.Update != nil:
		d.update(m.Update)
	case m.Permission != nil:
		d.permissionAsked(m.ID, m.Permission)
	case m.File != nil:
		d.file(m.File)
	case m.Command != nil:
		d.Activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting, CurrentTarget: agent.CommandTarget(m.Command.Line)})
	case m.Result != nil:
		d.result(m.Result)
	case m.Error != nil:
		d.Diagnose(agent.CodeProviderError, fmt.Sprintf("the ACP agent answered request %s with error %d: %s", textclip.Fit(m.ID, agent.MaxTypeBytes), m.Error.Code, textclip.Fit(m.Error.Message, agent.MaxSummaryBytes)))
	case acpQuiet[m.Method]:
	default:
		d.UnknownLine(m.Method)
	}
	return d.Finish()
}

// Flush reports a message still held when the output ends.
func (d *Driver) Flush() []agent.Event {
	d.NextLine()
	d.flushText()
	return d.Finish()
}

func (d *Driver) flushText() {
	if d.text.Len() == 0 {
		return
	}
	text := d.text.String()
	d.text.Reset()
	d.textID = ""
	if strings.TrimSpace(text) != "" {
		d.message = text
	}
	d.Message(text)
}

func (d *Driver) update(u *protocol.Update) {
	if d.SessionID() != "" && u.Session != d.SessionID() {
		d.BadEvent(fmt.Sprintf("session/update for session %q, not this execution's %q; ignored", textclip.Fit(u.Session, agent.MaxKeyBytes), d.SessionID()))
		return
	}
	last := d.last
	d.last = u.Kind
	switch u.Kind {
	case protocol.UpdateAgentMessage:
		if d.text.Len() > 0 && u.MessageID != d.textID {
			d.flushText()
		}
		d.textID = u.MessageID
		if d.text.Len() < agent.MaxTextBytes {
			d.text.WriteString(u.Text)
		}
	case protocol.UpdateThought:
		if last != protocol.UpdateThought {
			d.Activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityReasoning})
		}
	case protocol.UpdateToolCall, protocol.UpdateToolCallEdit:
		d.tool(u.Kind, u.Tool)
	case protocol.UpdateCommands:
		list := make([]agent.Command, 0, len(u.Commands))
		for _, c := range u.Commands {
			list = append(list, agent.Command{Name: c.Name, Description: c.Description, Hint: c.Hint})
		}
		d.Advertise(list)
	case protocol.UpdatePlan:
		items := make([]eventstore.PlanItem, 0, len(u.Plan))
		for _, e := range u.Plan {
			if it, ok := agent.NewPlanItem("", e.Content, acpPlanStatus(e.Status)); ok {
				items = append(items, it)
			}
		}
		d.ReportPlan(items)
	}
	// Other updates (the user's own chunks, commands, modes, the context
	// window's size) say nothing the journal keeps.
}

func acpPlanStatus(s string) eventstore.PlanItemStatus {
	switch s {
	case "in_progress":
		return eventstore.PlanItemInProgress
	case "completed":
		return eventstore.PlanItemDone
	}
	return eventstore.PlanItemOpen
}

// acpToolActivity maps ACP's tool kinds to an activity and a target.
func acpToolActivity(t *protocol.ToolCall) (eventstore.Activity, *eventstore.Target) {
	path := ""
	if len(t.Paths) > 0 {
		path = t.Paths[0]
	}
	a := agent.Args(t.Input)
	switch t.Kind {
	case "read", "search", "fetch":
		if path != "" {
			return eventstore.ActivityReviewing, agent.FileTarget(path)
		}
		if u := agent.StringArg(a, "url"); u != "" {
			return eventstore.ActivityReviewing, agent.URLTarget(u)
		}
		return eventstore.ActivityReviewing, agent.ToolTarget(t.Title)
	case "edit", "delete", "move":
		if path != "" {
			return eventstore.ActivityEditing, agent.FileTarget(path)
		}
		return eventstore.ActivityEditing, agent.ToolTarget(t.Title)
	case "execute":
		if cmd := agent.StringArg(a, "command", "cmd"); cmd != "" {
			return eventstore.ActivityExecuting, agent.CommandTarget(cmd)
		}
		return eventstore.ActivityExecuting, agent.CommandTarget(t.Title)
	case "think", "switch_mode":
		return eventstore.ActivityPlanning, agent.ToolTarget(t.Title)
	}
	if path != "" {
		return eventstore.ActivityExecuting, agent.FileTarget(path)
	}
	return eventstore.ActivityExecuting, agent.ToolTarget(t.Title)
}

func (d *Driver) tool(kind string, t *protocol.ToolCall) {
	// An update of a call never announced opens it too: Gemini CLI sends
	// no tool_call for the tools it runs, only their completed update,
	// and a call has to be open to be closed. OpenTool opens a call once,
	// so an update of one already open or closed adds nothing here.
	if kind == protocol.UpdateToolCall || t.Status == "completed" || t.Status == "failed" || t.Status == "in_progress" {
		name := t.Title
		if name == "" {
			name = t.Kind
		}
		act, target := acpToolActivity(t)
		d.OpenTool(t.ID, name, act, target)
	}
	key := agent.Key(t.ID)
	output := t.Output
	if output == "" {
		output, _ = d.outputs.Get(key)
	}
	switch t.Status {
	case "completed", "failed":
		if _, held := d.outputs.Get(key); held {
			d.outputs.Put(key, "")
		}
	default:
		if t.Output != "" && t.ID != "" {
			d.outputs.Put(key, t.Output)
		}
	}
	switch t.Status {
	case "completed":
		d.CloseTool(t.ID, agent.Outcome{Output: output})
	case "failed":
		msg := output
		if strings.TrimSpace(msg) == "" {
			msg = "the ACP agent reported the tool call failed"
		}
		d.CloseTool(t.ID, agent.Outcome{Failed: true, Err: msg, Output: output})
	}
}

// permissionAsked reads session/request_permission: the agent waits for the
// answer, which the adapter sends as the JSON-RPC response. The request id
// is the tool call's, which both sides know.
func (d *Driver) permissionAsked(rpcID string, r *protocol.PermissionRequest) {
	if d.SessionID() != "" && r.Session != d.SessionID() {
		d.BadEvent(fmt.Sprintf("session/request_permission for session %q, not this execution's %q", textclip.Fit(r.Session, agent.MaxKeyBytes), d.SessionID()))
		return
	}
	d.Native.RequestID = agent.NativeID(rpcID)
	name := r.Tool.Title
	if name == "" {
		name = r.Tool.Kind
	}
	sig := &eventstore.NeedsInputSignal{
		RequestID: agent.InputRequestID(r.Tool.ID, d.Prefix(), d.NextKey()),
		Kind:      string(eventstore.InputPermission),
		Question:  permissionQuestion(name, &r.Tool),
		Tool:      &eventstore.ToolUse{Name: agent.ToolName(name), Input: agent.ToolInput(r.Tool.Input)},
		Choices:   choices(r.Options),
	}
	d.Observe(sig)
}

// permissionQuestion is the one line that asks for permission: the call's
// title, which is the model's own words ("write note.txt and list the
// directory"), and what the call really does, from its raw input (the
// command, the file) or else its first location.
func permissionQuestion(name string, t *protocol.ToolCall) string {
	name = agent.OneLine(name, 200)
	if name == "" {
		name = "an unnamed tool call"
	}
	subject := agent.MainArg(agent.Args(t.Input))
	if subject == "" && len(t.Paths) > 0 {
		subject = t.Paths[0]
	}
	subject = agent.OneLine(subject, 200)
	if subject == "" || subject == name {
		return "Allow " + name + "?"
	}
	return "Allow " + name + ": " + subject + "?"
}

// choices are the journal's answers to a permission request, in the one
// order every agent's are given (eventstore.PermissionChoices): allow
// (allow_once), allow-always (allow_always), deny (reject_once or
// reject_always), whatever order the agent offers them in.
func choices(opts []protocol.PermissionOption) []string {
	var allow, always, deny bool
	for _, o := range opts {
		switch o.Kind {
		case protocol.AllowOnce:
			allow = true
		case protocol.AllowAlways:
			always = true
		case protocol.RejectOnce, protocol.RejectAlways:
			deny = true
		}
	}
	return eventstore.PermissionChoices(allow, always, deny)
}

func (d *Driver) file(f *protocol.FileRequest) {
	if f.Write {
		d.Activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityEditing, CurrentTarget: agent.FileTarget(f.Path)})
		return
	}
	d.Activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityReviewing, CurrentTarget: agent.FileTarget(f.Path)})
}

// result reads a response: session/new's names the session,
// session/prompt's ends the turn.
func (d *Driver) result(r *protocol.Result) {
	if r.Session != "" {
		d.LearnSession(r.Session, "")
	}
	if r.StopReason == "" {
		return
	}
	if u := r.Usage; u != nil {
		d.Increment(u.Input, u.Output)
	}
	message := d.message
	d.message = ""
	switch r.StopReason {
	case "end_turn":
		d.Completed(message, "the ACP agent ended the turn")
		d.EndTurn(false, "")
	case "cancelled":
		d.EndTurn(false, "")
	default:
		// max_tokens, max_turn_requests, refusal: the turn stopped short.
		d.EndTurn(true, d.Failed("the ACP agent stopped the turn: "+r.StopReason, message))
	}
}

// maxHeldOutputs bounds the tool call contents held until their calls end.
const maxHeldOutputs = 64
