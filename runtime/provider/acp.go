package provider

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/acp"
	"github.com/agentjournal/agentjournal/eventstore"
)

// ACP names the parser of Agent Client Protocol agents (any agent run by
// the acp adapter): it reads the JSON-RPC messages on the agent's stdout.
const ACP = "acp"

// acpLineTypes are the methods (and "response") the ACP parser reads.
var acpLineTypes = []string{"fs/read_text_file", "fs/write_text_file", "response", "session/request_permission", "session/update", "terminal/create"}

// acpQuiet are the methods the client answers (or refuses) itself without
// anything to record here: the adapter reports a refusal.
var acpQuiet = map[string]bool{"terminal/output": true, "terminal/release": true,
	"terminal/wait_for_exit": true, "terminal/kill": true}

// acpParser reads an ACP agent's messages. Agent message chunks are held
// until the message ends (another kind of message, a chunk of another
// message, the turn's end) and reported as one message signal.
type acpParser struct {
	*stream
	text    strings.Builder
	textID  string // the messageId of the held chunks
	last    string // the kind of the last update
	message string // the last message reported in this turn

	// loadMu guards the replay of a loaded session, which the client
	// announces from its own goroutine (Loading, Prompting) while Parse
	// reads the agent's lines: the session/load's JSON-RPC id (until its
	// response) and session, whether the replay may still run, and the
	// updates replayed before the response.
	loadMu      sync.Mutex
	loadID      string
	loadSession string
	replaying   bool
	replayed    int
}

// Phases of the status observations the ACP client records about its
// session. Persisted: never rename one.
const (
	// PhaseACPSessionLoaded: the agent loaded the session resumed
	// (session/load); the history it replayed was not journaled again.
	PhaseACPSessionLoaded = "acp-session-loaded"
	// PhaseACPHistoryReconstructed: the agent does not load sessions, so
	// a new one got the conversation retold ahead of its first prompt.
	PhaseACPHistoryReconstructed = "acp-history-reconstructed"
)

// Loading tells the parser that the client sent session/load of session
// as JSON-RPC request id (its JSON text). The session's updates from then
// on are the agent replaying its history, which the resumed execution's
// journal holds already: they are counted, not journaled. The replay ends
// with the client's first prompt (Prompting), not with the load's
// response: ACP has the agent replay before it answers, but Gemini CLI
// answers first and replays after.
func (p *acpParser) Loading(id, session string) {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.loadID, p.loadSession, p.replaying, p.replayed = id, session, true, 0
}

// Prompting tells the parser that the client is sending a prompt: what
// the agent sends from now on is this execution's.
func (p *acpParser) Prompting() {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.replaying = false
}

// replay reads a line while a loaded session may still be replayed: it
// reports whether the line was the load's (a replayed update, the
// response).
func (p *acpParser) replay(m acp.Message) bool {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	switch {
	case m.Update != nil && p.replaying && m.Update.Session == p.loadSession:
		if p.loadID != "" {
			p.replayed++
		}
		return true
	case p.loadID == "" || m.Method != "" || m.ID != p.loadID:
		return false
	}
	session, n := p.loadSession, p.replayed
	p.loadID = ""
	if m.Error != nil {
		// Diagnosed as any error answer is; the client starts a new
		// session instead.
		p.replaying = false
		return false
	}
	p.learnSession(session, "")
	p.observe(&eventstore.StatusSignal{Phase: PhaseACPSessionLoaded,
		Summary: fmt.Sprintf("loaded the ACP session %s (session/load); the history it replays (%d updates before its answer) is not journaled again: the resumed execution's journal holds it", clip(session, maxKeyBytes), n)})
	return true
}

var _ Flusher = (*acpParser)(nil)

