package execution

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Adapter translates launch intent and messages for one kind of agent CLI.
// The execution stays the owner of lifecycle and semantic state; an adapter
// only shapes command lines, declares descriptors, and speaks the CLI's own
// input protocol through the Driver it gives each launch.
type Adapter interface {
	// ID names the adapter in headers and on the command line.
	ID() string
	// Provider names the output parser for the agent's stdout ("" for none:
	// stdout markers only).
	Provider() string
	// Shapes lists the session shapes the adapter supports, its default
	// first; none for an agent without a provider session, whose process
	// is the execution.
	Shapes() []eventstore.SessionShape
	// Messages declares the message types the adapter can deliver.
	Messages(shape eventstore.SessionShape) []eventstore.MessageDescriptor
	// Approvals says how the agent's permission requests are answered.
	Approvals() *eventstore.ApprovalPolicy
	// NewDriver returns the driver of one launch. command is what the user
	// gave (may be empty for the known CLIs).
	NewDriver(command []string, shape eventstore.SessionShape) Driver
}

// Driver runs one launch of an adapter: the command lines of its turns, its
// structured input, and what it must remember of the CLI's output to answer
// it. A driver serves one execution; the runtime calls it from several
// goroutines.
type Driver interface {
	// Start returns the command line of a process that starts a turn with
	// prompt: the first turn when sessionID is "", else the next turn of
	// that provider session. An adapter whose CLI takes its turns on stdin
	// starts one process at launch, and prompt is then "".
	Start(prompt, sessionID string) (program string, args []string, err error)
	// TurnsOnStdin is true when the CLI reads every turn's input on a stdin
	// kept open for the life of its process; false when each turn is a
	// process of its own, whose stdin is closed (/dev/null).
	TurnsOnStdin() bool
	// Line sees every stdout line before it is parsed, so the driver can
	// remember requests it will have to answer.
	Line(line []byte)
	// Encode turns an accepted message into the bytes written to the
	// agent's stdin, or ok=false when this driver cannot deliver that
	// message while the process runs.
	Encode(m *eventstore.MessageAccepted) (data []byte, ok bool, err error)
}

// Adapters lists the adapter ids.
func Adapters() []string {
	return append([]string{"generic", "claude-code", "codex", "copilot"}, acpAdapterIDs()...)
}

// NewAdapter returns the adapter with the given id.
func NewAdapter(id string) (Adapter, error) {
	switch id {
	case "generic", "":
		return genericAdapter{}, nil
	case "claude-code":
		return claudeAdapter{}, nil
	case "codex":
		return codexAdapter{}, nil
	case "copilot":
		return copilotAdapter{}, nil
	}
	if a, ok := acpAdapterFor(id); ok {
		return a, nil
	}
	return nil, fmt.Errorf("unknown agent %q (want one of: %s)", id, strings.Join(Adapters(), ", "))
}

