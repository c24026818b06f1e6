package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

// healthTimeout bounds the health check that tells whether a daemon runs.
const healthTimeout = 2 * time.Second

// errNoDaemon reports that no daemon runs for the data directory.
var errNoDaemon = errors.New("no agentjournal daemon is running")

// noDaemonError is errNoDaemon for one data directory, with the command
// that starts a daemon there.
type noDaemonError struct {
	dataDir string
	start   string
}

func (e *noDaemonError) Error() string {
	return fmt.Sprintf("%v for %s (start one with: %s)", errNoDaemon, e.dataDir, e.start)
}

func (e *noDaemonError) Is(target error) bool { return target == errNoDaemon }

// daemon returns a client of the daemon that runs for the data directory:
// the one daemon.json names, whose process is alive and whose /healthz
// answers. Without one it returns a *noDaemonError, which is errNoDaemon.
func (e *Env) daemon(ctx context.Context) (*client, error) {
	none := &noDaemonError{dataDir: e.DataDir, start: e.hintPrefix() + " serve"}
	path := filepath.Join(e.DataDir, daemonFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, none
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var info daemonInfo
	if err := json.Unmarshal(data, &info); err != nil || info.URL == "" {
		// A daemon writing the file right now, or one that died while
		// writing it.
		return nil, none
	}
	if !processAlive(info.PID) {
		return nil, none
	}
	token, err := os.ReadFile(info.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("read the API token of the daemon at %s: %w", info.URL, err)
	}
	c := newClient(info.URL, strings.TrimSpace(string(token)))
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if _, err := c.health(hctx); err != nil {
		c.close()
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, fmt.Errorf("the daemon at %s is not healthy: %w", info.URL, err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the daemon at %s (process %d) did not answer its health check within %s", info.URL, info.PID, healthTimeout)
		}
		// Its process is alive but nothing listens: it is stopping, or
		// the pid now belongs to another process.
		return nil, none
	}
	return c, nil
}

// processAlive reports whether a process with the pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// client calls the daemon's HTTP API with the API token.
type client struct {
	url       string
	token     string
	transport *http.Transport
	http      *http.Client
}

func newClient(baseURL, token string) *client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &client{url: strings.TrimRight(baseURL, "/"), token: token, transport: transport,
		http: &http.Client{Transport: transport}}
}

// close releases the client's idle connections.
func (c *client) close() { c.transport.CloseIdleConnections() }

// apiError is an error answer of the daemon, in the API's error shape
// {"error":{code,message,field,accepted}}.
type apiError struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Field    string   `json:"field,omitempty"`
	Accepted []string `json:"accepted,omitempty"`
}

// Error prints "code: message", with the field and the accepted values
// unless the message names them already.
func (e *apiError) Error() string {
	msg := e.Code + ": " + e.Message
	if e.Field != "" && !strings.Contains(e.Message, strconv.Quote(e.Field)) {
		msg = fmt.Sprintf("%s: field %q: %s", e.Code, e.Field, e.Message)
	}
	if len(e.Accepted) > 0 {
		list := strings.Join(e.Accepted, ", ")
		if !strings.Contains(e.Message, list) {
			msg += " (want one of: " + list + ")"
		}
	}
	return msg
}

// API error codes the commands act on.
const (
	codeNotFound     = "not_found"
	codeInvalidField = "invalid_field"
)

// hasCode reports whether err is an API error with the code.
func hasCode(err error, code string) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == code
}

