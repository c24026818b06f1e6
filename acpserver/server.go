package acpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// ProtocolVersion is the ACP protocol version the server speaks.
const ProtocolVersion = sdk.ProtocolVersionNumber

// MetaKey is the key of session/new's _meta object that chooses what to
// launch: {"agent": …, "command": [...], "owner": "ENTITY/ID"}.
const MetaKey = "agentjournal"

// Bounds of the waits that are not a turn.
const (
	// cancelWait bounds how long a cancelled prompt waits for the
	// journal to record its turn's end before answering cancelled.
	cancelWait = 30 * time.Second
	// daemonRetries is how many failed reconnections to the event stream
	// a running turn survives before it fails with the reason.
	daemonRetries = 4
	// listPage is the number of sessions of one session/list page.
	listPage = 50
)

// Config says what session/new launches when the request names nothing.
// The zero value launches nothing: session/new then needs _meta.
type Config struct {
	// Agent is the adapter: generic, claude-code, codex, copilot, acp, ….
	Agent string
	// Command is the agent's command (required by generic and acp).
	Command []string
	// OwnerEntity and OwnerID own the executions launched; System/acp
	// when empty.
	OwnerEntity eventstore.OwnerEntity
	OwnerID     string
	// ListOwned keeps session/list to the executions of OwnerEntity and
	// OwnerID; it lists every execution when false.
	ListOwned bool
	// Version is the version agentInfo reports.
	Version string
	// Logger gets what the protocol cannot carry (a failed notification,
	// a lost event stream); nothing is logged when nil.
	Logger *slog.Logger
}

// Server is one ACP connection's agent: the sessions it opened or loaded,
// each following its execution's events.
type Server struct {
	cfg    Config
	client *client.Client
	conn   *sdk.AgentSideConnection
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
}

var (
	_ sdk.Agent       = (*Server)(nil)
	_ sdk.AgentLoader = (*Server)(nil)
)

// Serve speaks ACP as an agent on in and out until in ends or ctx is
// cancelled, then stops following every session and returns.
func Serve(ctx context.Context, c *client.Client, cfg Config, in io.Reader, out io.Writer) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.OwnerEntity == "" {
		cfg.OwnerEntity, cfg.OwnerID = eventstore.OwnerSystem, "acp"
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Server{cfg: cfg, client: c, log: log, ctx: sctx, cancel: cancel, sessions: map[string]*session{}}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	// screen ends when in does: a Serve ended by ctx leaves it blocked in
	// a read of in until the caller closes it (a process's stdin ends
	// with the process).
	go screen(in, pw, w)
	s.conn = sdk.NewAgentSideConnection(s, w, pr)
	s.conn.SetLogger(log)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	pr.Close()
	s.cancel()
	s.wg.Wait()
	return nil
}

// Initialize answers with protocol version 1 whatever the client asks:
// the client decides whether it speaks it.
func (s *Server) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	version := s.cfg.Version
	if version == "" {
		version = "dev"
	}
	return sdk.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession: true,
			// Text and resource links (which every agent takes) only: a
			// message is journaled as text.
			PromptCapabilities:  sdk.PromptCapabilities{},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: "agentjournal", Title: sdk.Ptr("agentjournal"), Version: version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate has nothing to do: the daemon's token was found already.
func (s *Server) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// launchMeta is session/new's _meta.agentjournal.
type launchMeta struct {
	Agent   string   `json:"agent"`
	Command []string `json:"command"`
	Owner   string   `json:"owner"`
}

