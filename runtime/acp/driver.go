package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	protocol "github.com/agentjournal/agentjournal/acp"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Diagnostic codes of the ACP client's own observations. Persisted: never
// rename one.
const (
	// codeACPHandshake: initialize or session/new failed or went
	// unanswered.
	codeACPHandshake = "acp-handshake"
	// codeACPPrompt: session/prompt failed or its response never came.
	codeACPPrompt = "acp-prompt"
	// codeACPLoad: session/load of the session resumed failed; a new
	// session gets the conversation retold instead.
	codeACPLoad = "acp-load"
	// codeACPRefused: the client refused a request of the agent (a path
	// outside the working directory, a terminal it does not offer).
	codeACPRefused = "acp-refused"
)

// Timeout bounds the waits on an ACP agent that are not a turn: the
// handshake's answers, a prompt's request reaching the agent, a cancel. A
// variable so that a test can shorten it.
var Timeout = 60 * time.Second

// Agent runs an Agent Client Protocol agent: the acp agent any command, a
// preset a known CLI in its ACP mode.
type Agent struct {
	id      string
	program string   // the preset's program; "" for acp, which needs a command
	args    []string // the preset's arguments, before the user's
}

var _ agent.Agent = Agent{}

// presets are the known ACP agents, by id: adding one is a line here.
var presets = []Agent{
	{id: "acp"},
	{id: "copilot-acp", program: "copilot", args: []string{"--acp"}},
	{id: "gemini", program: "gemini", args: []string{"--acp"}},
	{id: "claude-code-acp", program: "claude-code-acp"},
	{id: "codex-acp", program: "codex-acp"},
}

// Agents lists the acp agent and its presets.
func Agents() []agent.Agent {
	out := make([]agent.Agent, len(presets))
	for i, a := range presets {
		out[i] = a
	}
	return out
}

func (a Agent) ID() string     { return a.id }
func (Agent) Provider() string { return agent.ACP }

// Capabilities: an ACP agent resumes with session/load when its initialize
// offers it, and otherwise falls back to the retelling (the handshake
// records which). session/fork is unstable in the protocol and forks a
// whole session, never at a message.
func (Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Protocol: agent.ProtocolACP, NativeResume: true}
}

func (Agent) Shapes() []eventstore.SessionShape { return agent.SessionShapes() }

func (Agent) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsJournal}
}

func (Agent) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	interrupt := agent.InterruptMessage
	interrupt.Description = "Cancel the current turn (ACP session/cancel)"
	return []eventstore.MessageDescriptor{agent.PromptMessage, agent.AnswerMessage, interrupt}
}

func (Agent) LineTypes() []string { return agent.Sorted(lineTypes) }

func (a Agent) NewDriver(command []string, _ eventstore.SessionShape) agent.Driver {
	return &Driver{agent: a, command: command, ready: make(chan struct{}), pending: map[string]*waiting{}}
}

// Driver is the client side of one ACP agent process, and the reader of
// its stdout.
type Driver struct {
	agent   Agent
	command []string
	ready   chan struct{} // closed when the handshake has ended

	mu      sync.Mutex
	conv    agent.Conversation
	client  *protocol.Client
	openErr error
	hung    bool
	// pending are the permission requests waiting for the operator, by
	// request id (the tool call's id).
	pending map[string]*waiting
	// sent is told when a session/prompt request was written.
	sent *promptSent
	// cont is the session a resume continues; nil for a new one.
	cont *agent.Continuation
	// retelling goes ahead of the first prompt when the agent could not
	// continue cont's session (retell).
	retelling string

	// loadMu guards the replay of a loaded session, which the client
	// announces from its own goroutine (loading, prompting) while Parse
	// reads the agent's lines: the session/load's JSON-RPC id (until its
	// response) and session, whether the replay may still run, and the
	// updates replayed before the response.
	loadMu      sync.Mutex
	loadID      string
	loadSession string
	replaying   bool
	replayed    int

	// output is the reading of the process's stdout, under the runtime's
	// one-reader-at-a-time rule (agent.Reader).
	output
}

// promptSent follows one session/prompt request out.
type promptSent struct {
	ch    chan error
	wrote atomic.Bool
}

// waiting is a permission request waiting for its answer.
type waiting struct {
	options []protocol.PermissionOption
	answer  chan string
}

var (
	_ agent.Reader  = (*Driver)(nil)
	_ agent.Flusher = (*Driver)(nil)
)

// Output begins the reading of the agent process's stdout.
func (d *Driver) Output(idPrefix string) error {
	s, err := agent.NewStream(agent.ACP, idPrefix)
	if err != nil {
		return err
	}
	d.output = output{Stream: s, outputs: agent.NewRecent[string](maxHeldOutputs)}
	return nil
}