// request sends one request: in, when not nil, as the JSON body. It
// returns the response, which the caller closes, when its status is 2xx
// and an *apiError otherwise.
func (c *client) request(ctx context.Context, method, path string, query url.Values, in any, header http.Header) (*http.Response, error) {
	var body io.Reader
	if in != nil {
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
	if in != nil {
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
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var shape struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(data, &shape) == nil && shape.Error != nil && shape.Error.Code != "" {
		return nil, shape.Error
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
}

// do sends a request and decodes the JSON answer into out, when not nil.
func (c *client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.request(ctx, method, path, query, in, nil)
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

// health is the answer of /healthz.
type health struct {
	Status     string `json:"status"`
	Checkpoint uint64 `json:"checkpoint"`
	LastOffset uint64 `json:"lastOffset"`
	Lag        uint64 `json:"lag"`
}

func (c *client) health(ctx context.Context) (health, error) {
	var h health
	err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, &h)
	return h, err
}

// launchRequest is the body of POST /v1/executions.
type launchRequest struct {
	OwnerEntity eventstore.OwnerEntity  `json:"ownerEntity"`
	OwnerID     string                  `json:"ownerId"`
	Seed        string                  `json:"seed,omitempty"`
	Agent       string                  `json:"agent"`
	Command     []string                `json:"command,omitempty"`
	Prompt      string                  `json:"prompt,omitempty"`
	Posture     eventstore.Posture      `json:"posture,omitempty"`
	Shape       eventstore.SessionShape `json:"shape,omitempty"`
	Dir         string                  `json:"dir,omitempty"`
	Env         map[string]string       `json:"env,omitempty"`
}

// launchResult answers a launch.
type launchResult struct {
	Reference eventstore.Reference `json:"reference"`
	State     executionView        `json:"state"`
}

// executionView is an execution as the API shows it: its state and what
// the daemon knows live.
type executionView struct {
	execution.State
	Live struct {
		Running    bool   `json:"running"`
		TerminalID string `json:"terminalId,omitempty"`
	} `json:"live"`
}

func (c *client) launch(ctx context.Context, in launchRequest) (launchResult, error) {
	var out launchResult
	err := c.do(ctx, http.MethodPost, "/v1/executions", nil, in, &out)
	return out, err
}

// messageRequest is the body of POST /v1/executions/{id}/messages.
type messageRequest struct {
	MessageID string          `json:"messageId,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
}

func (c *client) send(ctx context.Context, id string, in messageRequest) (execution.MessageAck, error) {
	var out execution.MessageAck
	err := c.do(ctx, http.MethodPost, executionPath(id, "/messages"), nil, in, &out)
	return out, err
}

// observationRequest is the body of POST /v1/executions/{id}/observations.
type observationRequest struct {
	ObservationID string                       `json:"observationId"`
	Source        eventstore.ObservationSource `json:"source"`
	Confidence    eventstore.Confidence        `json:"confidence"`
	Signal        signalRequest                `json:"signal"`
}

type signalRequest struct {
	Type    eventstore.SignalType `json:"type"`
	Payload json.RawMessage       `json:"payload"`
}

// observationAck answers an observation with the policy's decision.
type observationAck struct {
	ObservationID string `json:"observationId"`
	Sequence      uint64 `json:"sequence"`
	Duplicate     bool   `json:"duplicate"`
	Decision      struct {
		DecisionID string                    `json:"decisionId"`
		Action     eventstore.DecisionAction `json:"action"`
		Reason     string                    `json:"reason,omitempty"`
		Sequence   uint64                    `json:"sequence"`
	} `json:"decision"`
}

func (c *client) observe(ctx context.Context, id string, in observationRequest) (observationAck, error) {
	var out observationAck
	err := c.do(ctx, http.MethodPost, executionPath(id, "/observations"), nil, in, &out)
	return out, err
}

func (c *client) stop(ctx context.Context, id string) (executionView, error) {
	var out executionView
	err := c.do(ctx, http.MethodPost, executionPath(id, "/stop"), nil, nil, &out)
	return out, err
}

func (c *client) list(ctx context.Context, f projections.Filter) ([]projections.Summary, error) {
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

func (c *client) execution(ctx context.Context, id string) (*execution.State, error) {
	var out executionView
	if err := c.do(ctx, http.MethodGet, executionPath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out.State, nil
}

func (c *client) timeline(ctx context.Context, id string, before uint64, limit int) ([]execution.TimelineItem, uint64, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
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
	var next uint64
	if out.Next != nil {
		next = *out.Next
	}
	return out.Items, next, nil
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	ID   string
	Name string
	Data []byte
}

// rebuildLine is one line of the answer to POST /v1/projections/rebuild.
type rebuildLine struct {
	Done       uint64    `json:"done"`
	Total      uint64    `json:"total"`
	Executions *int      `json:"executions"`
	Error      *apiError `json:"error"`
}

// rebuild asks the daemon to rebuild its projection and calls progress
// with each line of progress. It returns the last line, which holds the
// number of executions, or the error that stopped the rebuild.
func (c *client) rebuild(ctx context.Context, progress func(rebuildLine)) (rebuildLine, error) {
	resp, err := c.request(ctx, http.MethodPost, "/v1/projections/rebuild", nil, nil, nil)
	if err != nil {
		return rebuildLine{}, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var l rebuildLine
		if err := dec.Decode(&l); err != nil {
			if ctx.Err() != nil {
				return rebuildLine{}, ctx.Err()
			}
			return rebuildLine{}, fmt.Errorf("the daemon's answer ended before the rebuild did: %w", err)
		}
		switch {
		case l.Error != nil:
			return l, l.Error
		case l.Executions != nil:
			return l, nil
		}
		progress(l)
	}
}

// maxEventLine bounds one line of the event stream.
const maxEventLine = 16 << 20

// events opens GET /v1/events, of one execution when executionID is not
// empty, with the events of the records after log offset after
// (Last-Event-ID). It returns the stream, which the caller closes.
func (c *client) events(ctx context.Context, executionID string, after uint64) (io.ReadCloser, error) {
	q := url.Values{}
	if executionID != "" {
		q.Set("execution", executionID)
	}
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	h.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	resp, err := c.request(ctx, http.MethodGet, "/v1/events", q, nil, h)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// readEvents reads Server-Sent Events from r and calls fn with each, and
// comment with each comment line, until r ends or a callback returns an
// error (errStopEvents ends reading without an error).
func readEvents(r io.Reader, fn func(sseEvent) error, comment func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var ev sseEvent
	var data [][]byte
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if data != nil {
				ev.Data = bytes.Join(data, []byte("\n"))
				if err := fn(ev); err != nil {
					return stopped(err)
				}
			}
			ev, data = sseEvent{ID: ev.ID}, nil
			continue
		}
		if text, ok := strings.CutPrefix(line, ":"); ok {
			if err := comment(strings.TrimPrefix(text, " ")); err != nil {
				return stopped(err)
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Name = value
		case "data":
			data = append(data, []byte(value))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errStreamEnded
}

// errStreamEnded reports an event stream the daemon ended; it never ends
// one on its own while it runs.
var errStreamEnded = errors.New("the daemon ended the event stream")

// errStopEvents, returned by a readEvents callback, ends reading without
// an error.
var errStopEvents = errors.New("stop reading events")

func stopped(err error) error {
	if errors.Is(err, errStopEvents) {
		return nil
	}
	return err
}

// LaunchCommand starts an agent in the running daemon.
type LaunchCommand struct{ env *Env }

var launchSpec = cmdSpec{
	Name: "launch",
	Args: "[--owner ENTITY/ID] [--agent " + strings.Join(execution.Adapters(), "|") + "] [--interactive] [--prompt TEXT] [--seed S] [--dir DIR] [--json] -- CMD ARGS...",
	Summary: `Start an agent in the running daemon (see serve) and print its execution
id. The daemon runs and journals it like run does, but in the background: the
agent outlives this command, and send, observe, stop and tail reach it by its
id. The agent's command goes after --; it runs in --dir, which defaults to the
current directory, so a relative command is found from there. --prompt is
recorded as the first message and delivered the agent's way.

With --json, print the daemon's answer: the journal reference and the state.`,
	Example: "agentjournal launch -- ./my-agent --flag\n" +
		"agentjournal launch --owner Task/t-42 --prompt \"summarize the open issues\" -- ./my-agent\n" +
		"agentjournal launch --agent claude-code --interactive --prompt \"fix the failing test\"",
}

// Run implements Command.
func (c *LaunchCommand) Run(ctx context.Context, args []string) error {
	fs := launchSpec.newFlagSet()
	owner := fs.String("owner", "System/local", "the owning `ENTITY/ID`; ENTITY is one of "+ownerEntityList())
	agent := fs.String("agent", "generic", "the agent adapter `NAME`, one of "+strings.Join(execution.Adapters(), ", "))
	interactive := fs.Bool("interactive", false, "launch with posture "+string(eventstore.PostureStructuredInteractive)+
		", a terminal lane beside the structured one (default "+string(eventstore.PostureStructuredHeadless)+")")
	prompt := fs.String("prompt", "", "send `TEXT` to the agent as its first message, a prompt")
	seed := fs.String("seed", "", "derive the execution id from `S` (default: random, a new execution each launch)")
	dir := fs.String("dir", "", "run the agent in `DIR` (default: the current directory)")
	var env envFlag
	fs.Var(&env, "env", "add `NAME=VALUE` to the agent's environment (repeatable)")
	shape := fs.String("shape", "", "the session `SHAPE` of claude-code, codex and copilot: conversation (the default: after each result the agent waits for the next message) or one-shot (the execution ends with the first result)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")

	flagArgs, command := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		flagArgs, command = args[:i], args[i+1:]
	}
	pos, err := launchSpec.parse(fs, flagArgs)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return launchSpec.usageErr(fs, "unexpected argument %q: the agent's command goes after --, e.g. agentjournal launch -- %s",
			pos[0], strings.Join(pos, " "))
	}
	entity, ownerID, ok := strings.Cut(*owner, "/")
	if !ok || entity == "" || ownerID == "" {
		return launchSpec.usageErr(fs, "--owner %q: want ENTITY/ID with ENTITY one of %s, e.g. Task/t-42", *owner, ownerEntityList())
	}
	if *dir == "" {
		*dir = "."
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return launchSpec.usageErr(fs, "--dir %q: %v", *dir, err)
	}
	if *shape != "" && !slices.Contains(eventstore.SessionShapes, eventstore.SessionShape(*shape)) {
		return launchSpec.usageErr(fs, "--shape %q: want one of %s, %s", *shape, eventstore.ShapeConversation, eventstore.ShapeOneShot)
	}
	req := launchRequest{OwnerEntity: eventstore.OwnerEntity(entity), OwnerID: ownerID, Seed: *seed, Agent: *agent,
		Command: command, Prompt: *prompt, Dir: abs, Shape: eventstore.SessionShape(*shape)}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	if *interactive {
		req.Posture = eventstore.PostureStructuredInteractive
	}

	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer cl.close()
	res, err := cl.launch(ctx, req)
	if err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if *asJSON {
		return writeJSONLine(c.env.Stdout, res)
	}
	id := res.Reference.AgentExecutionID
	fmt.Fprintln(c.env.Stdout, id)
	fmt.Fprintf(c.env.Stderr, "agentjournal: launched %s (%s, %s); follow it with: %s tail -f --execution %s\n",
		id, res.State.AgentID, res.State.Lifecycle, c.env.hintPrefix(), id)
	return nil
}

// SendCommand sends a message to an agent of the running daemon.
type SendCommand struct{ env *Env }

var sendSpec = cmdSpec{
	Name: "send",
	Args: "ID [--type T] [--id MESSAGE_ID] [--answer REQUEST_ID] [--json] TEXT...",
	Summary: `Send a message to an agent the running daemon hosts: the words of TEXT,
joined by spaces, as the payload {"text": TEXT}. The daemon records the message
in the journal, delivers it the agent's way (a line on stdin for the generic
agent) and records the delivery; send prints how it went.

--answer REQUEST_ID answers the agent's open input request (the requestId of
its needs_input signal): the type becomes "answer" and the payload names the
request. --type picks another message type the agent declares (prompt,
answer, interrupt, …). A message sent again with the same --id is recorded
once: the retry gets the first acknowledgement back. A message the agent did
not get (its process has ended) is recorded as a failed delivery, and send
exits 1.`,
	Example: "agentjournal send ae-0123456789abcdef01234567 summarize the open issues\n" +
		"agentjournal send ae-0123456789abcdef01234567 --answer r1 yes, use the main branch",
}

// Run implements Command.
func (c *SendCommand) Run(ctx context.Context, args []string) error {
	fs := sendSpec.newFlagSet()
	typ := fs.String("type", "", "the message type `T` (default prompt, or answer with --answer)")
	messageID := fs.String("id", "", "record the message as `MESSAGE_ID` (default: an id the daemon assigns); a retry with the same id is recorded once")
	answer := fs.String("answer", "", "answer the open input request `REQUEST_ID`")
	asJSON := fs.Bool("json", false, "print the acknowledgement as JSON")
	pos, err := sendSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return sendSpec.usageErr(fs, "missing ID (want the agentExecutionId of a running agent; 'agentjournal ls --lifecycle running' lists them)")
	case len(pos) == 1:
		return sendSpec.usageErr(fs, "missing TEXT (want the words of the message after the ID)")
	}
	id, text := pos[0], strings.Join(pos[1:], " ")
	if *typ == "" {
		*typ = "prompt"
		if *answer != "" {
			*typ = "answer"
		}
	}
	payload, err := json.Marshal(struct {
		Text      string `json:"text"`
		RequestID string `json:"requestId,omitempty"`
	}{text, *answer})
	if err != nil {
		return err
	}

	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer cl.close()
	ack, err := cl.send(ctx, id, messageRequest{MessageID: *messageID, Type: *typ, Payload: payload})
	if err != nil {
		return fmt.Errorf("send to %s: %w", id, err)
	}
	line := fmt.Sprintf("message %s (sequence %d): %s via %s", ack.MessageID, ack.Sequence, ack.Delivery, ack.Transport)
	if ack.Reason != "" {
		line += ": " + ack.Reason
	}
	if ack.Duplicate {
		line += " (duplicate: sent before with this id; nothing was appended)"
	}
	if *asJSON {
		if err := writeJSONLine(c.env.Stdout, ack); err != nil {
			return err
		}
	}
	if ack.Delivery == eventstore.DeliveryFailed {
		// Recorded, but the agent did not get it: a script must know.
		return fmt.Errorf("send to %s: %s", id, line)
	}
	if !*asJSON {
		writeLine(c.env.Stdout, "%s", line)
	}
	return nil
}

