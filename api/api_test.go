package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
)

const testToken = apitest.Token

// rig is the whole daemon stack in process: an embedded NATS, the journal
// store, a projection fed by a projector goroutine, the policy subscriber,
// the runtime with a terminal registry, and the API on an httptest server.
type rig struct {
	bus   *bus.Bus
	store *eventstore.JetStreamStore
	views *projections.DB
	rt    *runtime.Runtime
	srv   *api.Server
	http  *httptest.Server
	agent string
}

// startClient starts the daemon stack with opts and a client of its API,
// with a context that gives the test a minute; all three end with the test.
func startClient(t *testing.T, opts apitest.Options) (*apitest.Stack, *client.Client, context.Context) {
	t.Helper()
	s := apitest.Start(t, opts)
	c := client.New(s.HTTP.URL, apitest.Token)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return s, c, ctx
}

// todoLaunch is a one-shot Claude Code launch for owner task ownerID: the
// fixture agent replays a real capture that plans with TodoWrite and
// advertises slash commands.
func todoLaunch(t *testing.T, s *apitest.Stack, ownerID, prompt string) client.LaunchRequest {
	t.Helper()
	capture, err := filepath.Abs(filepath.Join("..", "runtime", "claude", "testdata", "real", "todo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: ownerID, Agent: "claude-code",
		Command: []string{s.Agent, "replay:" + capture}, Prompt: prompt, Shape: eventstore.ShapeOneShot}
}

// launchRun launches in through the client, failing the test if it is
// refused, and returns the new execution's id.
func launchRun(t *testing.T, ctx context.Context, c *client.Client, in client.LaunchRequest) string {
	t.Helper()
	res, err := c.Launch(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return res.Reference.AgentExecutionID
}

// waitExecution polls the execution id until done holds of it, failing
// with msg when ctx ends first.
func waitExecution(t *testing.T, ctx context.Context, c *client.Client, id, msg string, done func(client.Execution) bool) {
	t.Helper()
	for ex, _ := c.Execution(ctx, id); !done(ex); ex, _ = c.Execution(ctx, id) {
		if ctx.Err() != nil {
			t.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFinal polls the execution id until its lifecycle is final.
func waitFinal(t *testing.T, ctx context.Context, c *client.Client, id, msg string) {
	t.Helper()
	waitExecution(t, ctx, c, id, msg, func(ex client.Execution) bool { return ex.Lifecycle.Final() })
}

// waitAsked polls the execution id until request is its open input
// request.
func waitAsked(t *testing.T, ctx context.Context, c *client.Client, id, request string) {
	t.Helper()
	waitExecution(t, ctx, c, id, request+" never asked", func(ex client.Execution) bool { return ex.CurrentInputRequestID == request })
}

func newRig(t *testing.T, opts ...func(*api.Config)) *rig {
	t.Helper()
	return startRig(t, true, opts...)
}

// startRig is newRig with or without the policy subscriber.
func startRig(t *testing.T, withPolicy bool, opts ...func(*api.Config)) *rig {
	t.Helper()
	s := apitest.Start(t, apitest.Options{NoPolicy: !withPolicy, Configure: opts})
	return &rig{bus: s.Bus, store: s.Store, views: s.Views, rt: s.Runtime, srv: s.Server, http: s.HTTP, agent: s.Agent}
}

// do sends a request with a token ("" for none) and returns the status and
// body. A string body is sent as it is, anything else as JSON.
func (r *rig) do(t *testing.T, method, path string, body any, token string) (int, []byte) {
	t.Helper()
	header := map[string]string{}
	if token != "" {
		header["Authorization"] = "Bearer " + token
	}
	resp, data := r.send(t, method, path, body, header)
	return resp.StatusCode, data
}

// send is do with the request's headers as given, for the tests that set
// other headers than the token's or read those of the answer; the
// answer's body is read and closed.
func (r *rig) send(t *testing.T, method, path string, body any, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, r.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// call sends a request with the API token, checks the status and decodes
// the answer into out (when not nil).
func (r *rig) call(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	code, data := r.do(t, method, path, body, testToken)
	if code != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// apiErr is the error shape of the API.
type apiErr struct {
	Error struct {
		Code     string   `json:"code"`
		Message  string   `json:"message"`
		Field    string   `json:"field"`
		Accepted []string `json:"accepted"`
	} `json:"error"`
}

// refusal is a request body the API refuses, as a case of a table test
// that checks it with rig.fail: the status, error code and field it is
// answered with.
type refusal struct {
	name   string
	body   any
	status int
	code   string
	field  string
}

// fail sends a request that must fail with status and code, naming field
// (when not "") , and returns the error.
func (r *rig) fail(t *testing.T, method, path string, body any, token string, status int, code, field string) apiErr {
	t.Helper()
	got, data := r.do(t, method, path, body, token)
	var e apiErr
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("%s %s: status %d, body %q is not the error shape: %v", method, path, got, data, err)
	}
	if got != status || e.Error.Code != code || e.Error.Field != field || e.Error.Message == "" {
		t.Fatalf("%s %s: got %d %s field %q (%s), want %d %s field %q", method, path, got, e.Error.Code, e.Error.Field, e.Error.Message, status, code, field)
	}
	return e
}

// view is the part of an execution read the tests look at.
type view struct {
	ID                    string               `json:"id"`
	OwnerEntity           string               `json:"ownerEntity"`
	OwnerID               string               `json:"ownerId"`
	Lifecycle             eventstore.Lifecycle `json:"lifecycle"`
	Attention             eventstore.Attention `json:"attention"`
	CurrentInputRequestID string               `json:"currentInputRequestId"`
	Journal               eventstore.Reference `json:"journal"`
	Live                  struct {
		Running    bool   `json:"running"`
		TerminalID string `json:"terminalId"`
	} `json:"live"`
}

type launched struct {
	Reference eventstore.Reference `json:"reference"`
	State     view                 `json:"state"`
}

// launch starts the fixture agent with steps through the API.
func (r *rig) launch(t *testing.T, ownerID string, posture eventstore.Posture, steps ...string) launched {
	t.Helper()
	body := map[string]any{"ownerEntity": "Task", "ownerId": ownerID, "agent": "generic", "command": append([]string{r.agent}, steps...)}
	if posture != "" {
		body["posture"] = posture
	}
	var l launched
	r.call(t, "POST", "/v1/executions", body, http.StatusCreated, &l)
	return l
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quiet waits until a journal has not grown for a while and the
// projection holds all of it, and returns its head.
func (r *rig) quiet(t *testing.T, ref eventstore.Reference) eventstore.Reference {
	t.Helper()
	var head eventstore.Reference
	stable := 0
	eventually(t, 20*time.Second, "the journal stops growing", func() bool {
		h, err := r.store.Head(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if h.LastSequence == head.LastSequence {
			stable++
		} else {
			head, stable = h, 0
		}
		return stable >= 10
	})
	last, err := r.store.LastOffset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.views.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	return head
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	ID   uint64
	Name string
	Data string
}

func (e sseEvent) String() string { return fmt.Sprintf("%d %s", e.ID, e.Name) }

// stream is an open event stream.
type stream struct {
	events chan sseEvent
	cancel context.CancelFunc
}

// subscribe opens GET /v1/events?query with an optional Last-Event-ID.
// onEvent runs on the reading goroutine as each event arrives.
func (r *rig) subscribe(t *testing.T, query, lastEventID string, onEvent func(sseEvent)) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", r.http.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events: status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{events: make(chan sseEvent, 4096), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.events)
		defer resp.Body.Close()
		readSSE(resp.Body, func(ev sseEvent) {
			if onEvent != nil {
				onEvent(ev)
			}
			s.events <- ev
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// readSSE parses an event stream (the subset the API writes: id, event,
// data and comment lines).
func readSSE(body io.Reader, emit func(sseEvent)) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Name != "" || len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				emit(ev)
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID, _ = strconv.ParseUint(value, 10, 64)
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

// next waits for the next event of the stream.
func (s *stream) next(t *testing.T, within time.Duration) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
	}
	return sseEvent{}
}

// until collects events until one satisfies stop (included).
func (s *stream) until(t *testing.T, within time.Duration, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.Now().Add(within)
	for {
		ev := s.next(t, time.Until(deadline))
		out = append(out, ev)
		if stop(ev) {
			return out
		}
	}
}
