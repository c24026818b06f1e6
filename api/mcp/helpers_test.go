package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/policy"
)

const ownerID = "mcp-test"

// surfaced has one valid payload per surfaced signal type, in registry
// order.
var surfaced = []eventstore.SignalPayload{
	&eventstore.ProgressSignal{Summary: "Running tests", Detail: "3 of 10", Units: &eventstore.Units{Completed: i64(3), Total: i64(10), Unit: "packages"}},
	&eventstore.StatusSignal{Summary: "Writing tests", Phase: "testing"},
	&eventstore.NeedsInputSignal{RequestID: "q1", Question: "Delete the files?", Choices: []string{"yes", "no"}},
	&eventstore.BlockedSignal{Reason: "no network", Needs: "VPN"},
	&eventstore.ReadyForVerificationSignal{Summary: "ready", Evidence: []string{"go test ./..."}},
	&eventstore.CompletedClaimSignal{Summary: "done", Evidence: []string{"a.go"}},
	&eventstore.FailedClaimSignal{Reason: "cannot", Detail: "404"},
	&eventstore.MessageSignal{Text: "hello\nworld ✓", Format: "markdown"},
}

func i64(v int64) *int64 { return &v }

// journalRecorder is a Recorder over a real store: it appends the
// observation, decides on the replayed journal with policy.Decide, and
// appends the decision and its records, as the policy subscriber does.
type journalRecorder struct {
	store *eventstore.JetStreamStore
	mu    sync.Mutex
}

var _ Recorder = (*journalRecorder)(nil)

func (r *journalRecorder) RecordObservation(ctx context.Context, agentExecutionID string, o *eventstore.Observation) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := r.store.Lookup(ctx, agentExecutionID)
	if err != nil {
		return Decision{}, err
	}
	st, err := r.replay(ctx, ref)
	if err != nil {
		return Decision{}, err
	}
	if out := policy.Decide(st, o); out.Duplicate {
		return decisionOf(out), nil
	}
	if _, err := r.store.Append(ctx, ref, o); err != nil {
		return Decision{}, fmt.Errorf("append the observation: %w", err)
	}
	if st, err = r.replay(ctx, ref); err != nil {
		return Decision{}, err
	}
	out := policy.Decide(st, o)
	for _, rec := range append([]eventstore.Record{out.Decision}, out.Records...) {
		if _, err := r.store.Append(ctx, ref, rec); err != nil {
			return Decision{}, fmt.Errorf("append %s: %w", rec.Kind(), err)
		}
	}
	return decisionOf(out), nil
}

func (r *journalRecorder) replay(ctx context.Context, ref eventstore.Reference) (*execution.State, error) {
	var records []eventstore.Record
	for e, err := range r.store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, err
		}
		records = append(records, e.Record)
	}
	return execution.Replay(records)
}

func decisionOf(out policy.Outcome) Decision {
	return Decision{DecisionID: out.Decision.DecisionID, Action: string(out.Decision.Action),
		Reason: out.Decision.Reason, Duplicate: out.Duplicate}
}

// tokens is an Authorizer over a fixed token table.
type tokens map[string]string

func (t tokens) CheckScopedToken(token string) (string, bool) {
	id, ok := t[token]
	return id, ok
}

// env is a daemon's MCP endpoint over a real store, with executions A and B.
type env struct {
	store *eventstore.JetStreamStore
	rec   *journalRecorder
	refs  map[string]eventstore.Reference
	url   string
}

const (
	execA, tokenA = "exec-a", "token-a"
	execB, tokenB = "exec-b", "token-b"
)

func newEnv(t *testing.T) *env {
	t.Helper()
	b := fixtures.StartNATS(t)
	s, err := eventstore.OpenJetStream(t.Context(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &env{store: s, rec: &journalRecorder{store: s}, refs: map[string]eventstore.Reference{}}
	for _, id := range []string{execA, execB} {
		e.refs[id] = e.ensure(t, id)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := httptest.NewServer(NewHandler(e.rec, tokens{tokenA: execA, tokenB: execB}, logger))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

func (e *env) ensure(t *testing.T, execID string) eventstore.Reference {
	t.Helper()
	ref, err := e.store.EnsureJournal(t.Context(), storetest.Ref(eventstore.OwnerSystem, ownerID, execID), storetest.Header("agent-1"))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func (e *env) records(t *testing.T, execID string) []eventstore.Record {
	t.Helper()
	var out []eventstore.Record
	for _, en := range storetest.Collect(t, e.store.ReadJournal(t.Context(), e.refs[execID], 1)) {
		out = append(out, en.Record)
	}
	return out
}

func (e *env) observations(t *testing.T, execID string) []*eventstore.Observation {
	t.Helper()
	var out []*eventstore.Observation
	for _, r := range e.records(t, execID) {
		if o, ok := r.(*eventstore.Observation); ok {
			out = append(out, o)
		}
	}
	return out
}

// connect opens an SDK client session over streamable HTTP with a token.
func connect(t *testing.T, url, token string, opts *sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	cs, err := dial(t.Context(), url, token, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dial(ctx context.Context, url, token string, opts *sdk.ClientSessionOptions) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	return c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}},
	}, opts)
}

// args turns a payload into tool arguments.
func args(t *testing.T, p eventstore.SignalPayload) map[string]any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// call calls a tool and returns its result and text.
func call(t *testing.T, cs *sdk.ClientSession, params *sdk.CallToolParams) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", params.Name, err)
	}
	return res, text(res)
}

func text(res *sdk.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// result reads the structured content of a successful call.
func result(t *testing.T, res *sdk.CallToolResult) Result {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return r
}