// NewSession launches an execution and opens it as a session.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	req := client.LaunchRequest{OwnerEntity: s.cfg.OwnerEntity, OwnerID: s.cfg.OwnerID,
		Agent: s.cfg.Agent, Command: s.cfg.Command, Dir: p.Cwd}
	if raw, ok := p.Meta[MetaKey]; ok {
		var m launchMeta
		data, _ := json.Marshal(raw)
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return sdk.NewSessionResponse{}, invalidParams(fmt.Sprintf("_meta.%s: %v (want {\"agent\": NAME, \"command\": [PROGRAM, ARGS…], \"owner\": \"ENTITY/ID\"})", MetaKey, err))
		}
		if m.Agent != "" {
			req.Agent, req.Command = m.Agent, nil
		}
		if len(m.Command) > 0 {
			req.Command = m.Command
		}
		if m.Owner != "" {
			entity, id, ok := strings.Cut(m.Owner, "/")
			e, err := eventstore.ParseOwnerEntity(entity)
			if !ok || id == "" || err != nil {
				return sdk.NewSessionResponse{}, invalidParams(fmt.Sprintf("_meta.%s.owner %q: want ENTITY/ID, e.g. Task/t-42", MetaKey, m.Owner))
			}
			req.OwnerEntity, req.OwnerID = e, id
		}
	}
	if req.Agent == "" {
		return sdk.NewSessionResponse{}, invalidParams(fmt.Sprintf("no agent to launch: start \"agentjournal acp\" with --agent NAME [-- CMD…], or give _meta.%s.agent", MetaKey))
	}
	// The events of the new execution start after the log's end now, so
	// none of its records is missed between the launch and the stream.
	h, err := s.client.Health(ctx)
	if err != nil {
		return sdk.NewSessionResponse{}, daemonErr(err)
	}
	res, err := s.client.Launch(ctx, req)
	if err != nil {
		return sdk.NewSessionResponse{}, daemonErr(err)
	}
	id := res.Reference.AgentExecutionID
	ss, err := s.open(id)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	ss.live = true
	s.wg.Add(1)
	go ss.follow(h.LastOffset)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(id)}, nil
}

// LoadSession replays an execution's journal as updates, then follows it
// while it runs.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	id := string(p.SessionId)
	if _, err := s.client.Journal(ctx, id); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return sdk.LoadSessionResponse{}, unknownSession(id)
		}
		return sdk.LoadSessionResponse{}, daemonErr(err)
	}
	ss, err := s.open(id)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	last, ended, err := ss.replay(ctx, 1)
	if err != nil {
		s.close(id)
		return sdk.LoadSessionResponse{}, daemonErr(err)
	}
	ex, err := s.client.Execution(ctx, id)
	if err != nil {
		s.close(id)
		return sdk.LoadSessionResponse{}, daemonErr(err)
	}
	if ended || ex.Lifecycle.Final() {
		// Records written between the replay and the read above.
		if _, _, err := ss.replay(ctx, ss.lastSeq+1); err != nil {
			return sdk.LoadSessionResponse{}, daemonErr(err)
		}
		return sdk.LoadSessionResponse{}, nil
	}
	ss.mu.Lock()
	ss.live = true
	ss.mu.Unlock()
	if open := ex.CurrentInputRequestID; open != "" && ex.LastInputRequest.RequestID == open {
		ir := ex.LastInputRequest
		ss.ask(&eventstore.NeedsInputSignal{RequestID: ir.RequestID, Question: ir.Question, Choices: ir.Choices, Kind: ir.Kind, Tool: ir.Tool})
	}
	s.wg.Add(1)
	go ss.follow(last)
	return sdk.LoadSessionResponse{}, nil
}

// ListSessions lists the daemon's executions (of the configured owner
// with ListOwned), newest first, with their working directory.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	f := client.ExecutionFilter{}
	if s.cfg.ListOwned {
		f.OwnerEntity, f.OwnerID = s.cfg.OwnerEntity, s.cfg.OwnerID
	}
	all, err := s.client.List(ctx, f)
	if err != nil {
		return sdk.ListSessionsResponse{}, daemonErr(err)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].UpdatedAt.After(all[j].UpdatedAt) })
	start := 0
	if p.Cursor != nil {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 || n > len(all) {
			return sdk.ListSessionsResponse{}, invalidParams(fmt.Sprintf("cursor %q: want the nextCursor of the previous page", *p.Cursor))
		}
		start = n
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	i := start
	for ; i < len(all) && len(out.Sessions) < listPage; i++ {
		sum := all[i]
		ex, err := s.client.Execution(ctx, sum.ID)
		if err != nil {
			return sdk.ListSessionsResponse{}, daemonErr(err)
		}
		if p.Cwd != nil && *p.Cwd != ex.WorkingDirectory {
			continue
		}
		title := fmt.Sprintf("%s %s (%s)", sum.AgentID, sum.Lifecycle, sum.ID)
		out.Sessions = append(out.Sessions, sdk.SessionInfo{SessionId: sdk.SessionId(sum.ID), Cwd: ex.WorkingDirectory,
			Title: &title, UpdatedAt: sdk.Ptr(sum.UpdatedAt.UTC().Format(time.RFC3339)),
			Meta: map[string]any{MetaKey: map[string]any{"agent": sum.AgentID, "lifecycle": sum.Lifecycle,
				"attention": sum.Attention, "owner": string(sum.OwnerEntity) + "/" + sum.OwnerID}}})
	}
	if i < len(all) {
		out.NextCursor = sdk.Ptr(strconv.Itoa(i))
	}
	return out, nil
}

