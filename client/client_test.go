package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
)

// start runs a daemon stack and returns a client of it.
func start(t *testing.T) (*apitest.Stack, *client.Client) {
	t.Helper()
	s := apitest.Start(t, apitest.Options{})
	c := client.New(s.HTTP.URL, apitest.Token)
	t.Cleanup(func() { c.Close() })
	return s, c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// launch starts the fixture agent with the steps.
func launch(t *testing.T, ctx context.Context, s *apitest.Stack, c *client.Client, owner string, steps ...string) client.Launched {
	t.Helper()
	res, err := c.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: owner, Agent: "generic",
		Command: append([]string{s.Agent}, steps...)})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	return res
}

// await polls the execution until ok holds.
func await(t *testing.T, ctx context.Context, c *client.Client, id, what string, ok func(client.Execution) bool) client.Execution {
	t.Helper()
	for {
		ex, err := c.Execution(ctx, id)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if ok(ex) {
			return ex
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %s never happened; lifecycle %s", id, what, ex.Lifecycle)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestClientRoutes drives an execution through every typed method against
// a real daemon stack.
func TestClientRoutes(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)

	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" {
		t.Fatalf("health: %+v, %v; want status ok", h, err)
	}
	res := launch(t, ctx, s, c, "t-1", "ask:r1:Proceed?", "echo:1")
	id := res.Reference.AgentExecutionID
	if !strings.HasPrefix(id, "ae-") || res.State.ID != id {
		t.Fatalf("launch answered %+v, want the new execution", res)
	}
	await(t, ctx, c, id, "the input request r1", func(ex client.Execution) bool { return ex.CurrentInputRequestID == "r1" })

	obs := client.Observation{ObservationID: "p-1", Source: eventstore.ObservedSDK, Confidence: eventstore.ConfidenceAuthoritative,
		Signal: &client.Signal{Type: "progress", Payload: json.RawMessage(`{"summary":"reading"}`)}}
	first, err := c.RecordObservation(ctx, id, obs)
	if err != nil || first.Duplicate || first.Decision.Action == "" {
		t.Fatalf("observe: %+v, %v; want a decision", first, err)
	}
	again, err := c.RecordObservation(ctx, id, obs)
	if err != nil || !again.Duplicate || again.Decision != first.Decision {
		t.Fatalf("observe again: %+v, %v; want a duplicate with decision %+v", again, err, first.Decision)
	}

	answer, err := c.SendMessage(ctx, id, client.Message{MessageID: "m-1", Type: "answer", Payload: json.RawMessage(`{"text":"yes","requestId":"r1"}`)})
	if err != nil || answer.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer: %+v, %v; want it delivered", answer, err)
	}
	if _, err := c.SendMessage(ctx, id, client.Message{Type: "prompt", Payload: json.RawMessage(`{"text":"go on"}`)}); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	done := await(t, ctx, c, id, "completion", func(ex client.Execution) bool { return ex.Lifecycle.Final() })
	if done.Lifecycle != eventstore.LifecycleCompleted || done.Live.Running {
		t.Fatalf("final: %s, running %v; want completed and not running", done.Lifecycle, done.Live.Running)
	}

	list, err := c.List(ctx, client.ExecutionFilter{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1"})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list: %+v, %v; want %s alone", list, err, id)
	}

	// Records and the log page the same records.
	recs, next, err := c.Records(ctx, id, 0, 0)
	if err != nil || next != 0 || len(recs) < 4 {
		t.Fatalf("records: %d, next %d, %v; want the whole journal", len(recs), next, err)
	}
	page, next, err := c.Records(ctx, id, 2, 2)
	if err != nil || len(page) != 2 || next != 4 || page[0].RecordBase().Sequence != 2 {
		t.Fatalf("records from 2, 2 of them: %d, next %d, %v; want sequences 2 and 3, next 4", len(page), next, err)
	}
	entries, _, err := c.Log(ctx, 0, 1000)
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	var fromLog []string
	for _, e := range entries {
		if e.Record.RecordBase().AgentExecutionID == id {
			fromLog = append(fromLog, e.Record.RecordBase().RecordID)
		}
	}
	var fromJournal []string
	for _, r := range recs {
		fromJournal = append(fromJournal, r.RecordBase().RecordID)
	}
	if diff := cmp.Diff(fromJournal, fromLog); diff != "" {
		t.Errorf("the log's records of %s differ from its journal's (-journal +log):\n%s", id, diff)
	}

	rep, err := c.Replay(ctx, id, 1)
	if err != nil || rep.ToSeq != 1 || rep.State.Lifecycle != eventstore.LifecycleStarting || len(rep.Records) != 1 {
		t.Fatalf("replay to 1: %+v, %v; want the header alone, starting", rep, err)
	}

	items, _, err := c.Timeline(ctx, id, 0, 0)
	if err != nil || len(items) == 0 {
		t.Fatalf("timeline: %d items, %v; want some", len(items), err)
	}
	every, _, err := c.QueryTimeline(ctx, id, client.TimelineQuery{All: true})
	if err != nil || len(every) < len(items) {
		t.Fatalf("timeline with all: %d items, %v; want at least the %d of the default", len(every), err, len(items))
	}
	for _, it := range items {
		if it.Quiet() {
			t.Errorf("default timeline holds the quiet decision %q", it.Text)
		}
	}

	var lines []client.RebuildProgress
	last, err := c.Rebuild(ctx, func(p client.RebuildProgress) { lines = append(lines, p) })
	if err != nil || last.Executions == nil || *last.Executions != 1 || last.Total == 0 {
		t.Fatalf("rebuild: %+v, %v; want 1 execution", last, err)
	}
}

