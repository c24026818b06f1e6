package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// Client calls one daemon's HTTP API with a token. It is safe for
// concurrent use.
type Client struct {
	url       string
	token     string
	transport *http.Transport
	http      *http.Client
}

// New returns a client of the daemon at baseURL (e.g.
// http://127.0.0.1:7600) that sends token as its bearer token: the API
// token, or a token scoped to one execution for its observations.
func New(baseURL, token string) *Client {
	// A transport of its own, so that Close releases only its connections.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &Client{url: strings.TrimRight(baseURL, "/"), token: token, transport: transport,
		http: &http.Client{Transport: transport}}
}

// URL returns the daemon's base URL.
func (c *Client) URL() string { return c.url }

// Close releases the client's idle connections. Open event streams are
// closed by their own Close. It is safe to call twice.
func (c *Client) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

// Request sends one request to path (with the query, when not empty): in,
// when not nil, as the JSON body, or as it is when it is an io.Reader (the
// header then gives its Content-Type). It returns the response, which the
// caller closes, when its status is 2xx, and an *Error otherwise. It is the
// way to a route this package has no method for.
func (c *Client) Request(ctx context.Context, method, path string, query url.Values, in any, header http.Header) (*http.Response, error) {
	var body io.Reader
	raw := false
	switch v := in.(type) {
	case nil:
	case io.Reader:
		body, raw = v, true
	default:
		data, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	u := c.url + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil && !raw {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("reach the daemon at %s: %w", c.url, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var shape struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(data, &shape) == nil && shape.Error != nil && shape.Error.Code != "" {
		shape.Error.Status = resp.StatusCode
		return nil, shape.Error
	}
	// Not the API's shape: a proxy in between, or not a daemon at all.
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
}

// do sends a request and decodes the JSON answer into out, when not nil.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.Request(ctx, method, path, query, in, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the answer to %s %s: %w", method, path, err)
	}
	return nil
}

func executionPath(id string, rest ...string) string {
	return "/v1/executions/" + url.PathEscape(id) + strings.Join(rest, "")
}

// Health is the answer of GET /healthz.
type Health struct {
	// Status is ok, damaged (Damaged names the journals) or disk_full.
	Status     string   `json:"status"`
	Checkpoint uint64   `json:"checkpoint"`
	LastOffset uint64   `json:"lastOffset"`
	Lag        uint64   `json:"lag"`
	Damaged    []string `json:"damaged,omitempty"`
	Storage    *Storage `json:"storage,omitempty"`
	// Policy is the daemon's share of the policy's partitions, when the
	// daemons of its log share them (serve --policy-partitions).
	Policy *PolicyShare `json:"policy,omitempty"`
}

// PolicyShare is a daemon's share of the policy's partitions: its name
// among the daemons of the log, the partitions it decides on now and their
// number.
type PolicyShare struct {
	Member     string `json:"member"`
	Partitions []int  `json:"partitions"`
	Of         int    `json:"of"`
}

// Storage is the daemon's last measurement of the disk holding its log.
type Storage struct {
	DataDir      string `json:"dataDir"`
	FreeBytes    uint64 `json:"freeBytes"`
	ReserveBytes uint64 `json:"reserveBytes"`
	Full         bool   `json:"full"`
}

// Health asks GET /healthz, the one route that needs no token.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, &h)
	return h, err
}