// Prompt sends the prompt as a message (or, while a question without
// choices is open, as its answer) and answers when the journal records
// the turn's end.
func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	ss, err := s.session(string(p.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	ex, err := s.client.Execution(ctx, ss.id)
	if err != nil {
		return sdk.PromptResponse{}, daemonErr(err)
	}
	if ex.Lifecycle.Final() {
		return sdk.PromptResponse{}, invalidParams(fmt.Sprintf("execution %s has ended (%s): a prompt needs a running execution; session/new starts one", ss.id, ex.Lifecycle))
	}
	if !ex.Live.Running {
		return sdk.PromptResponse{}, invalidParams(fmt.Sprintf("execution %s does not run in this daemon (lifecycle %s): a prompt needs a running execution; session/new starts one", ss.id, ex.Lifecycle))
	}
	if strings.HasPrefix(strings.TrimSpace(text), "/") {
		// A Mission-native slash command is the daemon's, not the agent's.
		if done, err := s.runCommand(ctx, ss, strings.TrimSpace(text)); done || err != nil {
			if err != nil {
				return sdk.PromptResponse{}, err
			}
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		}
	}
	t := &turn{messageID: newMessageID(), end: make(chan sdk.StopReason, 1)}
	question, err := ss.startTurn(t)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	if ir := ex.LastInputRequest; question == "" && ex.CurrentInputRequestID != "" && ir.RequestID == ex.CurrentInputRequestID &&
		!askable(&eventstore.NeedsInputSignal{Choices: ir.Choices, Kind: ir.Kind}) {
		question = ir.RequestID
	}
	msg := client.Message{MessageID: t.messageID, Type: msgPrompt, Source: eventstore.SourceOperator}
	payload := eventstore.MessagePayload{Text: text}
	if question != "" {
		msg.Type, payload.RequestID = msgAnswer, question
	}
	msg.Payload, _ = json.Marshal(payload)
	ack, err := s.client.SendMessage(ss.ctx, ss.id, msg)
	if err == nil && ack.Delivery == eventstore.DeliveryFailed {
		err = fmt.Errorf("the agent did not get the prompt: %s", ack.Reason)
	}
	if err != nil {
		ss.endTurn(t, "")
		return sdk.PromptResponse{}, daemonErr(err)
	}
	var reason sdk.StopReason
	select {
	case reason = <-t.end:
	case <-ctx.Done():
		// session/cancel (or the editor going away): the interrupt is
		// sent; the journal says when the turn ended.
		select {
		case reason = <-t.end:
		case <-time.After(cancelWait):
			ss.endTurn(t, sdk.StopReasonCancelled)
			reason = <-t.end
		case <-s.ctx.Done():
			return sdk.PromptResponse{}, s.ctx.Err()
		}
	case <-s.ctx.Done():
		return sdk.PromptResponse{}, s.ctx.Err()
	}
	if t.err != nil {
		return sdk.PromptResponse{}, t.err
	}
	resp := sdk.PromptResponse{StopReason: reason, UserMessageId: sdk.Ptr(t.messageID)}
	if t.usage.seen {
		resp.Usage = &sdk.Usage{InputTokens: int(t.usage.in), OutputTokens: int(t.usage.out), TotalTokens: int(t.usage.total)}
	}
	return resp, nil
}

// Cancel interrupts the running turn: an interrupt message when the
// agent declares one, else a stop of the execution.
func (s *Server) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	ss, err := s.session(string(p.SessionId))
	if err != nil {
		return err
	}
	if !ss.cancelTurn() {
		return nil
	}
	// The notification's context ends with its handling; the interrupt
	// must be written whatever the editor does next.
	cctx, cancel := context.WithTimeout(s.ctx, cancelWait)
	defer cancel()
	ex, err := s.client.Execution(cctx, ss.id)
	if err != nil {
		s.log.Error("cancel: read the execution", "execution", ss.id, "err", err)
		return nil
	}
	if declares(ex.ProtocolDescriptor, msgInterrupt) {
		payload, _ := json.Marshal(eventstore.MessagePayload{Text: "session/cancel"})
		if _, err := s.client.SendMessage(cctx, ss.id, client.Message{Type: msgInterrupt, Source: eventstore.SourceOperator, Payload: payload}); err != nil {
			s.log.Error("cancel: send the interrupt", "execution", ss.id, "err", err)
		}
		return nil
	}
	if _, err := s.client.Stop(cctx, ss.id); err != nil {
		s.log.Error("cancel: stop the execution", "execution", ss.id, "err", err)
	}
	return nil
}

