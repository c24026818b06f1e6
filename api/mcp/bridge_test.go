package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// startBridge runs RunStdioBridge on two pipes and connects an SDK client
// to their other ends, as an agent would over stdio.
func startBridge(t *testing.T, ctx context.Context, url, token string) (*sdk.ClientSession, <-chan error) {
	t.Helper()
	agentIn, bridgeOut := io.Pipe()
	bridgeIn, agentOut := io.Pipe()
	t.Cleanup(func() {
		agentIn.Close()
		bridgeOut.Close()
		bridgeIn.Close()
		agentOut.Close()
	})
	done := make(chan error, 1)
	go func() { done <- RunStdioBridge(ctx, url, token, bridgeIn, bridgeOut) }()
	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: agentIn, Writer: agentOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, done
}

func wait(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunStdioBridge = %v, want nil %s", err, what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("RunStdioBridge still running %s", what)
	}
}

func TestStdioBridge(t *testing.T) {
	e := newEnv(t)
	cs, done := startBridge(t, t.Context(), e.url, tokenA)

	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	want := Tools()
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("bridge lists %v, want %v", names, want)
	}

	res, txt := call(t, cs, &sdk.CallToolParams{Name: "signal_needs_input",
		Arguments: map[string]any{"requestId": "q1", "question": "Which branch?"}})
	r := result(t, res)
	obs := e.observations(t, execA)
	if len(obs) != 1 || obs[0].ObservationID != r.ObservationID {
		t.Fatalf("A has %d observations, want the one the bridge forwarded (%s)", len(obs), r.ObservationID)
	}
	if o := obs[0]; o.Source != eventstore.ObservedMCP || o.Confidence != eventstore.ConfidenceAuthoritative ||
		o.Signal.Payload.(*eventstore.NeedsInputSignal).Question != "Which branch?" {
		t.Errorf("recorded %+v, want the needs_input signal from mcp, authoritative", o)
	}
	if !strings.HasPrefix(txt, "recorded observation "+r.ObservationID+": decision update-state") {
		t.Errorf("text %q, want the daemon's answer", txt)
	}

	// A tool error of the daemon reaches the agent as it is.
	res, txt = call(t, cs, &sdk.CallToolParams{Name: "signal_progress", Arguments: map[string]any{"summary": "s", "extra": true}})
	if !res.IsError || !strings.Contains(txt, `field "extra": unknown field`) {
		t.Errorf("got %q (error %v), want the daemon's tool error", txt, res.IsError)
	}
	if n := len(e.observations(t, execA)); n != 1 {
		t.Errorf("A has %d observations after an invalid call, want 1", n)
	}
	if recs := e.records(t, execB); len(recs) != 1 {
		t.Errorf("B has %d records, want only its header", len(recs))
	}

	// The agent leaving ends the bridge cleanly.
	cs.Close()
	wait(t, done, "when the agent leaves")
}

func TestStdioBridgeCancel(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cs, done := startBridge(t, ctx, e.url, tokenA)
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	wait(t, done, "after cancellation")
}

// TestStdioBridgeRetry: the daemon records a call but its answer is lost;
// the bridge connects again and retries with the same call id, and the
// signal is recorded once.
func TestStdioBridgeRetry(t *testing.T) {
	e := newEnv(t)
	var dropNext atomic.Bool
	handler := NewHandler(e.rec, tokens{tokenA: execA}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && dropNext.CompareAndSwap(true, false) {
			handler.ServeHTTP(httptest.NewRecorder(), r) // recorded, answer lost
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	cs, done := startBridge(t, t.Context(), srv.URL, tokenA)
	dropNext.Store(true)
	res, txt := call(t, cs, &sdk.CallToolParams{Name: "signal_blocked", Arguments: map[string]any{"reason": "no network"}})
	r := result(t, res)
	if dropNext.Load() {
		t.Fatal("the daemon never lost an answer")
	}
	if !r.Decision.Duplicate || !strings.Contains(txt, "was recorded before") {
		t.Errorf("retried call answered %q, want the first decision, marked duplicate", txt)
	}
	if obs := e.observations(t, execA); len(obs) != 1 || obs[0].ObservationID != r.ObservationID {
		t.Errorf("A has %d observations, want the one signal once", len(obs))
	}
	var decisions int
	for _, rec := range e.records(t, execA) {
		if _, ok := rec.(*eventstore.Decision); ok {
			decisions++
		}
	}
	if decisions != 1 {
		t.Errorf("A has %d decisions, want 1", decisions)
	}
	cs.Close()
	wait(t, done, "when the agent leaves")
}

// TestStdioBridgeNoGoroutineLeak: a bridge that ran a call and stopped
// leaves no goroutine behind. It does not run in parallel.
func TestStdioBridgeNoGoroutineLeak(t *testing.T) {
	// The journal store's consumers come and go on their own schedule:
	// record into memory, so only the bridge and the endpoint count.
	rec := &memoryRecorder{}
	srv := httptest.NewServer(NewHandler(rec, tokens{tokenA: execA}, nil))
	defer srv.Close()
	before := runtime.NumGoroutine()
	t.Run("bridge", func(t *testing.T) {
		cs, done := startBridge(t, t.Context(), srv.URL, tokenA)
		result(t, first(call(t, cs, &sdk.CallToolParams{Name: "signal_status", Arguments: map[string]any{"summary": "s"}})))
		cs.Close()
		wait(t, done, "when the agent leaves")
	})
	if len(rec.observations) != 1 {
		t.Errorf("%d observations recorded, want 1", len(rec.observations))
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the bridge stopped, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStdioBridgeBadToken(t *testing.T) {
	e := newEnv(t)
	bridgeIn, agentOut := io.Pipe()
	defer agentOut.Close()
	err := RunStdioBridge(t.Context(), e.url, "nope", bridgeIn, io.Discard)
	if err == nil || !strings.Contains(err.Error(), e.url) {
		t.Errorf("RunStdioBridge with a bad token = %v, want an error naming the daemon", err)
	}
}

// memoryRecorder keeps observations in memory and answers a fixed decision.
type memoryRecorder struct {
	mu           sync.Mutex
	observations []*eventstore.Observation
}

func (r *memoryRecorder) RecordObservation(_ context.Context, _ string, o *eventstore.Observation) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observations = append(r.observations, o)
	return Decision{DecisionID: "dec-" + o.ObservationID, Action: string(eventstore.ActionRecordOnly)}, nil
}

func TestDaemonError(t *testing.T) {
	daemon := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}
	rejected := &jsonrpc.Error{Code: codeRejectedByTransport, Message: "rejected by transport"}
	for _, tc := range []struct {
		name string
		err  error
		want *jsonrpc.Error
	}{
		{"daemon's answer", fmt.Errorf("calling %q: %w", "tools/call", daemon), daemon},
		{"daemon's answer to a rejected request", fmt.Errorf("calling: %w", fmt.Errorf("post: %w: %w", rejected, daemon)), daemon},
		{"connection lost", fmt.Errorf("calling: %w", fmt.Errorf("post: %w: %w", rejected, io.ErrUnexpectedEOF)), nil},
		{"connection closed", fmt.Errorf("calling: %w", sdk.ErrConnectionClosed), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := daemonError(tc.err)
			if got != tc.want || ok != (tc.want != nil) {
				t.Errorf("daemonError(%v) = %v, %v; want %v", tc.err, got, ok, tc.want)
			}
		})
	}
}