// ObserveCommand records an observation for an agent of the running daemon.
type ObserveCommand struct{ env *Env }

var observeSpec = cmdSpec{
	Name: "observe",
	Args: "ID --signal TYPE [--id OBSERVATION_ID] [--confidence C] [--source S] [--json] JSON_PAYLOAD",
	Summary: `Record an observation for an execution of the running daemon, as an agent
or a tool watching it would: a signal of TYPE with the JSON_PAYLOAD, from
--source with --confidence. The daemon's policy decides on it (update the
state, record only, route to the owner, …); observe waits for the decision and
prints it. An observation sent again with the same --id is recorded once: the
retry gets the original decision, marked duplicate.`,
	Example: "agentjournal observe ae-0123456789abcdef01234567 --signal progress '{\"summary\":\"tests pass\"}'\n" +
		"agentjournal observe ae-0123456789abcdef01234567 --signal needs_input --id q-1 '{\"requestId\":\"r1\",\"question\":\"Which branch?\"}'",
}

// Run implements Command.
func (c *ObserveCommand) Run(ctx context.Context, args []string) error {
	fs := observeSpec.newFlagSet()
	signal := fs.String("signal", "", "the signal `TYPE`, one of "+joinEnum(eventstore.SurfacedSignalTypes()))
	observationID := fs.String("id", "", "record the observation as `OBSERVATION_ID` (default: a new random id); a retry with the same id is recorded once")
	confidence := fs.String("confidence", string(eventstore.ConfidenceAuthoritative), "how far the observation can be trusted, `C`: "+joinEnum(confidences))
	source := fs.String("source", string(eventstore.ObservedSDK), "where the observation comes from, `S`: "+joinEnum(observationSources))
	asJSON := fs.Bool("json", false, "print the acknowledgement and decision as JSON")
	pos, err := observeSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return observeSpec.usageErr(fs, "missing ID (want the agentExecutionId of an execution; 'agentjournal ls' lists them)")
	case len(pos) == 1:
		return observeSpec.usageErr(fs, "missing JSON_PAYLOAD (want the signal's payload as a JSON object, e.g. '{\"summary\":\"tests pass\"}')")
	case len(pos) > 2:
		return observeSpec.usageErr(fs, "too many arguments %q (want ID and JSON_PAYLOAD; quote the payload)", pos)
	case *signal == "":
		return observeSpec.usageErr(fs, "missing --signal TYPE (want one of: %s)", joinEnum(eventstore.SurfacedSignalTypes()))
	}
	id, payload := pos[0], pos[1]
	if !json.Valid([]byte(payload)) {
		return observeSpec.usageErr(fs, "JSON_PAYLOAD %q is not valid JSON (want an object, e.g. '{\"summary\":\"tests pass\"}')", payload)
	}
	if *observationID == "" {
		*observationID = "cli-" + randomHex(12)
	}

	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer cl.close()
	ack, err := cl.observe(ctx, id, observationRequest{ObservationID: *observationID,
		Source: eventstore.ObservationSource(*source), Confidence: eventstore.Confidence(*confidence),
		Signal: signalRequest{Type: eventstore.SignalType(*signal), Payload: json.RawMessage(payload)}})
	if err != nil {
		return fmt.Errorf("observe %s: %w", id, err)
	}
	if *asJSON {
		return writeJSONLine(c.env.Stdout, ack)
	}
	line := fmt.Sprintf("observation %s (sequence %d): decision %s", ack.ObservationID, ack.Sequence, ack.Decision.Action)
	if ack.Decision.Reason != "" {
		line += ": " + ack.Decision.Reason
	}
	if ack.Duplicate {
		line += " (duplicate: recorded before with this id; this is the original decision)"
	}
	writeLine(c.env.Stdout, "%s", line)
	return nil
}