var (
	promptMessage = eventstore.MessageDescriptor{Type: "prompt", Label: "Prompt", Description: "Instructions for the agent",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	answerMessage = eventstore.MessageDescriptor{Type: "answer", Label: "Answer", Description: "The answer to the agent's open input request (payload names requestId)",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	interruptMessage = eventstore.MessageDescriptor{Type: "interrupt", Label: "Interrupt", Description: "Interrupt the current turn (SIGINT)",
		Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityCrossAgent}
)

// userCommand splits what the user gave into the program and the extra
// arguments, defaulting the program.
func userCommand(command []string, program string) (string, []string) {
	if len(command) > 0 {
		return command[0], slices.Clone(command[1:])
	}
	return program, nil
}

// genericAdapter runs any program: messages are written to stdin as text
// lines; signals come from stdout markers.
type genericAdapter struct{}

func (genericAdapter) ID() string                            { return "generic" }
func (genericAdapter) Provider() string                      { return "" }
func (genericAdapter) Shapes() []eventstore.SessionShape     { return nil }
func (genericAdapter) Approvals() *eventstore.ApprovalPolicy { return nil }
func (genericAdapter) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{promptMessage, answerMessage, interruptMessage}
}
func (genericAdapter) NewDriver(command []string, _ eventstore.SessionShape) Driver {
	return &genericDriver{command: command}
}

type genericDriver struct{ command []string }

func (d *genericDriver) Start(string, string) (string, []string, error) {
	if len(d.command) == 0 {
		return "", nil, fmt.Errorf("the generic agent needs a command (after --)")
	}
	return d.command[0], slices.Clone(d.command[1:]), nil
}
func (*genericDriver) TurnsOnStdin() bool { return true }
func (*genericDriver) Line([]byte)        {}

// Encode writes a message as one line on the agent's stdin. An answer
// starts with the id of the request it answers and ": ", since a prompt
// may arrive while a question is open and a program reading its stdin must
// tell the two apart.
func (*genericDriver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	line := p.Text
	if p.RequestID != "" {
		line = p.RequestID + ": " + p.Text
	}
	return []byte(oneLine(line) + "\n"), true, nil
}

// Type types a message into the agent's terminal as a person would: the
// text, answers included, then Enter (a carriage return, which a terminal
// in its usual mode hands the program as a line feed). The agent on a
// terminal asked its question on that terminal, so the answer is just what
// a person would type.
func (*genericDriver) Type(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	return []byte(oneLine(p.Text) + "\r"), true, nil
}

// oneLine turns the line breaks inside a message into spaces, so that one
// message is one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// typist is a Driver that types its messages differently into a terminal
// lane than it writes them to a pipe.
type typist interface {
	// Type turns an accepted message into the keys typed into the
	// agent's terminal; ok=false when it cannot be delivered there.
	Type(m *eventstore.MessageAccepted) (data []byte, ok bool, err error)
}

// encode turns an accepted message into the bytes for the agent's lane:
// typed keys on a terminal lane when the driver types, else what the
// driver writes to its structured input.
func encode(d Driver, m *eventstore.MessageAccepted, terminal bool) ([]byte, bool, error) {
	if t, ok := d.(typist); ok && terminal {
		return t.Type(m)
	}
	return d.Encode(m)
}

// claudeAdapter drives Claude Code in stream-json mode: prompts are user
// messages on stdin, permission requests and questions arrive as control
// requests on stdout (--permission-prompt-tool stdio) and are answered with
// control responses on stdin.
type claudeAdapter struct{}

// claudeArgs are the arguments every Claude Code launch gets.
//
// --include-partial-messages adds the model's stream events, whose
// message_delta holds each request's final usage: the assistant lines only
// carry a placeholder output count.
var claudeArgs = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio", "--include-partial-messages"}

func (claudeAdapter) ID() string       { return "claude-code" }
func (claudeAdapter) Provider() string { return "claude-code" }
func (claudeAdapter) Shapes() []eventstore.SessionShape {
	return []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
}
func (claudeAdapter) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsJournal, Flags: []string{"--permission-prompt-tool", "stdio"}}
}
func (claudeAdapter) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{promptMessage, answerMessage, interruptMessage,
		{Type: "compact", Label: "Compact", Description: "Claude Code's /compact: summarize the conversation to free context",
			Delivery: eventstore.DeliveryBestEffort, MutatesContext: true, Portability: eventstore.PortabilityAdapterScoped, AdapterID: "claude-code"}}
}
func (claudeAdapter) NewDriver(command []string, _ eventstore.SessionShape) Driver {
	return &claudeDriver{command: command, pending: map[string]claudeRequest{}}
}

type claudeDriver struct {
	command []string
	// cont is the session the process continues (fork.go), if any.
	cont *Continuation

	mu sync.Mutex
	// pending are the control requests waiting for an answer, by id.
	pending map[string]claudeRequest
}

// claudeRequest is a can_use_tool control request as Claude Code prints it.
type claudeRequest struct {
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	} `json:"request"`
}

// maxPending bounds the control requests remembered; Claude Code waits on
// one at a time, so more means output that is not answering anything.
const maxPending = 64

func (d *claudeDriver) Start(string, string) (string, []string, error) {
	program, extra := userCommand(d.command, "claude")
	args := slices.Clone(claudeArgs)
	if c := d.cont; c != nil {
		// --resume-session-at keeps the session up to and including that
		// message (a hidden flag of print mode); --fork-session gives the
		// copy a new session id, leaving the original as it was.
		args = append(args, "--resume", c.Session)
		if c.Fork {
			args = append(args, "--fork-session")
		}
		if c.At != "" {
			args = append(args, "--resume-session-at", c.At)
		}
	}
	return program, append(args, extra...), nil
}

// Continue makes the process resume, or fork, a Claude Code session.
func (d *claudeDriver) Continue(c Continuation) error {
	d.cont = &c
	return nil
}

func (*claudeDriver) TurnsOnStdin() bool { return true }

func (d *claudeDriver) Line(line []byte) {
	if !bytes.Contains(line, []byte(`"control_request"`)) {
		return
	}
	var r struct {
		Type string `json:"type"`
		claudeRequest
	}
	if json.Unmarshal(line, &r) != nil || r.Type != "control_request" || r.Request.Subtype != "can_use_tool" || r.RequestID == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) >= maxPending {
		return
	}
	d.pending[r.RequestID] = r.claudeRequest
}