// TestAgents reads the agent catalog from a real daemon: every adapter, in
// the daemon's order, each with what its CLI does itself, and an agent
// of the catalog launches.
func TestAgents(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)
	agents, err := c.Agents(ctx)
	if err != nil {
		t.Fatalf("agents: %v", err)
	}
	var ids []string
	for _, a := range agents {
		ids = append(ids, a.ID)
	}
	if diff := cmp.Diff(runtime.Adapters(), ids); diff != "" {
		t.Errorf("agents (-adapters +catalog):\n%s", diff)
	}
	i := slices.IndexFunc(agents, func(a client.Agent) bool { return a.ID == "copilot-acp" })
	if i < 0 {
		t.Fatalf("the catalog has no copilot-acp: %v", ids)
	}
	if a := agents[i]; a.Protocol != client.ProtocolACP || !a.NativeResume || a.NativeFork {
		t.Errorf("copilot-acp: %+v, want protocol acp, native resume and no native fork", a)
	}
	res, err := c.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-agents", Agent: agents[0].ID,
		Command: []string{s.Agent, "exit:0"}})
	if err != nil {
		t.Fatalf("launch %s, the catalog's first agent: %v", agents[0].ID, err)
	}
	if got := res.State.AgentID; got != agents[0].ID {
		t.Errorf("launched agent %q, want %q", got, agents[0].ID)
	}
}