func (p *acpParser) Parse(line []byte) []Event {
	var raw map[string]any
	if !p.start(line, &raw) {
		return p.finish()
	}
	m, err := acp.Decode(p.raw)
	p.lineType = m.Method
	if p.lineType == "" {
		p.lineType = "response"
	}
	if err != nil {
		p.flushText()
		if errors.Is(err, acp.ErrNotJSONRPC) {
			// JSON of another kind: named by its type, like any other
			// line type the parser does not know.
			typ, _ := raw["type"].(string)
			if slices.Contains(acpLineTypes, typ) {
				p.lineType = typ
				p.badEvent(fmt.Sprintf("a %q line that is not JSON-RPC 2.0: %v", typ, err))
			} else {
				p.unknownLine(typ)
			}
		} else {
			p.badEvent(fmt.Sprintf("%s: %v", clip(p.lineType, maxTypeBytes), err))
		}
		return p.finish()
	}
	if p.replay(m) {
		return p.finish()
	}
	if m.Update == nil || m.Update.Kind != acp.UpdateAgentMessage {
		p.flushText()
	}
	switch {
	case m.Update != nil:
		p.update(m.Update)
	case m.Permission != nil:
		p.permission(m.ID, m.Permission)
	case m.File != nil:
		p.file(m.File)
	case m.Command != nil:
		p.activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting, CurrentTarget: commandTarget(m.Command.Line)})
	case m.Result != nil:
		p.result(m.Result)
	case m.Error != nil:
		p.diagnose(CodeProviderError, fmt.Sprintf("the ACP agent answered request %s with error %d: %s", clip(m.ID, maxTypeBytes), m.Error.Code, clip(m.Error.Message, maxSummaryBytes)))
	case acpQuiet[m.Method]:
	default:
		p.unknownLine(m.Method)
	}
	return p.finish()
}

// Flush reports a message still held when the output ends.
func (p *acpParser) Flush() []Event {
	p.line++
	p.events, p.overflow = nil, 0
	p.flushText()
	return p.finish()
}

func (p *acpParser) flushText() {
	if p.text.Len() == 0 {
		return
	}
	text := p.text.String()
	p.text.Reset()
	p.textID = ""
	if strings.TrimSpace(text) != "" {
		p.message = text
	}
	p.stream.message(text)
}

func (p *acpParser) update(u *acp.Update) {
	if p.session != "" && u.Session != p.session {
		p.badEvent(fmt.Sprintf("session/update for session %q, not this execution's %q; ignored", clip(u.Session, maxKeyBytes), p.session))
		return
	}
	last := p.last
	p.last = u.Kind
	switch u.Kind {
	case acp.UpdateAgentMessage:
		if p.text.Len() > 0 && u.MessageID != p.textID {
			p.flushText()
		}
		p.textID = u.MessageID
		if p.text.Len() < maxTextBytes {
			p.text.WriteString(u.Text)
		}
	case acp.UpdateThought:
		if last != acp.UpdateThought {
			p.activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityReasoning})
		}
	case acp.UpdateToolCall, acp.UpdateToolCallEdit:
		p.tool(u.Kind, u.Tool)
	case acp.UpdateCommands:
		list := make([]Command, 0, len(u.Commands))
		for _, c := range u.Commands {
			list = append(list, Command{Name: c.Name, Description: c.Description, Hint: c.Hint})
		}
		p.advertise(list)
	case acp.UpdatePlan:
		items := make([]eventstore.PlanItem, 0, len(u.Plan))
		for _, e := range u.Plan {
			if it, ok := planItem("", e.Content, acpPlanStatus(e.Status)); ok {
				items = append(items, it)
			}
		}
		p.reportPlan(items)
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
func acpToolActivity(t *acp.ToolCall) (eventstore.Activity, *eventstore.Target) {
	path := ""
	if len(t.Paths) > 0 {
		path = t.Paths[0]
	}
	a := args(t.Input)
	switch t.Kind {
	case "read", "search", "fetch":
		if path != "" {
			return eventstore.ActivityReviewing, fileTarget(path)
		}
		if u := stringArg(a, "url"); u != "" {
			return eventstore.ActivityReviewing, urlTarget(u)
		}
		return eventstore.ActivityReviewing, toolTarget(t.Title)
	case "edit", "delete", "move":
		if path != "" {
			return eventstore.ActivityEditing, fileTarget(path)
		}
		return eventstore.ActivityEditing, toolTarget(t.Title)
	case "execute":
		if cmd := stringArg(a, "command", "cmd"); cmd != "" {
			return eventstore.ActivityExecuting, commandTarget(cmd)
		}
		return eventstore.ActivityExecuting, commandTarget(t.Title)
	case "think", "switch_mode":
		return eventstore.ActivityPlanning, toolTarget(t.Title)
	}
	if path != "" {
		return eventstore.ActivityExecuting, fileTarget(path)
	}
	return eventstore.ActivityExecuting, toolTarget(t.Title)
}