// The confidences and sources observe offers in its help; the daemon
// checks the values.
var (
	confidences = []eventstore.Confidence{eventstore.ConfidenceAuthoritative, eventstore.ConfidenceHigh,
		eventstore.ConfidenceMedium, eventstore.ConfidenceLow, eventstore.ConfidenceDiagnostic}
	observationSources = []eventstore.ObservationSource{eventstore.ObservedSDK, eventstore.ObservedMCP, eventstore.ObservedPTY,
		eventstore.ObservedProviderOutput, eventstore.ObservedTerminalHeuristic, eventstore.ObservedFilesystem,
		eventstore.ObservedGit, eventstore.ObservedDaemon}
)

// StopCommand stops an agent of the running daemon.
type StopCommand struct{ env *Env }

var stopSpec = cmdSpec{
	Name: "stop",
	Args: "ID [--json]",
	Summary: `Stop an agent the running daemon hosts: SIGTERM to its process group, then
SIGKILL after the daemon's grace period. stop waits until the process has
ended and the journal holds its final lifecycle (cancelled, or terminated
when it had to be killed), and prints it. Only an execution running in this
daemon can be stopped.`,
	Example: "agentjournal stop ae-0123456789abcdef01234567",
}

// Run implements Command.
func (c *StopCommand) Run(ctx context.Context, args []string) error {
	fs := stopSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print the final state as JSON")
	pos, err := stopSpec.parse(fs, args)
	if err != nil {
		return err
	}
	id, err := oneID(stopSpec, fs, pos)
	if err != nil {
		return err
	}
	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer cl.close()
	v, err := cl.stop(ctx, id)
	if err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	if *asJSON {
		return writeJSONLine(c.env.Stdout, v)
	}
	lc := string(v.Lifecycle)
	if v.LifecycleReason != "" {
		lc += " (" + v.LifecycleReason + ")"
	}
	writeLine(c.env.Stdout, "%s: %s", id, lc)
	return nil
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return hex.EncodeToString(b)
}