// List lists executions from the daemon's read model (GET /v1/executions).
// The daemon refuses a filter it does not accept with ErrInvalidField.
func (c *Client) List(ctx context.Context, f projections.Filter) ([]projections.Summary, error) {
	q := url.Values{}
	if f.OwnerEntity != "" {
		owner := string(f.OwnerEntity)
		if f.OwnerID != "" {
			owner += "/" + f.OwnerID
		}
		q.Set("owner", owner)
	}
	if f.Lifecycle != "" {
		q.Set("lifecycle", string(f.Lifecycle))
	}
	if f.Attention != "" {
		q.Set("attention", string(f.Attention))
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Executions []projections.Summary `json:"executions"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/executions", q, nil, &out)
	return out.Executions, err
}

// Execution is an execution as the API shows it: its projected state
// (without the timeline, which Timeline pages) and what the daemon knows
// live.
type Execution struct {
	execution.State
	Live Live `json:"live"`
}

// Live is what the daemon's runtime knows of an execution that the journal
// does not hold.
type Live struct {
	// Running reports a live process in this daemon.
	Running bool `json:"running"`
	// TerminalID is the terminal lane of a running interactive execution.
	TerminalID string `json:"terminalId,omitempty"`
}

// Execution reads one execution (GET /v1/executions/{id}); ErrNotFound
// when there is none.
func (c *Client) Execution(ctx context.Context, id string) (Execution, error) {
	var out Execution
	err := c.do(ctx, http.MethodGet, executionPath(id), nil, nil, &out)
	return out, err
}

// LaunchRequest is the body of POST /v1/executions.
type LaunchRequest struct {
	OwnerEntity eventstore.OwnerEntity `json:"ownerEntity"`
	OwnerID     string                 `json:"ownerId"`
	// Seed derives the execution id: one seed names one execution of an
	// owner, and launching it again is ErrConflict. Random when empty.
	Seed string `json:"seed,omitempty"`
	// Agent is the adapter: generic, claude-code, codex, copilot, ….
	Agent string `json:"agent"`
	// Command is the program and its arguments; required for generic.
	Command []string `json:"command,omitempty"`
	// Prompt is recorded as the first message and delivered the agent's
	// way.
	Prompt  string             `json:"prompt,omitempty"`
	Posture eventstore.Posture `json:"posture,omitempty"`
	// Shape is the session shape of claude-code, codex and copilot;
	// conversation when empty.
	Shape eventstore.SessionShape `json:"shape,omitempty"`
	// Dir is the agent's working directory, an absolute path on the
	// daemon's host; the daemon's own when empty.
	Dir string            `json:"dir,omitempty"`
	Env map[string]string `json:"env,omitempty"`
	// Timeout is the run's time limit, a duration such as "90s", "30m"
	// or "2h" (at most 168h): when it passes the daemon stops the run and
	// journals an interruption with reason timeout. None when empty.
	Timeout string `json:"timeout,omitempty"`
	// DispatchContext says where the launch was asked for and how it
	// runs: dispatchMode queued or scheduled waits in the daemon's queue
	// (Queue), lifecycle starting, until a slot is free and its time has
	// come. Nil runs it at once, as interactive.
	DispatchContext *eventstore.DispatchContext `json:"dispatchContext,omitempty"`
}

// Launched answers a launch.
type Launched struct {
	Reference eventstore.Reference `json:"reference"`
	State     Execution            `json:"state"`
}

// The protocols an agent's CLI is spoken to in (Agent.Protocol).
const (
	// ProtocolStdin: any program; messages are text lines on its stdin,
	// signals stdout markers (generic).
	ProtocolStdin = "stdin"
	// ProtocolStreamJSON: one process for the session, its turns and
	// answers as JSON lines on stdin, its output a JSON stream (Claude
	// Code).
	ProtocolStreamJSON = "stream-json"
	// ProtocolExec: one process per turn, the prompt on its command line
	// and its stdin closed (Codex, Copilot).
	ProtocolExec = "exec"
	// ProtocolACP: the Agent Client Protocol, JSON-RPC on the process's
	// stdin and stdout (the ACP presets).
	ProtocolACP = "acp"
)

// Agent is one agent the daemon launches, as GET /v1/agents lists it: the
// server builds its catalog of this type, so both ends read one shape.
type Agent struct {
	// ID is what a launch names in LaunchRequest.Agent.
	ID string `json:"id"`
	// Provider names the parser of the agent's output; empty for an agent
	// that signals by stdout markers only.
	Provider string `json:"provider"`
	// Protocol is one of ProtocolStdin, ProtocolStreamJSON, ProtocolExec
	// and ProtocolACP.
	Protocol string `json:"protocol"`
	// NativeResume and NativeFork report what the agent's CLI does
	// itself: resume its session, fork it at a message. Otherwise a
	// resume or a fork retells the journal to the new run, and a prompt
	// must follow.
	NativeResume bool `json:"nativeResume"`
	NativeFork   bool `json:"nativeFork"`
	// TurnsOnStdin is true when one process takes every turn on a stdin
	// kept open; false when each turn is a process of its own.
	TurnsOnStdin bool `json:"turnsOnStdin"`
	// Approvals is true when the agent runs under an approval policy the
	// daemon sets: its permission requests journaled for an answer, or
	// decided by the flags it is launched with (an execution's protocol
	// descriptor says which). False for an agent with none (generic).
	Approvals bool `json:"approvals"`
	// Shapes are the session shapes LaunchRequest.Shape accepts for the
	// agent, its default first; empty for an agent whose process is the
	// execution.
	Shapes []eventstore.SessionShape `json:"shapes"`
}

// AgentCatalog is the answer of GET /v1/agents.
type AgentCatalog struct {
	Agents []Agent `json:"agents"`
}

// Agents lists the agents the daemon launches (GET /v1/agents), in the
// order it offers them.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out AgentCatalog
	err := c.do(ctx, http.MethodGet, "/v1/agents", nil, nil, &out)
	return out.Agents, err
}

// Launch starts an agent in the daemon (POST /v1/executions).
func (c *Client) Launch(ctx context.Context, in LaunchRequest) (Launched, error) {
	var out Launched
	err := c.do(ctx, http.MethodPost, "/v1/executions", nil, in, &out)
	return out, err
}

// Stop stops an execution running in this daemon: SIGTERM, then SIGKILL
// after the grace (POST /v1/executions/{id}/stop); one still in the queue
// ends cancelled at once and never starts. It answers once the journal
// holds the final lifecycle; ErrConflict when it does not run here.
func (c *Client) Stop(ctx context.Context, id string) (Execution, error) {
	var out Execution
	err := c.do(ctx, http.MethodPost, executionPath(id, "/stop"), nil, nil, &out)
	return out, err
}

// ScopedToken is a token for one execution: what its agent gets at launch.
type ScopedToken struct {
	AgentExecutionID string `json:"agentExecutionId"`
	// Token is accepted as the bearer token for this execution's
	// observations and for MCP as its agent, and refused everywhere else.
	Token string `json:"token"`
	// Allows says, in words, what the token may do.
	Allows []string `json:"allows"`
}

// ScopedToken returns the token scoped to execution id, for a process
// that should report as that execution's agent and do nothing else. It
// is the same token each time: it holds no state and lasts as long as the
// daemon's secret.
func (c *Client) ScopedToken(ctx context.Context, id string) (ScopedToken, error) {
	var out ScopedToken
	err := c.do(ctx, http.MethodPost, executionPath(id, "/token"), nil, nil, &out)
	return out, err
}

// Message is the body of POST /v1/executions/{id}/messages.
type Message struct {
	// MessageID makes a retry safe: the same id gets the first
	// acknowledgement back and appends nothing. The daemon assigns one
	// when empty.
	MessageID string `json:"messageId,omitempty"`
	// Type is a message type the agent declares: prompt, answer, ….
	Type    string                   `json:"type"`
	Source  eventstore.MessageSource `json:"source,omitempty"`
	Payload json.RawMessage          `json:"payload,omitempty"`
}

// SendMessage records a message and delivers it to the agent. A message
// the agent did not get is recorded too, and answered with the delivery
// failed, not with an error.
func (c *Client) SendMessage(ctx context.Context, id string, m Message) (runtime.MessageAck, error) {
	var out runtime.MessageAck
	err := c.do(ctx, http.MethodPost, executionPath(id, "/messages"), nil, m, &out)
	return out, err
}

// Observation is the body of POST /v1/executions/{id}/observations.
type Observation struct {
	// ObservationID makes a retry safe: the same id answers with the
	// original decision.
	ObservationID string                       `json:"observationId"`
	Source        eventstore.ObservationSource `json:"source"`
	Confidence    eventstore.Confidence        `json:"confidence"`
	Signal        *Signal                      `json:"signal,omitempty"`
	RawText       string                       `json:"rawText,omitempty"`
	Payload       json.RawMessage              `json:"payload,omitempty"`
}

// Signal is a surfaced signal: its type and its payload, a JSON object
// whose schema the type names (docs/records.md).
type Signal struct {
	Type    eventstore.SignalType `json:"type"`
	Payload json.RawMessage       `json:"payload"`
}

// ObservationAck answers an observation with the policy's decision.
type ObservationAck struct {
	ObservationID string `json:"observationId"`
	// Sequence is the observation's journal sequence (the first one's,
	// for a duplicate).
	Sequence uint64 `json:"sequence"`
	// Duplicate reports an id recorded before: nothing was appended and
	// Decision is the original one.
	Duplicate bool     `json:"duplicate"`
	Decision  Decision `json:"decision"`
}

// Decision is the policy's decision on an observation.
type Decision struct {
	DecisionID string                    `json:"decisionId"`
	Action     eventstore.DecisionAction `json:"action"`
	Reason     string                    `json:"reason,omitempty"`
	Sequence   uint64                    `json:"sequence"`
}

// RecordObservation records an observation and waits for the policy's
// decision on it; ErrTimeout when none came in the daemon's wait (sending
// it again with the same id then answers with the decision).
func (c *Client) RecordObservation(ctx context.Context, id string, o Observation) (ObservationAck, error) {
	var out ObservationAck
	err := c.do(ctx, http.MethodPost, executionPath(id, "/observations"), nil, o, &out)
	return out, err
}

// Timeline reads a page of an execution's timeline, newest first: up to
// limit items (the daemon's default when 0) before the cursor before (0:
// from the newest). next is the cursor of the following page, 0 at the end.
func (c *Client) Timeline(ctx context.Context, id string, before uint64, limit int) (items []execution.TimelineItem, next uint64, err error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before != 0 {
		q.Set("before", strconv.FormatUint(before, 10))
	}
	var out struct {
		Items []execution.TimelineItem `json:"items"`
		Next  *uint64                  `json:"next"`
	}
	if err := c.do(ctx, http.MethodGet, executionPath(id, "/timeline"), q, nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Items, deref(out.Next), nil
}

// Records reads an execution's journal from sequence fromSeq (1 when 0),
// up to limit records (the daemon's default when 0). next is the sequence
// the following page starts at, 0 at the end.
func (c *Client) Records(ctx context.Context, id string, fromSeq uint64, limit int) (records []eventstore.Record, next uint64, err error) {
	q := pageQuery("fromSeq", fromSeq, limit)
	var out struct {
		Records []json.RawMessage `json:"records"`
		Next    *uint64           `json:"next"`
	}
	if err := c.do(ctx, http.MethodGet, executionPath(id, "/records"), q, nil, &out); err != nil {
		return nil, 0, err
	}
	records = make([]eventstore.Record, 0, len(out.Records))
	for _, data := range out.Records {
		r, err := eventstore.Decode(data)
		if err != nil {
			return nil, 0, fmt.Errorf("decode a record of %s: %w", id, err)
		}
		records = append(records, r)
	}
	return records, deref(out.Next), nil
}

// LogEntry is a record with its log offset.
type LogEntry struct {
	Offset uint64
	Record eventstore.Record
}

// UnmarshalJSON decodes {offset, record} with the record registry.
func (e *LogEntry) UnmarshalJSON(data []byte) error {
	var raw struct {
		Offset uint64          `json:"offset"`
		Record json.RawMessage `json:"record"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw.Record == nil && raw.Error != "" {
		// An entry of a page of the log or a journal (LogEntries,
		// Entries yield it as an *eventstore.OffsetError).
		return &eventstore.OffsetError{Offset: raw.Offset, Err: errors.New(raw.Error)}
	}
	r, err := eventstore.Decode(raw.Record)
	if err != nil {
		return fmt.Errorf("decode the record at offset %d: %w", raw.Offset, err)
	}
	e.Offset, e.Record = raw.Offset, r
	return nil
}

// MarshalJSON writes {offset, record}, as the daemon does.
func (e LogEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Offset uint64            `json:"offset"`
		Record eventstore.Record `json:"record"`
	}{e.Offset, e.Record})
}

