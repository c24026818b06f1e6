package execution

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

	"github.com/agentjournal/agentjournal/acp"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution/provider"
)

// conversant is a Driver that talks to its agent on its own, not only when
// a message is delivered: an ACP client runs a handshake at start and
// answers the agent's requests. The runtime hands it the process's input
// once the process runs, and hangs up when the process's output has ended
// or the operator stops it. Such an agent keeps its process on this
// runtime's pipes (never supervised): the conversation's state lives here.
type conversant interface {
	// Converse starts the conversation; it must not block.
	Converse(c conversation)
	// Hangup cancels a running turn (best effort) and ends the
	// conversation; what the agent writes after it is still journaled by
	// the parser but no longer answered. Safe to call more than once.
	Hangup()
}

// conversation is what a conversant gets from the runtime.
type conversation struct {
	// dir is the execution's working directory.
	dir string
	// write writes to the agent's stdin.
	write func([]byte) error
	// note records a diagnostic observation: something the driver saw go
	// wrong in the exchange.
	note func(code, message string)
	// endTurn ends the running turn when its end will not come from the
	// agent's output (the prompt failed).
	endTurn func(failed bool, reason string)
	// status records a status observation of the driver's own: how the
	// session was continued.
	status func(phase, summary string)
	// loading tells the parser of the session/load request id (its JSON
	// text) for session, before the request goes out; prompting that a
	// session/prompt is about to go out, which ends the replay.
	loading   func(id, session string)
	prompting func()
}

func conversing(d Driver) bool {
	_, ok := d.(conversant)
	return ok
}

// converse starts the conversation of a conversant driver with the
// process c.
func (rt *Runtime) converse(p *process, c *child) {
	cv, ok := p.driver.(conversant)
	if !ok {
		return
	}
	var n atomic.Int64
	cv.Converse(conversation{
		dir: p.dir,
		write: func(b []byte) error {
			_, err := c.write(b)
			return err
		},
		note: func(code, message string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt.record(ctx, p.ref, &eventstore.Observation{ObservationID: fmt.Sprintf("%s-client-%d", c.prefix, n.Add(1)),
				Source: p.source, Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{
					Code: code, Message: clipReason(message), Adapter: p.adapter.ID()})})
		},
		endTurn: func(failed bool, reason string) {
			c.parseMu.Lock()
			defer c.parseMu.Unlock()
			rt.turnEnded(p, c, provider.TurnEnd{Failed: failed, Reason: reason})
		},
		status: func(phase, summary string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt.record(ctx, p.ref, &eventstore.Observation{ObservationID: fmt.Sprintf("%s-client-%d", c.prefix, n.Add(1)),
				Source: p.source, Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(&eventstore.StatusSignal{
					Phase: phase, Summary: clipReason(summary)})})
		},
		loading: func(id, session string) {
			// Not under parseMu: the request is written from the
			// client's goroutine, which a delivery under parseMu may
			// wait for. The parser guards its load state itself.
			if l, ok := c.parser.(interface{ Loading(id, session string) }); ok {
				l.Loading(id, session)
			}
		},
		prompting: func() {
			if l, ok := c.parser.(interface{ Prompting() }); ok {
				l.Prompting()
			}
		},
	})
}

// hangup ends a conversant driver's conversation.
func hangup(p *process) {
	if cv, ok := p.driver.(conversant); ok {
		cv.Hangup()
	}
}

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

// acpTimeout bounds the waits on an ACP agent that are not a turn: the
// handshake's answers, a prompt's request reaching the agent, a cancel.
var acpTimeout = 60 * time.Second

// acpAdapter runs an Agent Client Protocol agent: the acp adapter any
// command, the presets a known CLI in its ACP mode.
type acpAdapter struct {
	id      string
	program string   // the preset's program; "" for acp, which needs a command
	args    []string // the preset's arguments, before the user's
}

// acpPresets are the known ACP agents, by adapter id.
var acpPresets = []acpAdapter{
	{id: "acp"},
	{id: "copilot-acp", program: "copilot", args: []string{"--acp"}},
	{id: "gemini", program: "gemini", args: []string{"--acp"}},
	{id: "claude-code-acp", program: "claude-code-acp"},
	{id: "codex-acp", program: "codex-acp"},
}

func acpAdapterFor(id string) (acpAdapter, bool) {
	for _, a := range acpPresets {
		if a.id == id {
			return a, true
		}
	}
	return acpAdapter{}, false
}

func acpAdapterIDs() []string {
	out := make([]string, len(acpPresets))
	for i, a := range acpPresets {
		out[i] = a.id
	}
	return out
}

func (a acpAdapter) ID() string     { return a.id }
func (acpAdapter) Provider() string { return provider.ACP }
func (acpAdapter) Shapes() []eventstore.SessionShape {
	return []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
}
func (acpAdapter) Approvals() *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsJournal}
}
func (acpAdapter) Messages(eventstore.SessionShape) []eventstore.MessageDescriptor {
	interrupt := interruptMessage
	interrupt.Description = "Cancel the current turn (ACP session/cancel)"
	return []eventstore.MessageDescriptor{promptMessage, answerMessage, interrupt}
}
func (a acpAdapter) NewDriver(command []string, _ eventstore.SessionShape) Driver {
	return &acpDriver{adapter: a, command: command, ready: make(chan struct{}), pending: map[string]*acpPending{}}
}