func declares(d eventstore.ProtocolDescriptor, msgType string) bool {
	for _, m := range d.Messages {
		if m.Type == msgType {
			return true
		}
	}
	return false
}

// CloseSession is not offered (sessionCapabilities.close is absent).
func (s *Server) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
}

// ResumeSession is not offered: session/load opens an execution.
func (s *Server) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}

// SetSessionConfigOption is not offered: the agent is chosen at
// session/new.
func (s *Server) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

// SetSessionMode is not offered: executions have no modes.
func (s *Server) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// open registers a session for execution id.
func (s *Server) open(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[id]; ok {
		return nil, invalidParams(fmt.Sprintf("session %s is open already on this connection", id))
	}
	ctx, cancel := context.WithCancel(s.ctx)
	ss := &session{id: id, srv: s, ctx: ctx, cancel: cancel, inputs: map[string]*eventstore.NeedsInputSignal{},
		asking: map[string]context.CancelFunc{}}
	s.sessions[id] = ss
	return ss, nil
}

func (s *Server) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[id]; ok {
		ss.cancel()
		delete(s.sessions, id)
	}
}

func (s *Server) session(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[id]; ok {
		return ss, nil
	}
	return nil, unknownSession(id)
}

// promptText is the prompt as the journal's text: text blocks as they
// are, resource links as their URI, one per line.
func promptText(blocks []sdk.ContentBlock) (string, error) {
	var parts []string
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, b.ResourceLink.Uri)
		default:
			return "", invalidParams(fmt.Sprintf("prompt[%d]: this agent takes text and resource_link content only (promptCapabilities offers no image, audio or embedded context)", i))
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", invalidParams("prompt: no text (want at least one text block)")
	}
	return text, nil
}

func newMessageID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "acp-" + hex.EncodeToString(b[:])
}

// invalidParams is a -32602 error whose message says what is accepted.
func invalidParams(msg string) *sdk.RequestError {
	return &sdk.RequestError{Code: -32602, Message: msg}
}

func unknownSession(id string) *sdk.RequestError {
	return invalidParams(fmt.Sprintf("unknown session %q: open it with session/new or session/load (session/list lists the executions)", id))
}

// daemonErr maps an answer of the daemon to a JSON-RPC error: what the
// daemon refused is the request's fault (-32602), anything else the
// server's (-32603); both carry the daemon's words.
func daemonErr(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		data := map[string]any{"code": apiErr.Code}
		if apiErr.Field != "" {
			data["field"] = apiErr.Field
		}
		if len(apiErr.Accepted) > 0 {
			data["accepted"] = apiErr.Accepted
		}
		code := -32603
		switch apiErr.Code {
		case client.CodeInvalidField, client.CodeNotFound, client.CodeConflict, client.CodeTooLarge:
			code = -32602
		}
		return &sdk.RequestError{Code: code, Message: "the daemon refused: " + apiErr.Error(), Data: data}
	}
	return &sdk.RequestError{Code: -32603, Message: err.Error()}
}