// TailCommand prints the daemon's live events.
type TailCommand struct{ env *Env }

var tailSpec = cmdSpec{
	Name: "tail",
	Args: "[-f] [--execution ID] [--from-offset N] [--json]",
	Summary: `Print the running daemon's events, one line per journal record:

  OFFSET  EVENT  EXECUTION  WHAT

OFFSET is the record's log offset, EVENT what it means (execution.started,
execution.updated, execution.message, execution.completed, execution.failed,
execution.cancelled, execution.terminated, or data.changed for a record that
means none of these), WHAT the record kind and journal sequence, or the text
of a message.

Without -f, tail prints the events of the log from --from-offset (default 1)
up to its end when tail starts, and exits. With -f it keeps printing new
events until Ctrl-C, from --from-offset or else from now; when the stream
drops (the daemon restarted, or tail fell behind) it reconnects and resumes
after the last event printed. --json prints each event as
{"id":OFFSET,"event":EVENT,"data":{…}}, every data.changed included.`,
	Example: "agentjournal tail\nagentjournal tail -f --execution ae-0123456789abcdef01234567\nagentjournal tail --from-offset 120 --json",
}

// Event names tail treats apart.
const (
	eventDataChanged = "data.changed"
	eventTerminal    = "terminal"
	eventOverflow    = "overflow"
)