func (d *claudeDriver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	if p.RequestID != "" {
		d.mu.Lock()
		req, ok := d.pending[p.RequestID]
		delete(d.pending, p.RequestID)
		d.mu.Unlock()
		if ok {
			data, err := claudeControlResponse(req, p.Text)
			return data, err == nil, err
		}
	}
	text := p.Text
	if m.MessageType != "prompt" && m.MessageType != "answer" {
		// An adapter-scoped message (compact, or a command the CLI
		// advertised in its init line) is its slash command, typed.
		text = strings.TrimSpace("/" + m.MessageType + " " + text)
	}
	if p.RequestID != "" {
		text = "Answer to " + p.RequestID + ": " + text
	}
	line, err := json.Marshal(map[string]any{"type": "user", "message": map[string]any{
		"role": "user", "content": []map[string]string{{"type": "text", "text": text}}}})
	return append(line, '\n'), true, err
}

// claudeControlResponse answers a can_use_tool request. A permission is
// allowed (with the tool's own input), allowed always (with the rules
// Claude Code suggested) or denied; a question (AskUserQuestion) is
// allowed with the answer given for each of its questions.
func claudeControlResponse(req claudeRequest, answer string) ([]byte, error) {
	var decision map[string]any
	input := map[string]any{}
	if len(req.Request.Input) > 0 {
		if err := json.Unmarshal(req.Request.Input, &input); err != nil {
			return nil, fmt.Errorf("control request %s: the tool input is not an object: %w", req.RequestID, err)
		}
	}
	switch a := strings.TrimSpace(answer); {
	case req.Request.ToolName == "AskUserQuestion" && strings.EqualFold(a, eventstore.AnswerDeny):
		decision = map[string]any{"behavior": "deny", "message": "The operator declined to answer; decide without the answer."}
	case req.Request.ToolName == "AskUserQuestion":
		decision = map[string]any{"behavior": "allow", "updatedInput": withAnswers(input, a)}
	case strings.EqualFold(a, eventstore.AnswerAllow):
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
	case strings.EqualFold(a, eventstore.AnswerAllowAlways):
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
		if len(req.Request.Suggestions) > 0 && string(req.Request.Suggestions) != "null" {
			decision["updatedPermissions"] = req.Request.Suggestions
		}
	case strings.EqualFold(a, eventstore.AnswerDeny):
		decision = map[string]any{"behavior": "deny", "message": "The operator denied this tool call."}
	default:
		// Anything else is a denial that tells the agent why.
		decision = map[string]any{"behavior": "deny", "message": "The operator denied this tool call: " + a}
	}
	line, err := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req.RequestID, "response": decision}})
	return append(line, '\n'), err
}

// withAnswers adds the operator's answer to AskUserQuestion's input: one
// answer per question, in order, one per line of the answer when it has a
// line for each question, the whole answer for each otherwise.
func withAnswers(input map[string]any, answer string) map[string]any {
	out := make(map[string]any, len(input)+1)
	for k, v := range input {
		out[k] = v
	}
	qs, _ := input["questions"].([]any)
	lines := strings.Split(answer, "\n")
	answers := map[string]any{}
	for i, q := range qs {
		m, _ := q.(map[string]any)
		text, _ := m["question"].(string)
		if text == "" {
			continue
		}
		a := answer
		if len(lines) == len(qs) {
			a = strings.TrimSpace(lines[i])
		}
		answers[text] = a
	}
	out["answers"] = answers
	return out
}

// codexAdapter drives `codex exec --json`: each turn is a process with the
// prompt on its command line and stdin closed; the next turn resumes the
// thread (`codex exec resume <thread_id>`). Codex cannot ask for approval
// in exec mode: it runs under the sandbox and approval policy its flags
// set, recorded in the header.
type codexAdapter struct{}

// codexPolicy is the sandbox and approval policy of every Codex launch, as
// config overrides, which `exec` and `exec resume` both accept.
var codexPolicy = []string{"-c", `sandbox_mode="workspace-write"`, "-c", `approval_policy="never"`}

func (codexAdapter) ID() string       { return "codex" }
func (codexAdapter) Provider() string { return "codex" }
func (codexAdapter) Shapes() []eventstore.SessionShape {
	return []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
}
func (codexAdapter) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsAgentPolicy, Flags: slices.Clone(codexPolicy)}
}
func (codexAdapter) Messages(shape eventstore.SessionShape) []eventstore.MessageDescriptor {
	return turnMessages(shape)
}
func (codexAdapter) NewDriver(command []string, _ eventstore.SessionShape) Driver {
	return &turnDriver{command: command, program: "codex", start: func(prompt, session string) []string {
		args := []string{"exec"}
		if session != "" {
			args = append(args, "resume")
		}
		args = append(append(args, "--json", "--skip-git-repo-check"), codexPolicy...)
		return args
	}, tail: func(prompt, session string) []string {
		// After --, a prompt that starts with a dash is not read as a flag.
		if session != "" {
			return []string{"--", session, prompt}
		}
		return []string{"--", prompt}
	}}
}