// Continue makes the handshake load c's session (session/load) when the
// agent offers it, and otherwise start a new one that gets c.Retelling
// ahead of the first prompt. A fork is never native: session/fork is
// unstable in the protocol and forks a whole session, not at a message.
func (d *Driver) Continue(c agent.Continuation) error {
	if c.Fork {
		return fmt.Errorf("the %s agent does not fork a session of its own", d.agent.id)
	}
	d.cont = &c
	return nil
}

func (d *Driver) Start(string, string) (string, []string, error) {
	if d.agent.program == "" {
		if len(d.command) == 0 {
			return "", nil, fmt.Errorf("the acp agent needs the command of an ACP agent (after --), e.g. -- gemini --acp")
		}
		return d.command[0], slices.Clone(d.command[1:]), nil
	}
	program, extra := agent.UserCommand(d.command, d.agent.program)
	return program, append(slices.Clone(d.agent.args), extra...), nil
}

// TurnsOnStdin is true: every prompt is a session/prompt on the one
// process's stdin.
func (*Driver) TurnsOnStdin() bool { return true }

// feed hands a line of the agent's stdout to the client, whose JSON-RPC
// connection matches responses to its requests and answers the agent's.
func (d *Driver) feed(line []byte) {
	d.mu.Lock()
	c := d.client
	d.mu.Unlock()
	if c != nil {
		c.Feed(line)
	}
}

// Converse starts the conversation: the handshake, on a goroutine of its
// own, and the client that answers the agent's requests.
func (d *Driver) Converse(conv agent.Conversation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conv = conv
	d.client = protocol.NewClient(protocol.Config{
		Write:      d.write,
		Dir:        conv.Dir,
		Permission: d.permission,
		Refused: func(method, reason string) {
			d.note(codeACPRefused, "refused the agent's "+method+": "+reason)
		},
	})
	client := d.client
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		err := d.open(ctx, client)
		if err != nil {
			err = fmt.Errorf("the ACP handshake failed: %w", err)
			d.note(codeACPHandshake, err.Error())
		}
		d.mu.Lock()
		d.openErr = err
		d.mu.Unlock()
		close(d.ready)
	}()
}

// open runs the handshake: initialize, then session/load of the session
// resumed when the agent offers it, else session/new.
func (d *Driver) open(ctx context.Context, client *protocol.Client) error {
	caps, err := client.Initialize(ctx)
	if err != nil {
		return err
	}
	c := d.cont
	if c == nil {
		_, err := client.NewSession(ctx)
		return err
	}
	why := "its initialize does not offer session/load"
	if caps.LoadSession {
		err := client.LoadSession(ctx, c.Session)
		if err == nil || ctx.Err() != nil {
			return err
		}
		d.note(codeACPLoad, err.Error())
		why = "session/load failed: " + err.Error()
	}
	if _, err := client.NewSession(ctx); err != nil {
		return err
	}
	d.mu.Lock()
	d.retelling = c.Retelling
	status := d.conv.Status
	d.mu.Unlock()
	// The header, written before the handshake, says native: this record
	// is what happened instead.
	status(PhaseHistoryReconstructed, fmt.Sprintf("the ACP agent does not continue its session %s (%s): a new session gets the conversation retold from the journal ahead of its first prompt, so this run's history is reconstructed, not native", c.Session, why))
	return nil
}

// write writes to the agent and tells a prompt waiting to know that its
// request went out.
func (d *Driver) write(b []byte) error {
	if bytes.Contains(b, []byte(`"method":"session/load"`)) {
		// Before the request goes out, so the parser knows the replay
		// that answers it.
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
		}
		if json.Unmarshal(b, &req) == nil && len(req.ID) > 0 {
			d.loading(string(req.ID), req.Params.SessionID)
		}
	}
	prompt := bytes.Contains(b, []byte(`"method":"session/prompt"`))
	if prompt {
		d.prompting()
	}
	err := d.conv.Write(b)
	if prompt {
		d.mu.Lock()
		sent := d.sent
		d.sent = nil
		d.mu.Unlock()
		if sent != nil {
			sent.wrote.Store(err == nil)
			sent.ch <- err
		}
	}
	return err
}

func (d *Driver) note(code, message string) {
	d.mu.Lock()
	hung, note := d.hung, d.conv.Note
	d.mu.Unlock()
	if !hung && note != nil {
		note(code, message)
	}
}

func (d *Driver) Hangup() {
	d.mu.Lock()
	if d.hung || d.client == nil {
		d.hung = true
		d.mu.Unlock()
		return
	}
	d.hung = true
	client := d.client
	pending := d.pending
	d.pending = map[string]*waiting{}
	d.mu.Unlock()
	for _, p := range pending {
		close(p.answer)
	}
	if client.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = client.Cancel(ctx)
		cancel()
	}
	client.Close()
}