// TestClientErrors checks that the API's errors come back as *client.Error
// with their code, status and field, and match their sentinels.
func TestClientErrors(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)
	id := launch(t, ctx, s, c, "t-2", "say:hi").Reference.AgentExecutionID
	await(t, ctx, c, id, "completion", func(ex client.Execution) bool { return ex.Lifecycle.Final() })

	_, stopErr := c.Stop(ctx, id)
	_, readErr := c.Execution(ctx, "ae-nosuch")
	_, listErr := c.List(ctx, client.ExecutionFilter{Lifecycle: "sleeping"})
	_, tokenErr := client.New(s.HTTP.URL, "wrong").List(ctx, client.ExecutionFilter{})
	for _, tc := range []struct {
		name     string
		err      error
		sentinel error
		status   int
		code     string
		field    string
	}{
		{"stop a finished execution", stopErr, client.ErrConflict, http.StatusConflict, client.CodeConflict, ""},
		{"read an unknown execution", readErr, client.ErrNotFound, http.StatusNotFound, client.CodeNotFound, ""},
		{"list with a bad lifecycle", listErr, client.ErrInvalidField, http.StatusBadRequest, client.CodeInvalidField, "lifecycle"},
		{"a wrong token", tokenErr, client.ErrUnauthorized, http.StatusUnauthorized, client.CodeUnauthorized, ""},
	} {
		var e *client.Error
		if !errors.As(tc.err, &e) {
			t.Errorf("%s: got %v, want a *client.Error", tc.name, tc.err)
			continue
		}
		if !errors.Is(tc.err, tc.sentinel) || errors.Is(tc.err, client.ErrDamaged) {
			t.Errorf("%s: %v matches %v: %v, ErrDamaged: %v; want only the first", tc.name, tc.err, tc.sentinel, errors.Is(tc.err, tc.sentinel), errors.Is(tc.err, client.ErrDamaged))
		}
		if e.Status != tc.status || e.Code != tc.code || e.Field != tc.field || e.Message == "" || !client.HasCode(tc.err, tc.code) {
			t.Errorf("%s: got status %d code %q field %q message %q, want %d %q %q and a message", tc.name, e.Status, e.Code, e.Field, e.Message, tc.status, tc.code, tc.field)
		}
	}
}

// TestFollowResumes cuts the event stream's connections while Follow
// reads it: Follow reconnects after the last record it yielded, so every
// record's events arrive, none twice.
func TestFollowResumes(t *testing.T) {
	t.Parallel()
	s, direct := start(t)
	ctx := testContext(t)

	// A proxy whose connections the test cuts.
	target, err := url.Parse(s.HTTP.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	c := client.New(proxy.URL, apitest.Token)
	t.Cleanup(func() { c.Close() })

	const launches = 6
	var ids []string
	for i := range launches {
		ids = append(ids, launch(t, ctx, s, direct, "t-3", "say:"+strings.Repeat("x", i+1)).Reference.AgentExecutionID)
	}
	for _, id := range ids {
		await(t, ctx, direct, id, "completion", func(ex client.Execution) bool { return ex.Lifecycle.Final() })
	}
	h, err := direct.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}

	type key struct{ id, name string }
	seen := map[key]int{}
	cuts := 0
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for ev, err := range c.Follow(fctx, client.EventsOptions{Resume: true}) {
		if err != nil {
			var apiErr *client.Error
			if errors.As(err, &apiErr) {
				t.Fatalf("follow: %v", err)
			}
			continue // a cut: Follow reconnects
		}
		seen[key{ev.ID, ev.Name}]++
		off, err := ev.Offset()
		if err != nil {
			t.Fatalf("event %s %q: %v", ev.Name, ev.ID, err)
		}
		// Cut every connection after each fifth record.
		if ev.Name == client.EventDataChanged && off%5 == 0 && cuts < 4 {
			cuts++
			proxy.CloseClientConnections()
		}
		if ev.Name == client.EventDataChanged && off >= h.LastOffset {
			break
		}
	}
	if cuts == 0 {
		t.Fatalf("no connection was cut (log up to offset %d)", h.LastOffset)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("event %s at offset %s came %d times, want once", k.name, k.id, n)
		}
	}
	for off := uint64(1); off <= h.LastOffset; off++ {
		if seen[key{strconv.FormatUint(off, 10), client.EventDataChanged}] != 1 {
			t.Errorf("record at offset %d: no data.changed event (cuts: %d)", off, cuts)
		}
	}
}

// TestEventStream reads fields split by a comment line, CRLF lines and
// multi-line data.
func TestEventStream(t *testing.T) {
	t.Parallel()
	in := "id: 3\nevent: execution.started\n: heartbeat\ndata: {}\n\n" +
		"event: data.changed\r\ndata: a\r\ndata: b\r\n\r\n"
	s := client.NewEventStream(strings.NewReader(in))
	var got []client.Event
	for {
		ev, err := s.Next()
		if errors.Is(err, client.ErrStreamEnded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	want := []client.Event{
		{Comment: true, Text: "heartbeat"},
		{ID: "3", Name: "execution.started", Data: []byte("{}")},
		{ID: "3", Name: "data.changed", Data: []byte("a\nb")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