// acpDriver is the client side of one ACP agent process.
type acpDriver struct {
	adapter acpAdapter
	command []string
	ready   chan struct{} // closed when the handshake has ended

	mu      sync.Mutex
	conv    conversation
	client  *acp.Client
	openErr error
	hung    bool
	// pending are the permission requests waiting for the operator, by
	// request id (the tool call's id).
	pending map[string]*acpPending
	// sent is told when a session/prompt request was written.
	sent *acpSent
	// cont is the session a resume continues; nil for a new one.
	cont *Continuation
	// retelling goes ahead of the first prompt when the agent could not
	// continue cont's session (retell).
	retelling string
}

// acpSent follows one session/prompt request out.
type acpSent struct {
	ch    chan error
	wrote atomic.Bool
}

// acpPending is a permission request waiting for its answer.
type acpPending struct {
	options []acp.PermissionOption
	answer  chan string
}

var (
	_ conversant = (*acpDriver)(nil)
	_ continuer  = (*acpDriver)(nil)
)

// Continue makes the handshake load c's session (session/load) when the
// agent offers it, and otherwise start a new one that gets c.Retelling
// ahead of the first prompt. A fork is never native: session/fork is
// unstable in the protocol and forks a whole session, not at a message.
func (d *acpDriver) Continue(c Continuation) error {
	if c.Fork {
		return fmt.Errorf("the %s agent does not fork a session of its own", d.adapter.id)
	}
	d.cont = &c
	return nil
}

func (d *acpDriver) Start(string, string) (string, []string, error) {
	if d.adapter.program == "" {
		if len(d.command) == 0 {
			return "", nil, fmt.Errorf("the acp agent needs the command of an ACP agent (after --), e.g. -- gemini --acp")
		}
		return d.command[0], slices.Clone(d.command[1:]), nil
	}
	program, extra := userCommand(d.command, d.adapter.program)
	return program, append(slices.Clone(d.adapter.args), extra...), nil
}

func (*acpDriver) TurnsOnStdin() bool { return true }

func (d *acpDriver) Line(line []byte) {
	d.mu.Lock()
	c := d.client
	d.mu.Unlock()
	if c != nil {
		c.Feed(line)
	}
}

func (d *acpDriver) Converse(conv conversation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conv = conv
	d.client = acp.NewClient(acp.Config{
		Write:      d.write,
		Dir:        conv.dir,
		Permission: d.permission,
		Refused: func(method, reason string) {
			d.note(codeACPRefused, "refused the agent's "+method+": "+reason)
		},
	})
	client := d.client
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), acpTimeout)
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
func (d *acpDriver) open(ctx context.Context, client *acp.Client) error {
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
	status := d.conv.status
	d.mu.Unlock()
	// The header, written before the handshake, says native: this record
	// is what happened instead.
	status(provider.PhaseACPHistoryReconstructed, fmt.Sprintf("the ACP agent does not continue its session %s (%s): a new session gets the conversation retold from the journal ahead of its first prompt, so this run's history is reconstructed, not native", c.Session, why))
	return nil
}

// write writes to the agent and tells a prompt waiting to know that its
// request went out.
func (d *acpDriver) write(b []byte) error {
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
			d.conv.loading(string(req.ID), req.Params.SessionID)
		}
	}
	prompt := bytes.Contains(b, []byte(`"method":"session/prompt"`))
	if prompt {
		d.conv.prompting()
	}
	err := d.conv.write(b)
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

func (d *acpDriver) note(code, message string) {
	d.mu.Lock()
	hung, note := d.hung, d.conv.note
	d.mu.Unlock()
	if !hung && note != nil {
		note(code, message)
	}
}

func (d *acpDriver) Hangup() {
	d.mu.Lock()
	if d.hung || d.client == nil {
		d.hung = true
		d.mu.Unlock()
		return
	}
	d.hung = true
	client := d.client
	pending := d.pending
	d.pending = map[string]*acpPending{}
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
func (d *acpDriver) permission(ctx context.Context, r acp.PermissionRequest) string {
	p := &acpPending{options: r.Options, answer: make(chan string, 1)}
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
func chooseOption(opts []acp.PermissionOption, answer string) string {
	a := strings.TrimSpace(answer)
	for _, o := range opts {
		if o.ID == a || strings.EqualFold(o.Name, a) {
			return o.ID
		}
	}
	var kinds []string
	switch {
	case strings.EqualFold(a, eventstore.AnswerAllow):
		kinds = []string{acp.AllowOnce, acp.AllowAlways}
	case strings.EqualFold(a, eventstore.AnswerAllowAlways):
		kinds = []string{acp.AllowAlways, acp.AllowOnce}
	default:
		kinds = []string{acp.RejectOnce, acp.RejectAlways}
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
func (d *acpDriver) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
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
	// The handshake ends within acpTimeout, answered or not.
	select {
	case <-d.ready:
	case <-time.After(2 * acpTimeout):
		return nil, false, fmt.Errorf("the ACP handshake did not end within %s", 2*acpTimeout)
	}
	d.mu.Lock()
	openErr := d.openErr
	d.mu.Unlock()
	if openErr != nil {
		return nil, false, openErr
	}
	switch {
	case m.MessageType == "interrupt":
		ctx, cancel := context.WithTimeout(context.Background(), acpTimeout)
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
func (d *acpDriver) prompt(client *acp.Client, text string) ([]byte, bool, error) {
	if client.Running() {
		return nil, false, acp.ErrBusy
	}
	sent := &acpSent{ch: make(chan error, 1)}
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
		hung, endTurn := d.hung, d.conv.endTurn
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
	case <-time.After(acpTimeout):
		return nil, false, fmt.Errorf("session/prompt was not written within %s", acpTimeout)
	}
}