// copilotAdapter drives `copilot -p --output-format json`: each turn is a
// process, the next one resuming the session by the id the first one was
// given. Copilot CLI cannot ask for permission in prompt mode: it runs its
// tools under --allow-all-tools, recorded in the header.
type copilotAdapter struct{}

var copilotPolicy = []string{"--allow-all-tools"}

func (copilotAdapter) ID() string       { return "copilot" }
func (copilotAdapter) Provider() string { return "copilot" }
func (copilotAdapter) Shapes() []eventstore.SessionShape {
	return []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
}
func (copilotAdapter) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsAgentPolicy, Flags: slices.Clone(copilotPolicy)}
}
func (copilotAdapter) Messages(shape eventstore.SessionShape) []eventstore.MessageDescriptor {
	return turnMessages(shape)
}
func (copilotAdapter) NewDriver(command []string, _ eventstore.SessionShape) Driver {
	d := &copilotDriver{}
	d.turnDriver = turnDriver{command: command, program: "copilot", start: func(prompt, session string) []string {
		args := append([]string{"--output-format", "json"}, copilotPolicy...)
		d.mu.Lock()
		defer d.mu.Unlock()
		if session == "" {
			// A new session gets an id chosen here, so that its session
			// log can be found while the first turn runs.
			d.session = newUUID()
			return append(args, "--session-id", d.session)
		}
		d.session = session
		return append(args, "--resume", session)
	}, tail: func(prompt, session string) []string { return []string{"-p", prompt} }}
	return d
}

// copilotDriver is a turnDriver that knows its session's id, and so where
// Copilot CLI writes the session log that holds its token usage.
type copilotDriver struct {
	turnDriver
	mu      sync.Mutex
	session string
}

// Session is the id of the session the driver started or resumed.
func (d *copilotDriver) Session() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.session
}

// SideLog is $COPILOT_HOME/session-state/<session>/events.jsonl, with
// COPILOT_HOME defaulting to $HOME/.copilot as Copilot CLI's does.
func (d *copilotDriver) SideLog(env []string) string {
	d.mu.Lock()
	session := d.session
	d.mu.Unlock()
	home := lookupEnv(env, "COPILOT_HOME")
	if home == "" {
		if h := lookupEnv(env, "HOME"); h != "" {
			home = filepath.Join(h, ".copilot")
		}
	}
	if home == "" || session == "" || strings.ContainsAny(session, "/\\") || session == ".." {
		return ""
	}
	return filepath.Join(home, "session-state", session, "events.jsonl")
}

// lookupEnv is the value of key in env, the last one when it is set twice
// (as exec does).
func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// turnMessages are the messages of CLIs that take one prompt per process.
func turnMessages(shape eventstore.SessionShape) []eventstore.MessageDescriptor {
	p := promptMessage
	p.Description = "The prompt of the next turn; it resumes the agent's session"
	if shape == eventstore.ShapeOneShot {
		p.Description = "The one prompt, given at launch"
	}
	return []eventstore.MessageDescriptor{p, interruptMessage}
}

// turnDriver runs CLIs that take one prompt per process: the prompt is an
// argument, stdin is closed, and a later turn resumes the session.
type turnDriver struct {
	command     []string
	program     string
	start, tail func(prompt, session string) []string
}

func (d *turnDriver) Start(prompt, session string) (string, []string, error) {
	if strings.TrimSpace(prompt) == "" {
		return "", nil, fmt.Errorf("%s takes its prompt on the command line: a turn needs a prompt", d.program)
	}
	program, extra := userCommand(d.command, d.program)
	args := append(d.start(prompt, session), extra...)
	return program, append(args, d.tail(prompt, session)...), nil
}

// Continue accepts a session to resume: the first turn resumes it as later
// turns do. Neither Codex's exec nor Copilot CLI's prompt mode can fork a
// session or cut it at a message.
func (d *turnDriver) Continue(c Continuation) error {
	if c.Fork || c.At != "" {
		return fmt.Errorf("%s can only resume a session whole, not fork it at a message", d.program)
	}
	return nil
}

func (*turnDriver) TurnsOnStdin() bool { return false }
func (*turnDriver) Line([]byte)        {}
func (*turnDriver) Encode(*eventstore.MessageAccepted) ([]byte, bool, error) {
	return nil, false, nil
}