// permission waits for the operator's answer to a permission request,
// given as an answer message (Encode), and picks the option it means.
func (d *Driver) permission(ctx context.Context, r protocol.PermissionRequest) string {
	p := &waiting{options: r.Options, answer: make(chan string, 1)}
	d.mu.Lock()
	if d.hung {
		d.mu.Unlock()
		return ""
	}
	d.pending[r.Tool.ID] = p
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if d.pending[r.Tool.ID] == p {
			delete(d.pending, r.Tool.ID)
		}
		d.mu.Unlock()
	}()
	select {
	case a, ok := <-p.answer:
		if !ok {
			return ""
		}
		return chooseOption(r.Options, a)
	case <-ctx.Done():
		return ""
	}
}

// chooseOption is the option an answer picks: one named by its id or
// name, else allow (allow_once), allow-always (allow_always) or deny
// (reject_once); anything else rejects. A kind the agent does not offer
// falls back to its nearest: allow-always to allow_once, a rejection to
// the other rejection. "" (cancelled) when nothing fits.
func chooseOption(opts []protocol.PermissionOption, answer string) string {
	a := strings.TrimSpace(answer)
	for _, o := range opts {
		if o.ID == a || strings.EqualFold(o.Name, a) {
			return o.ID
		}
	}
	var kinds []string
	switch {
	case strings.EqualFold(a, eventstore.AnswerAllow):
		kinds = []string{protocol.AllowOnce, protocol.AllowAlways}
	case strings.EqualFold(a, eventstore.AnswerAllowAlways):
		kinds = []string{protocol.AllowAlways, protocol.AllowOnce}
	default:
		kinds = []string{protocol.RejectOnce, protocol.RejectAlways}
	}
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return o.ID
			}
		}
	}
	return ""
}

// errNotReady reports a message before the conversation started.
var errNotReady = errors.New("the ACP agent's process has not started")

// Encode delivers a message over ACP. The client writes the JSON-RPC
// itself, so Encode returns no bytes: a prompt is delivered once its
// session/prompt request is written, an answer once it is handed to the
// request waiting for it, an interrupt once session/cancel is written.
func (d *Driver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	d.mu.Lock()
	client := d.client
	d.mu.Unlock()
	if client == nil {
		return nil, false, errNotReady
	}
	// The handshake ends within Timeout, answered or not.
	select {
	case <-d.ready:
	case <-time.After(2 * Timeout):
		return nil, false, fmt.Errorf("the ACP handshake did not end within %s", 2*Timeout)
	}
	d.mu.Lock()
	openErr := d.openErr
	d.mu.Unlock()
	if openErr != nil {
		return nil, false, openErr
	}
	switch {
	case m.MessageType == "interrupt":
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := client.Cancel(ctx); err != nil {
			return nil, false, fmt.Errorf("session/cancel: %w", err)
		}
		return nil, true, nil
	case p.RequestID != "":
		d.mu.Lock()
		req, ok := d.pending[p.RequestID]
		if ok {
			delete(d.pending, p.RequestID)
		}
		d.mu.Unlock()
		if !ok {
			return nil, false, fmt.Errorf("the ACP agent has no open permission request %q", p.RequestID)
		}
		req.answer <- p.Text
		return nil, true, nil
	}
	text := p.Text
	if m.MessageType != "prompt" && m.MessageType != "answer" {
		// A command the agent advertised (available_commands_update) is
		// run by a prompt that types it.
		text = strings.TrimSpace("/" + m.MessageType + " " + text)
	}
	return d.prompt(client, text)
}

// prompt sends session/prompt and returns once the request is written;
// the turn runs on, and ends with the response the parser reads, or here
// when the prompt fails.
func (d *Driver) prompt(client *protocol.Client, text string) ([]byte, bool, error) {
	if client.Running() {
		return nil, false, protocol.ErrBusy
	}
	sent := &promptSent{ch: make(chan error, 1)}
	done := make(chan error, 1)
	d.mu.Lock()
	d.sent = sent
	if d.retelling != "" {
		// The session's conversation, retold, ends where the prompt
		// follows (retellNext).
		text, d.retelling = d.retelling+text, ""
	}
	d.mu.Unlock()
	go func() {
		_, err := client.Prompt(context.Background(), text)
		done <- err
		if err == nil {
			return
		}
		if !sent.wrote.Load() {
			return
		}
		d.note(codeACPPrompt, "session/prompt: "+err.Error())
		d.mu.Lock()
		hung, endTurn := d.hung, d.conv.EndTurn
		d.mu.Unlock()
		// A prompt that never went out fails its delivery instead.
		if !hung && sent.wrote.Load() {
			endTurn(true, "session/prompt: "+err.Error())
		}
	}()
	select {
	case err := <-sent.ch:
		if err != nil {
			return nil, false, fmt.Errorf("write session/prompt: %w", err)
		}
		return nil, true, nil
	case err := <-done:
		if err != nil {
			return nil, false, fmt.Errorf("session/prompt: %w", err)
		}
		return nil, true, nil
	case <-time.After(Timeout):
		return nil, false, fmt.Errorf("session/prompt was not written within %s", Timeout)
	}
}
