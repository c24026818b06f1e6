package codexapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/codex"
)

// ID is the agent's id in headers and on the command line.
const ID = "codex-app"

// Diagnostic codes of the driver's own observations. Persisted: never
// rename one.
const (
	// codeHandshake: initialize or thread/start (resume, fork) failed or
	// went unanswered.
	codeHandshake = "codex-app-handshake"
	// codeRefused: Codex asked for something this client does not answer
	// (an MCP elicitation, a dynamic tool), and was told so.
	codeRefused = "codex-app-refused"
	// codeSteer: a message for the running turn could not steer it and
	// started a turn of its own instead.
	codeSteer = "codex-app-steer"
)

// Timeout bounds the waits on Codex that are not a turn: the handshake's
// answers and the answer to a turn/start, turn/steer or turn/interrupt. A
// variable so that a test can shorten it.
var Timeout = 60 * time.Second

// Sandbox and approval policy of every thread: Codex runs commands in a
// workspace-write sandbox, and asks, through the journal, before a
// command it wants to run outside it or a file change outside the
// workspace ("on-request"; 0.169.0 no longer takes "untrusted").
const (
	sandboxMode    = "workspace-write"
	approvalPolicy = "on-request"
)

// policy is the same policy as config overrides on the command line, so
// that the header records it; thread/start, thread/resume and thread/fork
// say it again, since a thread resumed keeps the settings it was saved
// with unless told otherwise.
var policy = []string{"-c", `sandbox_mode="` + sandboxMode + `"`, "-c", `approval_policy="` + approvalPolicy + `"`}

// quiet are the notifications Codex is asked not to send
// (optOutNotificationMethods): streamed deltas of what also arrives whole
// in item/completed. They would only fill the output log.
var quiet = []string{
	"item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta",
	"item/reasoning/summaryPartAdded", "item/reasoning/textDelta", "item/commandExecution/outputDelta",
	"item/fileChange/outputDelta", "turn/diff/updated",
}

// Agent is `codex app-server`: one process for the whole execution,
// speaking JSON-RPC on its stdin and stdout.
type Agent struct{}

var _ agent.Agent = Agent{}

func (Agent) ID() string { return ID }

// Provider: the lines are read by the Codex parser, the one that reads
// `codex exec --json`, so its diagnostics name it.
func (Agent) Provider() string { return agent.Codex }

// Capabilities: thread/resume continues a thread, thread/fork branches it
// through a turn (lastTurnId).
func (Agent) Capabilities() agent.Capabilities {
	return agent.Capabilities{Protocol: agent.ProtocolAppServer, NativeResume: true, NativeFork: true}
}

func (Agent) Shapes() []eventstore.SessionShape { return agent.SessionShapes() }

func (Agent) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsJournal, Flags: slices.Clone(policy)}
}

func (Agent) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	p := agent.PromptMessage
	p.Description = "Instructions for the agent; during a turn, they steer it (turn/steer)"
	interrupt := agent.InterruptMessage
	interrupt.Description = "Interrupt the current turn (turn/interrupt)"
	return []eventstore.MessageDescriptor{p, agent.AnswerMessage, interrupt}
}

func (Agent) LineTypes() []string { return agent.Sorted(lineTypes) }

func (Agent) NewDriver(command []string, shape eventstore.SessionShape) agent.Driver {
	return &Driver{command: command, shape: shape, ready: make(chan struct{}),
		calls: map[string]chan response{}, pending: map[string]*approval{}}
}

// Driver is the client side of one `codex app-server` process, and the
// reader of its stdout.
type Driver struct {
	command []string
	shape   eventstore.SessionShape
	ready   chan struct{} // closed when the handshake has ended

	// writeMu keeps each JSON-RPC message whole on stdin.
	writeMu sync.Mutex
	// promptMu lets one prompt at a time decide between starting a turn
	// and steering the running one.
	promptMu sync.Mutex

	mu      sync.Mutex
	conv    agent.Conversation
	started bool // Converse was called
	hung    bool
	openErr error
	nextID  int64
	// calls are the requests sent and not answered, by JSON-RPC id.
	calls map[string]chan response
	// pending are Codex's approval requests waiting for the operator, by
	// the needs-input request id.
	pending map[string]*approval
	// cont is the thread a resume or fork continues; nil for a new one.
	cont *agent.Continuation
	// thread is the conversation's thread, once the handshake named it;
	// turn the running turn, "" between turns; ended the last turn that
	// ended, so that a late answer to turn/start does not revive it.
	thread, turn, ended string

	// out is the reading of the process's stdout, under the runtime's
	// one-reader-at-a-time rule (agent.Reader).
	out reader
}