// Log reads every journal's records in log order from fromOffset (1 when
// 0), up to limit (the daemon's default when 0). next is the offset the
// following page starts at, 0 at the end of the log.
func (c *Client) Log(ctx context.Context, fromOffset uint64, limit int) (entries []LogEntry, next uint64, err error) {
	var out struct {
		Entries []LogEntry `json:"entries"`
		Next    *uint64    `json:"next"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/log", pageQuery("fromOffset", fromOffset, limit), nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Entries, deref(out.Next), nil
}

// Replay is an execution's state as of a journal sequence.
type Replay struct {
	// ToSeq is the last sequence folded into State.
	ToSeq uint64           `json:"toSeq"`
	State *execution.State `json:"state"`
	// Records are the last records folded, oldest first.
	Records []LogEntry `json:"records"`
}

// Replay folds an execution's journal up to sequence toSeq (all of it
// when 0).
func (c *Client) Replay(ctx context.Context, id string, toSeq uint64) (Replay, error) {
	q := url.Values{}
	if toSeq != 0 {
		q.Set("toSeq", strconv.FormatUint(toSeq, 10))
	}
	var out Replay
	err := c.do(ctx, http.MethodGet, executionPath(id, "/replay"), q, nil, &out)
	return out, err
}

// RebuildProgress is one line of the answer to POST
// /v1/projections/rebuild: records done of total, and on the last line the
// number of executions rebuilt, or the error that stopped the rebuild.
type RebuildProgress struct {
	Done       uint64 `json:"done"`
	Total      uint64 `json:"total"`
	Executions *int   `json:"executions"`
	Error      *Error `json:"error"`
}

// Rebuild asks the daemon to rebuild its read model from the log, and
// calls progress, when not nil, with each line of progress. It returns the
// last line, which holds the number of executions, or the error that
// stopped the rebuild (ErrConflict while another one runs). Cancelling ctx
// cancels the rebuild and leaves the live read model as it was.
func (c *Client) Rebuild(ctx context.Context, progress func(RebuildProgress)) (RebuildProgress, error) {
	resp, err := c.Request(ctx, http.MethodPost, "/v1/projections/rebuild", nil, nil, nil)
	if err != nil {
		return RebuildProgress{}, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var l RebuildProgress
		if err := dec.Decode(&l); err != nil {
			if ctx.Err() != nil {
				return RebuildProgress{}, ctx.Err()
			}
			return RebuildProgress{}, fmt.Errorf("the daemon's answer ended before the rebuild did: %w", err)
		}
		switch {
		case l.Error != nil:
			return l, l.Error
		case l.Executions != nil:
			return l, nil
		}
		if progress != nil {
			progress(l)
		}
	}
}

func pageQuery(fromName string, from uint64, limit int) url.Values {
	q := url.Values{}
	if from != 0 {
		q.Set(fromName, strconv.FormatUint(from, 10))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}
