package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// ProtocolVersion is the ACP protocol version the client speaks.
const ProtocolVersion = sdk.ProtocolVersionNumber

var (
	// ErrOutsideDir reports a file request for a path outside the working
	// directory; the agent gets it as a JSON-RPC error.
	ErrOutsideDir = errors.New("acp: path is outside the working directory")
	// ErrBusy reports a prompt while another prompt's turn runs: ACP has
	// one turn at a time per session.
	ErrBusy = errors.New("acp: a turn is running")
	// ErrNoSession reports a prompt before session/new or session/load
	// succeeded.
	ErrNoSession = errors.New("acp: no session")
)

// errCodeRefused is the JSON-RPC error code of a refused request: invalid
// params, since the request named what this client does not allow.
const errCodeRefused = -32602

// errCodeNotFound is ACP's "resource not found" error code. Agents tell a
// file that does not exist from a failed read by it (Gemini CLI takes it,
// with the message "Resource not found", as ENOENT, and so writes a new
// file instead of failing).
const errCodeNotFound = -32002

// Config configures a Client.
type Config struct {
	// Write writes to the agent's stdin; the client writes whole lines.
	Write func([]byte) error
	// Dir is the working directory: session/new's cwd, and the only tree
	// the agent's file requests may touch.
	Dir string
	// Permission is asked for each session/request_permission; it returns
	// the chosen option id, or "" (or ctx's end) for a cancelled request.
	// Nil refuses every request (cancelled).
	Permission func(ctx context.Context, r PermissionRequest) (optionID string)
	// Refused is told about each agent request the client refused, and why.
	Refused func(method, reason string)
	// Logger receives the connection's own diagnostics; discarded when nil.
	Logger *slog.Logger
}

// Client is the client side of one ACP connection.
type Client struct {
	cfg  Config
	conn *sdk.ClientSideConnection
	// in feeds the agent's output lines to the connection's reader.
	in  *io.PipeWriter
	ctx context.Context
	end context.CancelFunc

	mu      sync.Mutex
	session string
	turn    context.CancelFunc // the running prompt's, nil between turns
	closed  bool

	terms terminals
	files *fileGate
}

// NewClient starts the connection's readers; nothing is written until Open.
func NewClient(cfg Config) *Client {
	pr, pw := io.Pipe()
	c := &Client{cfg: cfg, in: pw, files: newFileGate()}
	c.ctx, c.end = context.WithCancel(context.Background())
	c.conn = sdk.NewClientSideConnection(handler{c}, writer(cfg.Write), pr)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.conn.SetLogger(logger)
	return c
}

type writer func([]byte) error

func (w writer) Write(b []byte) (int, error) {
	if err := w(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Feed hands one line of the agent's stdout to the connection. It blocks
// while the connection is busy reading the line before it.
func (c *Client) Feed(line []byte) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	_, _ = c.in.Write(buf)
}

// Capabilities are what an agent's initialize response offers that the
// client acts on.
type Capabilities struct {
	// LoadSession: the agent takes session/load, replaying the session's
	// history as session/update notifications before it answers.
	LoadSession bool
}

// Open runs the handshake: initialize, then session/new in dir. It
// returns the session id.
func (c *Client) Open(ctx context.Context) (string, error) {
	if _, err := c.Initialize(ctx); err != nil {
		return "", err
	}
	return c.NewSession(ctx)
}

// Initialize sends initialize and returns what the agent offers.
func (c *Client) Initialize(ctx context.Context) (Capabilities, error) {
	ini, err := c.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{
			Fs:       sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
		},
		ClientInfo: &sdk.Implementation{Name: "agentjournal", Version: "1"},
	})
	if err != nil {
		return Capabilities{}, fmt.Errorf("initialize: %w", describe(ctx, err))
	}
	if ini.ProtocolVersion != sdk.ProtocolVersionNumber {
		return Capabilities{}, fmt.Errorf("initialize: the agent speaks protocol version %d, this client %d", ini.ProtocolVersion, sdk.ProtocolVersionNumber)
	}
	return Capabilities{LoadSession: ini.AgentCapabilities.LoadSession}, nil
}

// NewSession sends session/new in dir and returns the session id.
func (c *Client) NewSession(ctx context.Context) (string, error) {
	s, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: c.cfg.Dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		return "", fmt.Errorf("session/new: %w", describe(ctx, err))
	}
	c.mu.Lock()
	c.session = string(s.SessionId)
	c.mu.Unlock()
	return string(s.SessionId), nil
}

// LoadSession sends session/load of session in dir, for an agent whose
// initialize offered it. The agent replays the session's history as
// session/update notifications before it answers; prompts then continue
// that session.
func (c *Client) LoadSession(ctx context.Context, session string) error {
	_, err := c.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(session), Cwd: c.cfg.Dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		return fmt.Errorf("session/load %s: %w", session, describe(ctx, err))
	}
	c.mu.Lock()
	c.session = session
	c.mu.Unlock()
	return nil
}

// describe names a timeout as such: the SDK reports a context's end as an
// internal error.
func describe(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("no answer from the agent: %w", context.Cause(ctx))
	}
	return err
}

// Prompt sends session/prompt with text and waits for its response: the
// turn's stop reason and, when the agent reports it, its usage.
func (c *Client) Prompt(ctx context.Context, text string) (PromptResult, error) {
	c.mu.Lock()
	switch {
	case c.session == "":
		c.mu.Unlock()
		return PromptResult{}, ErrNoSession
	case c.turn != nil:
		c.mu.Unlock()
		return PromptResult{}, ErrBusy
	}
	ctx, cancel := context.WithCancel(ctx)
	c.turn = cancel
	session := c.session
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.turn = nil
		c.mu.Unlock()
		cancel()
	}()
	resp, err := c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sdk.SessionId(session), Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		return PromptResult{}, describe(ctx, err)
	}
	return promptResult(resp), nil
}

// Running reports whether a prompt's turn runs.
func (c *Client) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn != nil
}

// Cancel sends session/cancel for the running turn; the agent ends it
// with stop reason "cancelled". Open permission requests are cancelled by
// their callers seeing ctx end.
func (c *Client) Cancel(ctx context.Context) error {
	c.mu.Lock()
	session := c.session
	c.mu.Unlock()
	if session == "" {
		return ErrNoSession
	}
	return c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: sdk.SessionId(session)})
}

// Close ends the connection: waiting calls return, the readers stop. Safe
// to call twice.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.terms.closeAll()
	c.end()
	c.in.Close()
	<-c.conn.Done()
}

// Done is closed once the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// handler answers the agent's requests.
type handler struct{ c *Client }

var _ sdk.Client = handler{}

func (h handler) refuse(method string, err error) error {
	if h.c.cfg.Refused != nil {
		h.c.cfg.Refused(method, err.Error())
	}
	// The agent gets the reason itself, not the library's generic
	// internal error.
	return &sdk.RequestError{Code: errCodeRefused, Message: err.Error()}
}

func (h handler) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	cancelled := sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}
	if h.c.cfg.Permission == nil {
		return cancelled, nil
	}
	// The request ends with the connection, whatever the callback does.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-h.c.ctx.Done():
			stop()
		case <-ctx.Done():
		}
	}()
	id := h.c.cfg.Permission(ctx, permissionRequest(p))
	if id == "" {
		return cancelled, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(id))}, nil
}

// SessionUpdate does nothing: the caller reads the updates from the lines
// it feeds (Decode), in their order.
func (handler) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