// tailBackoff bounds the wait between reconnections; tailAttempts is how
// many times in a row tail without -f tries to read the stream.
const (
	tailBackoffFirst = 250 * time.Millisecond
	tailBackoffMax   = 5 * time.Second
	tailAttempts     = 3
)

// errOverflow reports a stream the daemon closed because tail fell
// behind.
var errOverflow = errors.New("the daemon closed the event stream: tail fell too far behind")

// Run implements Command.
func (c *TailCommand) Run(ctx context.Context, args []string) error {
	fs := tailSpec.newFlagSet()
	var follow bool
	fs.BoolVar(&follow, "f", false, "short for --follow")
	fs.BoolVar(&follow, "follow", false, "keep printing new events until Ctrl-C")
	executionID := fs.String("execution", "", "only the events of execution `ID`")
	from := fs.Uint64("from-offset", 0, "start with the record at log offset `N` (default: 1, or now with -f)")
	asJSON := fs.Bool("json", false, `print {"id":OFFSET,"event":EVENT,"data":{…}} per event`)
	pos, err := tailSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return tailSpec.usageErr(fs, "unexpected argument %q (name an execution with --execution ID)", pos[0])
	}
	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer func() { cl.close() }()
	h, err := cl.health(ctx)
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	t := &tailer{env: c.env, out: &flushWriter{w: c.env.Stdout}, execution: *executionID, json: *asJSON, follow: follow}
	switch {
	case follow && *from == 0:
		// From now: the end of the log is where a dropped stream resumes
		// if no event came yet.
		t.last = h.LastOffset
	case follow:
		t.last = *from - 1
	default:
		t.end = h.LastOffset
		t.last = max(*from, 1) - 1
		if t.last >= t.end {
			return nil
		}
	}

	backoff, failures := tailBackoffFirst, 0
	for {
		before := t.last
		err := t.stream(ctx, cl)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if follow {
				return nil // Ctrl-C is how tail -f ends
			}
			return ctx.Err()
		case isAPIError(err):
			return fmt.Errorf("tail: %w", err)
		}
		if t.last != before {
			backoff, failures = tailBackoffFirst, 0
		}
		if failures++; !follow && failures >= tailAttempts {
			return fmt.Errorf("tail: read the event stream: %w", err)
		}
		fmt.Fprintf(c.env.Stderr, "agentjournal: tail: %v; resuming after offset %d\n", err, t.last)
		select {
		case <-ctx.Done():
			if follow {
				return nil
			}
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, tailBackoffMax)
		// The daemon may have restarted, on another address.
		if next, err := c.env.daemon(ctx); err == nil {
			cl.close()
			cl = next
		} else if follow && ctx.Err() == nil {
			fmt.Fprintf(c.env.Stderr, "agentjournal: tail: waiting for the daemon: %v\n", err)
		}
	}
}