// approval is an approval request of Codex waiting for its answer.
type approval struct {
	rpcID json.RawMessage
}

// response is Codex's answer to one of the client's requests.
type response struct {
	result json.RawMessage
	err    *rpcError
}

var (
	_ agent.Reader  = (*Driver)(nil)
	_ agent.Flusher = (*Driver)(nil)
)

// Output begins the reading of the process's stdout.
func (d *Driver) Output(idPrefix string) error {
	// The exec parser reads what each line says once rendered as
	// `codex exec --json` renders it (reader).
	exec, ok := codex.Agent{}.NewDriver(nil, d.shape).(*codex.Driver)
	if !ok {
		return errors.New("the codex agent's driver is not the exec parser")
	}
	if err := exec.Output(idPrefix); err != nil {
		return err
	}
	d.out = reader{exec: exec}
	return nil
}

// Continue makes the handshake resume c's thread (thread/resume), or fork
// it (thread/fork) through the turn c.At when c.Fork.
func (d *Driver) Continue(c agent.Continuation) error {
	d.cont = &c
	return nil
}

// Start is `codex app-server` with the policy's overrides; the prompt goes
// on stdin once the process runs.
func (d *Driver) Start(string, string) (string, []string, error) {
	program, extra := agent.UserCommand(d.command, "codex")
	return program, append(append([]string{"app-server"}, policy...), extra...), nil
}

// TurnsOnStdin is true: every turn is a turn/start on the one process's
// stdin.
func (*Driver) TurnsOnStdin() bool { return true }

// Converse starts the handshake on a goroutine of its own.
func (d *Driver) Converse(conv agent.Conversation) {
	d.mu.Lock()
	d.conv, d.started = conv, true
	d.mu.Unlock()
	go func() {
		err := d.open(conv.Dir)
		if err != nil {
			err = fmt.Errorf("the codex app-server handshake failed: %w", err)
			d.note(codeHandshake, err.Error())
		}
		d.mu.Lock()
		d.openErr = err
		d.mu.Unlock()
		close(d.ready)
	}()
}

// open runs the handshake: initialize, initialized, then thread/start,
// thread/resume or thread/fork.
func (d *Driver) open(dir string) error {
	init := map[string]any{
		"clientInfo":   map[string]any{"name": "agentjournal", "version": "1"},
		"capabilities": map[string]any{"optOutNotificationMethods": quiet},
	}
	if _, err := d.call("initialize", init); err != nil {
		return err
	}
	if err := d.send(map[string]any{"method": "initialized"}); err != nil {
		return err
	}
	params := map[string]any{"cwd": dir, "approvalPolicy": approvalPolicy, "sandbox": sandboxMode}
	method := "thread/start"
	if c := d.cont; c != nil {
		method, params["threadId"] = "thread/resume", c.Session
		if c.Fork {
			method = "thread/fork"
			if c.At != "" {
				params["lastTurnId"] = c.At
			}
		}
	}
	res, err := d.call(method, params)
	if err != nil {
		return err
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Thread.ID == "" {
		return fmt.Errorf("%s answered without a thread id: %s", method, clip(res))
	}
	d.mu.Lock()
	d.thread = r.Thread.ID
	d.mu.Unlock()
	return nil
}

// errHungUp reports a request cut short by the end of the conversation.
var errHungUp = errors.New("the codex app-server conversation has ended")

// call sends a request and waits for its answer.
func (d *Driver) call(method string, params any) (json.RawMessage, error) {
	ch := make(chan response, 1)
	d.mu.Lock()
	if d.hung {
		d.mu.Unlock()
		return nil, errHungUp
	}
	d.nextID++
	id := d.nextID
	key := strconv.FormatInt(id, 10)
	d.calls[key] = ch
	d.mu.Unlock()
	forget := func() {
		d.mu.Lock()
		delete(d.calls, key)
		d.mu.Unlock()
	}
	if err := d.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		forget()
		return nil, fmt.Errorf("write %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: %w", method, errHungUp)
		}
		if r.err != nil {
			return nil, fmt.Errorf("%s: %s (code %d)", method, r.err.Message, r.err.Code)
		}
		return r.result, nil
	case <-time.After(Timeout):
		forget()
		return nil, fmt.Errorf("%s went unanswered for %s", method, Timeout)
	}
}

