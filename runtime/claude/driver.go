package claude

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Agent is Claude Code in stream-json mode: prompts are user messages on
// stdin, permission requests and questions arrive as control requests on
// stdout (--permission-prompt-tool stdio) and are answered with control
// responses on stdin.
type Agent struct{}

var _ agent.Agent = Agent{}

// args are the arguments every Claude Code launch gets.
//
// --include-partial-messages adds the model's stream events, whose
// message_delta holds each request's final usage: the assistant lines only
// carry a placeholder output count.
var args = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio", "--include-partial-messages"}

func (Agent) ID() string       { return agent.ClaudeCode }
func (Agent) Provider() string { return agent.ClaudeCode }

// Capabilities: Claude Code resumes its sessions and forks them at a
// message (--fork-session, --resume-session-at).
func (Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Protocol: agent.ProtocolStreamJSON, NativeResume: true, NativeFork: true,
		StatePaths: []string{".claude/", ".claude.json"}, StateEnv: []string{"CLAUDE_CONFIG_DIR"}}
}

func (Agent) Shapes() []eventstore.SessionShape { return agent.SessionShapes() }

func (Agent) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsJournal, Flags: []string{"--permission-prompt-tool", "stdio"}}
}

func (Agent) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{agent.PromptMessage, agent.AnswerMessage, agent.InterruptMessage,
		{Type: "compact", Label: "Compact", Description: "Claude Code's /compact: summarize the conversation to free context",
			Delivery: eventstore.DeliveryBestEffort, MutatesContext: true, Portability: eventstore.PortabilityAdapterScoped, AdapterID: agent.ClaudeCode}}
}

func (Agent) LineTypes() []string { return agent.Sorted(lineTypes) }

func (Agent) NewDriver(command []string, _ eventstore.SessionShape) agent.Driver {
	return &Driver{command: command, pending: map[string]*claudeControlRequest{}}
}

// Driver runs one launch of Claude Code and reads its stdout: one parse of
// each line yields its events and keeps the control requests Encode will
// answer.
type Driver struct {
	command []string
	// cont is the session the process continues, if any.
	cont *agent.Continuation
	// version is the CLI's version as the runtime learned it, "" when
	// unknown; before is what the runs whose session this one resumes
	// counted of it.
	version string
	before  agent.Tokens

	mu sync.Mutex
	// pending are the control requests waiting for an answer, by id.
	pending map[string]*claudeControlRequest

	// output is the reading of the process's stdout, under the runtime's
	// one-reader-at-a-time rule (agent.Reader).
	output
}

var (
	_ agent.Reader         = (*Driver)(nil)
	_ agent.Flusher        = (*Driver)(nil)
	_ agent.VersionReader  = (*Driver)(nil)
	_ agent.SessionCounter = (*Driver)(nil)
	_ agent.Versioned      = Agent{}
)

// VersionCommand asks Claude Code its version: `claude --version` prints
// "2.1.328 (Claude Code)".
func (Agent) VersionCommand(command []string) (string, []string) {
	return agent.VersionFlag(command, "claude")
}

// SetAgentVersion is the CLI's version, for the diagnostics until its init
// line says it. The parser tells the versions' usage lines apart by the
// fields they carry.
func (d *Driver) SetAgentVersion(v string) { d.version = v }

// CountedBefore is what the runs whose session this one resumes counted of
// it: a resumed process's first modelUsage counts them too.
func (d *Driver) CountedBefore(t agent.Tokens) { d.before = t }

// maxPending bounds the control requests remembered; Claude Code waits on
// one at a time, so more means output that is not answering anything.
const maxPending = 64

// Output begins the reading of a Claude Code process's stdout.
func (d *Driver) Output(idPrefix string) error {
	s, err := agent.NewStream(agent.ClaudeCode, idPrefix)
	if err != nil {
		return err
	}
	s.KnowVersion(d.version)
	d.output = output{Stream: s, tasks: agent.NewRecent[string](maxTasks)}
	return nil
}

// Start returns Claude Code's command line: the launch's one process.
func (d *Driver) Start(string, string) (string, []string, error) {
	program, extra := agent.UserCommand(d.command, "claude")
	args := slices.Clone(args)
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
func (d *Driver) Continue(c agent.Continuation) error {
	d.cont = &c
	return nil
}

// TurnsOnStdin is true: every turn is a user message on the one process's
// stdin.
func (*Driver) TurnsOnStdin() bool { return true }

// remember keeps a can_use_tool request until Encode answers it.
func (d *Driver) remember(id string, r *claudeControlRequest) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) >= maxPending {
		return
	}
	d.pending[id] = r
}

// Encode writes a message as a stream-json user message, or an answer to a
// pending control request as its control response.
func (d *Driver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
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
			data, err := controlResponse(p.RequestID, req, p.Text)
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

// controlResponse answers a can_use_tool request. A permission is allowed
// (with the tool's own input), allowed always (with the rules Claude Code
// suggested) or denied; a question (AskUserQuestion) is allowed with the
// answer given for each of its questions.
func controlResponse(id string, req *claudeControlRequest, answer string) ([]byte, error) {
	var decision map[string]any
	input := map[string]any{}
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &input); err != nil {
			return nil, fmt.Errorf("control request %s: the tool input is not an object: %w", id, err)
		}
	}
	switch a := strings.TrimSpace(answer); {
	case req.ToolName == "AskUserQuestion" && strings.EqualFold(a, eventstore.AnswerDeny):
		decision = map[string]any{"behavior": "deny", "message": "The operator declined to answer; decide without the answer."}
	case req.ToolName == "AskUserQuestion":
		decision = map[string]any{"behavior": "allow", "updatedInput": withAnswers(input, a)}
	case strings.EqualFold(a, eventstore.AnswerAllow):
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
	case strings.EqualFold(a, eventstore.AnswerAllowAlways):
		decision = map[string]any{"behavior": "allow", "updatedInput": input}
		if len(req.Suggestions) > 0 && string(req.Suggestions) != "null" {
			decision["updatedPermissions"] = req.Suggestions
		}
	case strings.EqualFold(a, eventstore.AnswerDeny):
		decision = map[string]any{"behavior": "deny", "message": "The operator denied this tool call."}
	default:
		// Anything else is a denial that tells the agent why.
		decision = map[string]any{"behavior": "deny", "message": "The operator denied this tool call: " + a}
	}
	line, err := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": id, "response": decision}})
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