func isAPIError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae)
}

// tailer prints one tail's events and remembers where it is.
type tailer struct {
	env       *Env
	out       io.Writer
	execution string
	json      bool
	follow    bool
	// last is the offset of the last record whose events were read: a new
	// stream resumes after it.
	last uint64
	// end is the offset after which tail without -f stops.
	end uint64
	// named is the offset of the last named event printed; the
	// data.changed of the same record is not printed.
	named uint64
}

// tailEvent is the data of an event.
type tailEvent struct {
	ExecutionID string                    `json:"executionId"`
	Offset      uint64                    `json:"offset"`
	Sequence    uint64                    `json:"sequence"`
	Record      eventstore.Kind           `json:"record"`
	Message     *eventstore.MessageSignal `json:"message"`
	Terminal    *struct {
		TerminalID string `json:"terminalId"`
		Available  bool   `json:"available"`
	} `json:"terminal"`
}

// stream reads one connection of the event stream. It returns nil when
// tail without -f has printed every event up to its end, and why the
// stream ended otherwise.
func (t *tailer) stream(ctx context.Context, cl *client) error {
	// Tail without -f filters here, so that it sees every offset up to
	// its end.
	filter := ""
	if t.follow {
		filter = t.execution
	}
	body, err := cl.events(ctx, filter, t.last)
	if err != nil {
		return err
	}
	defer body.Close()
	return readEvents(body, t.event, func(text string) error {
		if !t.follow && text == "heartbeat" {
			// The daemon had nothing more to send: every event up to
			// the end has been read.
			return errStopEvents
		}
		return nil
	})
}