func (p *acpParser) tool(kind string, t *acp.ToolCall) {
	if kind == acp.UpdateToolCall {
		name := t.Title
		if name == "" {
			name = t.Kind
		}
		act, target := acpToolActivity(t)
		p.openTool(t.ID, name, act, target)
	}
	switch t.Status {
	case "completed":
		p.closeTool(t.ID, outcome{})
	case "failed":
		msg := t.Output
		if strings.TrimSpace(msg) == "" {
			msg = "the ACP agent reported the tool call failed"
		}
		p.closeTool(t.ID, outcome{failed: true, err: msg})
	}
}

// permission reads session/request_permission: the agent waits for the
// answer, which the adapter sends as the JSON-RPC response. The request id
// is the tool call's, which both sides know.
func (p *acpParser) permission(rpcID string, r *acp.PermissionRequest) {
	if p.session != "" && r.Session != p.session {
		p.badEvent(fmt.Sprintf("session/request_permission for session %q, not this execution's %q", clip(r.Session, maxKeyBytes), p.session))
		return
	}
	p.native.RequestID = nativeID(rpcID)
	name := r.Tool.Title
	if name == "" {
		name = r.Tool.Kind
	}
	sig := &eventstore.NeedsInputSignal{
		RequestID: inputRequestID(r.Tool.ID, p.prefix, p.nextKey()),
		Kind:      string(eventstore.InputPermission),
		Question:  "Allow " + orName(oneLine(name, 200)) + "?",
		Tool:      &eventstore.ToolUse{Name: toolName(name), Input: toolInput(r.Tool.Input)},
		Choices:   ACPChoices(r.Options),
	}
	p.observe(sig)
}

func orName(s string) string {
	if s == "" {
		return "an unnamed tool call"
	}
	return s
}

// ACPChoices are the journal's answers to a permission request, in the
// order of the options the agent offers: allow (allow_once), allow-always
// (allow_always) and deny (reject_once or reject_always).
func ACPChoices(opts []acp.PermissionOption) []string {
	var out []string
	add := func(s string) {
		for _, c := range out {
			if c == s {
				return
			}
		}
		out = append(out, s)
	}
	for _, o := range opts {
		switch o.Kind {
		case acp.AllowOnce:
			add(eventstore.AnswerAllow)
		case acp.AllowAlways:
			add(eventstore.AnswerAllowAlways)
		case acp.RejectOnce, acp.RejectAlways:
			add(eventstore.AnswerDeny)
		}
	}
	return out
}

func (p *acpParser) file(f *acp.FileRequest) {
	if f.Write {
		p.activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityEditing, CurrentTarget: fileTarget(f.Path)})
		return
	}
	p.activity(&eventstore.ActivityUpdated{Activity: eventstore.ActivityReviewing, CurrentTarget: fileTarget(f.Path)})
}

// result reads a response: session/new's names the session,
// session/prompt's ends the turn.
func (p *acpParser) result(r *acp.Result) {
	if r.Session != "" {
		p.learnSession(r.Session, "")
	}
	if r.StopReason == "" {
		return
	}
	if u := r.Usage; u != nil {
		p.increment(u.Input, u.Output)
	}
	message := p.message
	p.message = ""
	switch r.StopReason {
	case "end_turn":
		p.completed(message, "the ACP agent ended the turn")
		p.turnEnd(false, "")
	case "cancelled":
		p.turnEnd(false, "")
	default:
		// max_tokens, max_turn_requests, refusal: the turn stopped short.
		p.turnEnd(true, p.failed("the ACP agent stopped the turn: "+r.StopReason, message))
	}
}
