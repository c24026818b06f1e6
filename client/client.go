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

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
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
	if c.token != "" {
		// Without one, /healthz still answers, briefly.
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
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
	var answer wire.ErrorBody
	if json.Unmarshal(data, &answer) == nil && answer.Error.Code != "" {
		return nil, errorOf(resp.StatusCode, answer.Error)
	}
	// Not the API's shape: a proxy in between, or not a daemon at all.
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
}

// doAs is do for the routes whose answer is a T, returned as it is.
func doAs[T any](ctx context.Context, c *Client, method, path string, query url.Values, in any) (T, error) {
	var out T
	err := c.do(ctx, method, path, query, in, &out)
	return out, err
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

// Health asks GET /healthz. With the API token it has every detail; a
// client without a token gets the status alone.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, &h)
	return h, err
}

// ExecutionFilter selects executions for List; the zero value lists all.
// It has the fields of the read model's filter (projections.Filter), which
// converts to it.
type ExecutionFilter struct {
	// OwnerEntity and OwnerID select one owner's executions; OwnerEntity
	// alone selects every owner of that entity.
	OwnerEntity eventstore.OwnerEntity
	OwnerID     string
	Lifecycle   eventstore.Lifecycle
	Attention   eventstore.Attention
	// Limit bounds the list; 0 is the daemon's whole list.
	Limit int
}

// List lists executions from the daemon's read model (GET /v1/executions).
// The daemon refuses a filter it does not accept with ErrInvalidField.
func (c *Client) List(ctx context.Context, f ExecutionFilter) ([]Summary, error) {
	var out wire.Executions
	err := c.do(ctx, http.MethodGet, "/v1/executions", f.query(), nil, &out)
	return out.Executions, err
}

// ExecutionPage is one page of the executions a filter selects.
type ExecutionPage struct {
	Executions []Summary
	// Total is how many executions the filter selects, on every page.
	Total int
}

// ListPage lists the executions f selects after passing over offset of
// them, at most f.Limit (0: all the rest), with how many f selects in all
// (the answer's X-Total-Count). Paging with offset until it reaches Total
// reads them all.
func (c *Client) ListPage(ctx context.Context, f ExecutionFilter, offset int) (ExecutionPage, error) {
	q := f.query()
	if offset != 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	resp, err := c.Request(ctx, http.MethodGet, "/v1/executions", q, nil, nil)
	if err != nil {
		return ExecutionPage{}, err
	}
	defer resp.Body.Close()
	total, err := strconv.Atoi(resp.Header.Get("X-Total-Count"))
	if err != nil {
		return ExecutionPage{}, fmt.Errorf("read the answer to GET /v1/executions: X-Total-Count %q is not a whole number", resp.Header.Get("X-Total-Count"))
	}
	var out wire.Executions
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ExecutionPage{}, fmt.Errorf("read the answer to GET /v1/executions: %w", err)
	}
	return ExecutionPage{Executions: out.Executions, Total: total}, nil
}

func (f ExecutionFilter) query() url.Values {
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
	return q
}

// Execution reads one execution (GET /v1/executions/{id}); ErrNotFound
// when there is none.
func (c *Client) Execution(ctx context.Context, id string) (Execution, error) {
	return doAs[Execution](ctx, c, http.MethodGet, executionPath(id), nil, nil)
}

// Launch starts an agent in the daemon (POST /v1/executions).
func (c *Client) Launch(ctx context.Context, in LaunchRequest) (Launched, error) {
	return doAs[Launched](ctx, c, http.MethodPost, "/v1/executions", nil, in)
}

// Stop stops an execution running in this daemon: SIGTERM, then SIGKILL
// after the grace (POST /v1/executions/{id}/stop); one still in the queue
// ends cancelled at once and never starts. It answers once the journal
// holds the final lifecycle; ErrConflict when it does not run here.
func (c *Client) Stop(ctx context.Context, id string) (Execution, error) {
	return doAs[Execution](ctx, c, http.MethodPost, executionPath(id, "/stop"), nil, nil)
}

// ScopedToken returns the token scoped to execution id, for a process
// that should report as that execution's agent and do nothing else. It
// is the same token each time: it holds no state and lasts as long as the
// daemon's secret.
func (c *Client) ScopedToken(ctx context.Context, id string) (ScopedToken, error) {
	return doAs[ScopedToken](ctx, c, http.MethodPost, executionPath(id, "/token"), nil, nil)
}

// SendMessage records a message and delivers it to the agent. A message
// the agent did not get is recorded too, and answered with the delivery
// failed, not with an error.
func (c *Client) SendMessage(ctx context.Context, id string, m Message) (MessageAck, error) {
	return doAs[MessageAck](ctx, c, http.MethodPost, executionPath(id, "/messages"), nil, m)
}

// RecordObservation records an observation and waits for the policy's
// decision on it; ErrTimeout when none came in the daemon's wait (sending
// it again with the same id then answers with the decision).
func (c *Client) RecordObservation(ctx context.Context, id string, o Observation) (ObservationAck, error) {
	return doAs[ObservationAck](ctx, c, http.MethodPost, executionPath(id, "/observations"), nil, o)
}