// answered hands a response to the request waiting for it; false when
// no request waits for that id.
func (d *Driver) answered(id json.RawMessage, r response) bool {
	key := string(id)
	d.mu.Lock()
	ch, ok := d.calls[key]
	delete(d.calls, key)
	d.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

// send writes one JSON-RPC message, a line, to Codex's stdin.
func (d *Driver) send(msg map[string]any) error {
	d.mu.Lock()
	write := d.conv.Write
	d.mu.Unlock()
	if write == nil {
		return errNotReady
	}
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	return write(append(line, '\n'))
}

func (d *Driver) note(code, message string) {
	d.mu.Lock()
	hung, note := d.hung, d.conv.Note
	d.mu.Unlock()
	if !hung && note != nil {
		note(code, message)
	}
}

// Hangup ends the conversation: requests waiting for an answer get none,
// and Codex's approval requests are no longer answered.
func (d *Driver) Hangup() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hung {
		return
	}
	d.hung = true
	for k, ch := range d.calls {
		close(ch)
		delete(d.calls, k)
	}
	clear(d.pending)
}

// errNotReady reports a message before the conversation started.
var errNotReady = errors.New("the codex app-server process has not started")

// Encode delivers a message over JSON-RPC. The driver writes it itself,
// so Encode returns no bytes: a prompt starts a turn (turn/start) or,
// during one, steers it (turn/steer); an answer is the response to the
// approval request it names; an interrupt is turn/interrupt.
func (d *Driver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := m.DecodePayload()
	if err != nil {
		return nil, false, err
	}
	d.mu.Lock()
	started := d.started
	d.mu.Unlock()
	if !started {
		return nil, false, errNotReady
	}
	// The handshake ends within two waits of Timeout (initialize, then
	// the thread), answered or not, and its writes.
	select {
	case <-d.ready:
	case <-time.After(3 * Timeout):
		return nil, false, fmt.Errorf("the codex app-server handshake did not end within %s", 3*Timeout)
	}
	d.mu.Lock()
	openErr, thread, turn := d.openErr, d.thread, d.turn
	d.mu.Unlock()
	if openErr != nil {
		return nil, false, openErr
	}
	switch {
	case m.MessageType == "interrupt":
		if turn == "" {
			return nil, false, errors.New("no Codex turn is running")
		}
		if _, err := d.call("turn/interrupt", map[string]any{"threadId": thread, "turnId": turn}); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	case p.RequestID != "":
		return nil, true, d.answer(p.RequestID, p.Text)
	}
	text := p.Text
	if m.MessageType != "prompt" && m.MessageType != "answer" {
		text = strings.TrimSpace("/" + m.MessageType + " " + text)
	}
	if strings.TrimSpace(text) == "" {
		return nil, false, errors.New("a message to Codex needs text")
	}
	return nil, true, d.prompt(thread, text)
}

// prompt starts a turn with text, or steers the running turn with it.
// Codex refuses a steer when the turn it names has ended (or is not the
// running one): the text then starts a turn of its own.
func (d *Driver) prompt(thread, text string) error {
	d.promptMu.Lock()
	defer d.promptMu.Unlock()
	input := []map[string]any{{"type": "text", "text": text}}
	d.mu.Lock()
	turn := d.turn
	d.mu.Unlock()
	if turn != "" {
		_, err := d.call("turn/steer", map[string]any{"threadId": thread, "expectedTurnId": turn, "input": input})
		if err == nil {
			return nil
		}
		d.note(codeSteer, "the message could not steer turn "+turn+" ("+err.Error()+"): it starts a turn of its own")
	}
	res, err := d.call("turn/start", map[string]any{"threadId": thread, "input": input})
	if err != nil {
		return err
	}
	var r struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(res, &r)
	d.mu.Lock()
	// turn/started may have come first, or the turn may even have ended
	// already (turn/completed cleared it): only a turn still running is
	// the one to steer.
	if r.Turn.ID != "" && r.Turn.Status == "inProgress" && d.ended != r.Turn.ID {
		d.turn = r.Turn.ID
	}
	d.mu.Unlock()
	return nil
}

// resolved forgets the approval request whose JSON-RPC id is rpcID.
func (d *Driver) resolved(rpcID json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, a := range d.pending {
		if bytes.Equal(a.rpcID, rpcID) {
			delete(d.pending, id)
		}
	}
}

// answer responds to the approval request id with the operator's answer:
// allow accepts, allow-always accepts for the rest of the session, and
// anything else declines (Codex goes on with the turn without it).
func (d *Driver) answer(id, text string) error {
	d.mu.Lock()
	a, ok := d.pending[id]
	delete(d.pending, id)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("Codex has no open approval request %q", id)
	}
	decision := "decline"
	switch t := strings.TrimSpace(text); {
	case strings.EqualFold(t, eventstore.AnswerAllow):
		decision = "accept"
	case strings.EqualFold(t, eventstore.AnswerAllowAlways):
		decision = "acceptForSession"
	}
	return d.send(map[string]any{"id": a.rpcID, "result": map[string]any{"decision": decision}})
}

func clip(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