func (t *tailer) event(ev sseEvent) error {
	if ev.Name == eventOverflow {
		return errOverflow
	}
	var d tailEvent
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return fmt.Errorf("event %s %s does not decode: %w", ev.ID, ev.Name, err)
	}
	ephemeral := ev.Name == eventTerminal
	if !t.follow && d.Offset > t.end {
		return errStopEvents
	}
	if !ephemeral {
		t.last = max(t.last, d.Offset)
	}
	if t.execution == "" || d.ExecutionID == t.execution {
		if err := t.print(ev, d); err != nil {
			return err
		}
	}
	// data.changed is the last event of each record.
	if !t.follow && ev.Name == eventDataChanged && d.Offset >= t.end {
		return errStopEvents
	}
	return nil
}

func (t *tailer) print(ev sseEvent, d tailEvent) error {
	if t.json {
		return writeJSONLine(t.out, struct {
			ID    uint64          `json:"id"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}{d.Offset, ev.Name, ev.Data})
	}
	if ev.Name == eventDataChanged && d.Offset == t.named && t.named != 0 {
		return nil
	}
	if ev.Name != eventDataChanged && ev.Name != eventTerminal {
		t.named = d.Offset
	}
	what := fmt.Sprintf("%s #%d", d.Record, d.Sequence)
	switch {
	case d.Message != nil:
		what = clip(d.Message.Text)
	case d.Terminal != nil:
		state := "closed"
		if d.Terminal.Available {
			state = "available"
		}
		what = fmt.Sprintf("terminal lane %s %s", d.Terminal.TerminalID, state)
	}
	return writeLine(t.out, "%8d  %-20s  %-27s  %s", d.Offset, ev.Name, d.ExecutionID, what)
}