// Timeline reads a page of an execution's timeline, newest first: up to
// limit items (the daemon's default when 0) before the cursor before (0:
// from the newest), the decisions that change nothing left out. next is the
// cursor of the following page, 0 at the end.
func (c *Client) Timeline(ctx context.Context, id string, before uint64, limit int) (items []execution.TimelineItem, next uint64, err error) {
	return c.QueryTimeline(ctx, id, TimelineQuery{Before: before, Limit: limit})
}

// TimelineQuery selects a page of a timeline.
type TimelineQuery struct {
	// Before is the cursor: items older than it; 0 for the newest.
	Before uint64
	// Limit is the most items; 0 for the daemon's default.
	Limit int
	// All includes the decisions that change nothing, which a page leaves
	// out otherwise (docs/api.md).
	All bool
}

// QueryTimeline reads the page of an execution's timeline q selects,
// newest first. next is the cursor of the following page, 0 at the end.
func (c *Client) QueryTimeline(ctx context.Context, id string, q TimelineQuery) (items []execution.TimelineItem, next uint64, err error) {
	v := url.Values{}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Before != 0 {
		v.Set("before", strconv.FormatUint(q.Before, 10))
	}
	if q.All {
		v.Set("all", "true")
	}
	var out wire.Timeline
	if err := c.do(ctx, http.MethodGet, executionPath(id, "/timeline"), v, nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Items, deref(out.Next), nil
}

// Records reads an execution's journal from sequence fromSeq (1 when 0),
// up to limit records (the daemon's default when 0). next is the sequence
// the following page starts at, 0 at the end.
func (c *Client) Records(ctx context.Context, id string, fromSeq uint64, limit int) (records []eventstore.Record, next uint64, err error) {
	q := pageQuery("fromSeq", fromSeq, limit)
	var out wire.Records
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

// LogEntry is a record with its log offset, decoded from a page's
// wire.PageEntry (DecodeEntry).
type LogEntry struct {
	Offset uint64
	Record eventstore.Record
}

// DecodeEntry decodes an entry of a page of the log or of a journal with
// the record registry. A stored record that does not decode, at the
// daemon or here (one a newer daemon wrote), is an *eventstore.OffsetError,
// with the offset in the entry too.
func DecodeEntry(e wire.PageEntry) (LogEntry, error) {
	if e.Record == nil {
		msg := e.Error
		if msg == "" {
			msg = "the daemon sent neither the record nor why it has none"
		}
		return LogEntry{Offset: e.Offset}, &eventstore.OffsetError{Offset: e.Offset, Err: errors.New(msg)}
	}
	r, err := eventstore.Decode(e.Record)
	if err != nil {
		return LogEntry{Offset: e.Offset}, &eventstore.OffsetError{Offset: e.Offset, Err: err}
	}
	return LogEntry{Offset: e.Offset, Record: r}, nil
}

// UnmarshalJSON decodes {offset, record}, as DecodeEntry does.
func (e *LogEntry) UnmarshalJSON(data []byte) error {
	var raw wire.PageEntry
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	d, err := DecodeEntry(raw)
	if err != nil {
		return err
	}
	*e = d
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
//
// A stored record that does not decode ends the page with an
// *eventstore.OffsetError: LogEntries passes over it instead.
func (c *Client) Log(ctx context.Context, fromOffset uint64, limit int) (entries []LogEntry, next uint64, err error) {
	var out wire.Entries
	if err := c.do(ctx, http.MethodGet, "/v1/log", pageQuery("fromOffset", fromOffset, limit), nil, &out); err != nil {
		return nil, 0, err
	}
	entries = make([]LogEntry, 0, len(out.Entries))
	for _, raw := range out.Entries {
		e, err := DecodeEntry(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("read the answer to GET /v1/log: %w", err)
		}
		entries = append(entries, e)
	}
	return entries, deref(out.Next), nil
}

// Replay folds an execution's journal up to sequence toSeq (all of it
// when 0). Its records are in their stored form, with their log offsets:
// eventstore.Decode decodes one.
func (c *Client) Replay(ctx context.Context, id string, toSeq uint64) (Replay, error) {
	q := url.Values{}
	if toSeq != 0 {
		q.Set("toSeq", strconv.FormatUint(toSeq, 10))
	}
	return doAs[Replay](ctx, c, http.MethodGet, executionPath(id, "/replay"), q, nil)
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
			// Inside a stream that had answered 200: no status of its own.
			return l, errorOf(0, *l.Error)
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

// Hosts lists the hosts of the fleet sharing the daemon's log (GET
// /v1/hosts), by name, as that daemon sees them.
func (c *Client) Hosts(ctx context.Context) (Hosts, error) {
	var out Hosts
	err := c.do(ctx, http.MethodGet, "/v1/hosts", nil, nil, &out)
	return out, err
}

// Agents lists the agents the daemon launches (GET /v1/agents), in the
// order it offers them.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out AgentCatalog
	err := c.do(ctx, http.MethodGet, "/v1/agents", nil, nil, &out)
	return out.Agents, err
}
