package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

type summaries struct {
	Executions []projections.Summary `json:"executions"`
}

func TestExecutionLifecycle(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-life", "", "echo:1", "sleep:60s")
	id := l.Reference.AgentExecutionID
	if l.State.ID != id || l.State.Lifecycle != eventstore.LifecycleRunning || !l.State.Live.Running || l.Reference.JournalID == "" {
		t.Fatalf("launch answered %+v, want the reference and a running state", l)
	}

	var v view
	r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
	if v.ID != id || v.Lifecycle != eventstore.LifecycleRunning || !v.Live.Running || v.Live.TerminalID != "" {
		t.Fatalf("read %+v, want %s running with no terminal", v, id)
	}

	t.Run("list", func(t *testing.T) {
		other := r.launch(t, "t-other", "", "sleep:60s").Reference.AgentExecutionID
		cases := []struct {
			name, query string
			want        []string
		}{
			{"owner", "?owner=Task/t-life", []string{id}},
			{"owner entity", "?owner=Task", []string{id, other}},
			{"lifecycle", "?lifecycle=running&owner=Task/t-other", []string{other}},
			{"no match", "?lifecycle=completed", nil},
			{"limit", "?owner=Task&limit=1", []string{other}}, // newest update first
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var got summaries
				r.call(t, "GET", "/v1/executions"+c.query, nil, http.StatusOK, &got)
				var ids []string
				for _, s := range got.Executions {
					ids = append(ids, s.ID)
				}
				slices.Sort(ids)
				want := slices.Clone(c.want)
				slices.Sort(want)
				if !slices.Equal(ids, want) {
					t.Fatalf("got %v, want %v", ids, want)
				}
			})
		}
		r.fail(t, "GET", "/v1/executions?lifecycle=awaiting-input", nil, testToken, http.StatusBadRequest, "invalid_field", "lifecycle")
		r.fail(t, "GET", "/v1/executions?attention=bored", nil, testToken, http.StatusBadRequest, "invalid_field", "attention")
		r.fail(t, "GET", "/v1/executions?owner=Planet/x", nil, testToken, http.StatusBadRequest, "invalid_field", "owner")
		r.fail(t, "GET", "/v1/executions?limit=-1", nil, testToken, http.StatusBadRequest, "invalid_field", "limit")
		r.fail(t, "GET", "/v1/executions?color=red", nil, testToken, http.StatusBadRequest, "invalid_field", "color")
	})

	t.Run("message", func(t *testing.T) {
		msg := map[string]any{"messageId": "m-1", "type": "prompt", "payload": map[string]any{"text": "hello agent"}}
		var first, again runtime.MessageAck
		r.call(t, "POST", "/v1/executions/"+id+"/messages", msg, http.StatusOK, &first)
		if first.MessageID != "m-1" || first.Delivery != eventstore.DeliveryDelivered || first.Duplicate || first.Sequence == 0 {
			t.Fatalf("ack %+v, want m-1 delivered", first)
		}
		r.call(t, "POST", "/v1/executions/"+id+"/messages", msg, http.StatusOK, &again)
		want := first
		want.Duplicate = true
		if again != want {
			t.Fatalf("repeated message: ack %+v, want %+v", again, want)
		}
		var assigned runtime.MessageAck
		r.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "payload": map[string]any{"text": "more"}}, http.StatusOK, &assigned)
		if assigned.MessageID == "" || assigned.Sequence <= first.Sequence {
			t.Fatalf("ack %+v, want an assigned id after sequence %d", assigned, first.Sequence)
		}
		e := r.fail(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "dance"}, testToken, http.StatusBadRequest, "invalid_field", "type")
		if !strings.Contains(e.Error.Message, "prompt") {
			t.Errorf("message %q does not list the accepted types", e.Error.Message)
		}
		r.fail(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "source": "martian", "payload": map[string]any{"text": "x"}},
			testToken, http.StatusBadRequest, "invalid_field", "source")
		r.fail(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "mood": "happy"}, testToken, http.StatusBadRequest, "invalid_field", "mood")
		r.fail(t, "POST", "/v1/executions/ae-nope/messages", msg, testToken, http.StatusNotFound, "not_found", "")
	})

	t.Run("stop", func(t *testing.T) {
		var stopped view
		r.call(t, "POST", "/v1/executions/"+id+"/stop", nil, http.StatusOK, &stopped)
		if stopped.Lifecycle != eventstore.LifecycleCancelled || stopped.Live.Running {
			t.Fatalf("after stop: %+v, want cancelled and not running", stopped)
		}
		e := r.fail(t, "POST", "/v1/executions/"+id+"/stop", nil, testToken, http.StatusConflict, "conflict", "")
		if !strings.Contains(e.Error.Message, "cancelled") {
			t.Errorf("message %q does not say the execution is cancelled", e.Error.Message)
		}
		r.fail(t, "POST", "/v1/executions/ae-nope/stop", nil, testToken, http.StatusNotFound, "not_found", "")
	})

	t.Run("read unknown", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions/ae-nope", nil, testToken, http.StatusNotFound, "not_found", "")
	})
}

func TestLaunchValidation(t *testing.T) {
	r := newRig(t)
	base := func() map[string]any {
		return map[string]any{"ownerEntity": "Task", "ownerId": "t-1", "agent": "generic", "command": []string{r.agent, "exit:0"}}
	}
	with := func(k string, v any) map[string]any {
		b := base()
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	cases := []refusal{
		{"malformed", `{"ownerEntity":`, 400, "invalid_field", "(body)"},
		{"empty body", ``, 400, "invalid_field", "(body)"},
		{"not an object", `[1]`, 400, "invalid_field", "(body)"},
		{"trailing data", `{"ownerEntity":"Task"} {}`, 400, "invalid_field", "(body)"},
		{"unknown field", with("flavor", "mint"), 400, "invalid_field", "flavor"},
		{"owner entity", with("ownerEntity", "Planet"), 400, "invalid_field", "ownerEntity"},
		{"no owner id", with("ownerId", nil), 400, "invalid_field", "ownerId"},
		{"wrong type", with("ownerId", 7), 400, "invalid_field", "ownerId"},
		{"agent", with("agent", "hal"), 400, "invalid_field", "agent"},
		{"no command", with("command", nil), 400, "invalid_field", "command"},
		{"posture", with("posture", "slouch"), 400, "invalid_field", "posture"},
		{"relative dir", with("dir", "work"), 400, "invalid_field", "dir"},
		{"env", with("env", map[string]string{"A=B": "x"}), 400, "invalid_field", "env.A=B"},
		{"missing program", with("command", []string{"/nonexistent/agent"}), 400, "invalid_field", "command"},
		{"unknown shape", with("shape", "spiral"), 400, "invalid_field", "shape"},
		{"shape of the generic agent", with("shape", "one-shot"), 400, "invalid_field", "shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.fail(t, "POST", "/v1/executions", c.body, testToken, c.status, c.code, c.field)
		})
	}
	t.Run("seed names one execution", func(t *testing.T) {
		var l launched
		r.call(t, "POST", "/v1/executions", with("seed", "attempt-1"), http.StatusCreated, &l)
		want, _ := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-1", "attempt-1")
		if l.Reference.AgentExecutionID != want {
			t.Fatalf("id %s, want %s", l.Reference.AgentExecutionID, want)
		}
		r.fail(t, "POST", "/v1/executions", with("seed", "attempt-1"), testToken, http.StatusConflict, "conflict", "")
	})
}

// TestLaunchRuntimeRefusals: a launch the runtime or the fleet cannot
// carry out says what was wrong and what is accepted, naming the field
// at fault, instead of an internal error.
func TestLaunchRuntimeRefusals(t *testing.T) {
	r := newRig(t)
	// No agent CLI is found on this PATH, whatever the machine has
	// installed.
	t.Setenv("PATH", t.TempDir())
	notProgram := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notProgram, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noFormat := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(noFormat, []byte{0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	launch := func(extra map[string]any) map[string]any {
		b := map[string]any{"ownerEntity": "Task", "ownerId": "t-1", "agent": "generic", "command": []string{r.agent, "exit:0"}}
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	cases := []struct {
		refusal
		says     []string // what the message must say
		accepted string   // one value the accepted list must hold, if any
	}{
		{refusal{"agent CLI not installed", launch(map[string]any{"agent": "codex", "command": nil, "prompt": "hi"}), 400, "invalid_field", "agent"},
			[]string{"codex agent's CLI", "not installed", "launch another agent"}, "generic"},
		{refusal{"program not on PATH", launch(map[string]any{"command": []string{"no-such-program"}}), 400, "invalid_field", "command"},
			[]string{`"no-such-program"`, "not installed", "want the path of an executable file"}, ""},
		{refusal{"program not executable", launch(map[string]any{"command": []string{notProgram}}), 400, "invalid_field", "command"},
			[]string{"notes.txt", "permission denied"}, ""},
		{refusal{"program of no executable format", launch(map[string]any{"command": []string{noFormat}}), 400, "invalid_field", "command"},
			[]string{"blob", "not an executable format"}, ""},
		{refusal{"unknown environment profile", launch(map[string]any{"envProfile": "gpu"}), 400, "invalid_field", "envProfile"},
			[]string{"has no environment profile gpu"}, ""},
		{refusal{"unknown host", launch(map[string]any{"placement": map[string]any{"host": "h9"}}), 400, "invalid_field", "placement.host"},
			[]string{"no host is named h9"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := r.fail(t, "POST", "/v1/executions", c.body, testToken, c.status, c.code, c.field)
			for _, w := range c.says {
				if !strings.Contains(e.Error.Message, w) {
					t.Errorf("message %q does not say %q", e.Error.Message, w)
				}
			}
			if c.accepted != "" && !slices.Contains(e.Error.Accepted, c.accepted) {
				t.Errorf("accepted %v, want it to hold %q", e.Error.Accepted, c.accepted)
			}
		})
	}
	t.Run("unknown host lists the hosts", func(t *testing.T) {
		var hosts struct {
			Self string `json:"self"`
		}
		r.call(t, "GET", "/v1/hosts", nil, http.StatusOK, &hosts)
		e := r.fail(t, "POST", "/v1/executions", launch(map[string]any{"placement": map[string]any{"host": "h9"}}), testToken, 400, "invalid_field", "placement.host")
		if hosts.Self == "" || !slices.Contains(e.Error.Accepted, hosts.Self) {
			t.Errorf("accepted %v, want this host %q among them", e.Error.Accepted, hosts.Self)
		}
	})
}

// TestLaunchRefusedPromptRunsNothing: a prompt the journal refuses fails
// the launch before the agent starts; the journal says why.
func TestLaunchRefusedPromptRunsNothing(t *testing.T) {
	r := newRig(t, func(c *api.Config) { c.MaxBody = 4 << 20 })
	witness := filepath.Join(t.TempDir(), "ran")
	body := map[string]any{"ownerEntity": "Task", "ownerId": "t-big", "seed": "big", "agent": "generic",
		"command": []string{"/bin/sh", "-c", "touch " + witness}, "prompt": strings.Repeat("x", 3<<19)}
	r.fail(t, "POST", "/v1/executions", body, testToken, http.StatusRequestEntityTooLarge, "too_large", "")
	id, _ := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-big", "big")
	ref := r.lookup(t, id)
	var kinds []string
	for e, err := range r.store.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if sc, ok := e.Record.(*eventstore.StateChanged); ok {
			kinds = append(kinds, string(sc.Lifecycle))
			if sc.Lifecycle == eventstore.LifecycleFailed && !strings.Contains(sc.Reason, "prompt") {
				t.Errorf("failed for %q, want the prompt named", sc.Reason)
			}
		}
	}
	if !slices.Equal(kinds, []string{string(eventstore.LifecycleFailed)}) {
		t.Fatalf("lifecycle changes %v, want only failed: the agent must not start", kinds)
	}
	if _, err := os.Stat(witness); err == nil {
		t.Fatal("the agent ran")
	}
}

// TestAnswerWithoutRequestRefused: an answer must name the request it
// answers, or nothing could decide on it.
func TestAnswerWithoutRequestRefused(t *testing.T) {
	r := newRig(t)
	id := r.launch(t, "t-ans", "", "sleep:60s").Reference.AgentExecutionID
	ref := r.lookup(t, id)
	before := r.records(t, ref)
	r.fail(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "answer", "payload": map[string]any{"text": "yes"}},
		testToken, http.StatusBadRequest, "invalid_field", "payload")
	if after := r.records(t, ref); after != before {
		t.Fatalf("the journal went from %d to %d records: a refused answer must write nothing", before, after)
	}
}

// TestDamagedJournalNamed: reading a journal with records missing from
// the log answers what is damaged, not a bare internal error.
func TestDamagedJournalNamed(t *testing.T) {
	r := newRig(t)
	id := r.launch(t, "t-dmg", "", "sleep:60s").Reference.AgentExecutionID
	ref := r.lookup(t, id)
	fixtures.PublishPastTheEnd(t, r.bus, ref, ref.LastSequence+5)
	code, body := r.do(t, "GET", "/v1/executions/"+id+"/records", nil, testToken)
	if code != http.StatusInternalServerError || !strings.Contains(string(body), `"damaged"`) || !strings.Contains(string(body), ref.JournalID) {
		t.Fatalf("records of a damaged journal: %d %s, want 500 code damaged naming %s", code, body, ref.JournalID)
	}
}

type decisionAck struct {
	ObservationID string `json:"observationId"`
	Sequence      uint64 `json:"sequence"`
	Duplicate     bool   `json:"duplicate"`
	Decision      struct {
		DecisionID string                    `json:"decisionId"`
		Action     eventstore.DecisionAction `json:"action"`
		Reason     string                    `json:"reason"`
		Sequence   uint64                    `json:"sequence"`
	} `json:"decision"`
}

func TestRecordObservation(t *testing.T) {
	r := newRig(t)
	id := r.launch(t, "t-obs", "", "sleep:60s").Reference.AgentExecutionID
	path := "/v1/executions/" + id + "/observations"
	needsInput := `{"observationId":"o-1","source":"mcp","confidence":"high",
		"signal":{"type":"needs_input","payload":{"requestId":"r-1","question":"Which database?"}}}`

	var first decisionAck
	r.call(t, "POST", path, needsInput, http.StatusOK, &first)
	if first.Duplicate || first.Decision.Action != eventstore.ActionUpdateState || first.Decision.DecisionID == "" || first.Decision.Sequence <= first.Sequence {
		t.Fatalf("ack %+v, want an update-state decision after the observation", first)
	}
	// The decision's state change lands shortly after the decision.
	var v view
	eventually(t, 10*time.Second, "the execution awaits the operator", func() bool {
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		return v.Attention == eventstore.AttentionAwaitingOperator && v.CurrentInputRequestID == "r-1"
	})
	count := func() uint64 {
		ref, err := r.store.Head(context.Background(), v.Journal)
		if err != nil {
			t.Fatal(err)
		}
		return ref.RecordCount
	}
	before := count()

	var again decisionAck
	r.call(t, "POST", path, needsInput, http.StatusOK, &again)
	want := first
	want.Duplicate = true
	if again != want {
		t.Fatalf("repeated observation: %+v, want %+v", again, want)
	}
	if after := count(); after != before {
		t.Fatalf("the repeated observation appended %d records, want none", after-before)
	}

	t.Run("record only", func(t *testing.T) {
		var ack decisionAck
		r.call(t, "POST", path, map[string]any{"observationId": "o-2", "source": "daemon", "confidence": "low", "rawText": "something odd"}, http.StatusOK, &ack)
		if ack.Decision.Action != eventstore.ActionRecordOnly {
			t.Fatalf("decision %+v, want record-only", ack.Decision)
		}
	})

	obs := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"observationId": "o-bad", "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "s"}}}
		mod(m)
		return m
	}
	cases := []refusal{
		{"malformed", `{"observationId":"o-3",`, 400, "invalid_field", "(body)"},
		{"unknown field", obs(func(m map[string]any) { m["mood"] = "happy" }), 400, "invalid_field", "mood"},
		{"base field", obs(func(m map[string]any) { m["sequence"] = 9 }), 400, "invalid_field", "sequence"},
		{"bad source", obs(func(m map[string]any) { m["source"] = "radio" }), 400, "invalid_field", "source"},
		{"bad confidence", obs(func(m map[string]any) { m["confidence"] = "certain" }), 400, "invalid_field", "confidence"},
		{"wrong type", obs(func(m map[string]any) { m["rawText"] = 5 }), 400, "invalid_field", "rawText"},
		{"no observation id", obs(func(m map[string]any) { delete(m, "observationId") }), 400, "invalid_field", "observationId"},
		{"unknown signal", obs(func(m map[string]any) { m["signal"] = map[string]any{"type": "telepathy", "payload": map[string]any{}} }), 400, "invalid_field", "signal.type"},
		{"unknown payload field", obs(func(m map[string]any) {
			m["signal"] = map[string]any{"type": "progress", "payload": map[string]any{"summary": "s", "percent": 5}}
		}), 400, "invalid_field", "signal.payload.percent"},
		{"missing payload field", obs(func(m map[string]any) { m["signal"] = map[string]any{"type": "blocked", "payload": map[string]any{}} }), 400, "invalid_field", "signal.payload.reason"},
		{"no evidence", obs(func(m map[string]any) { delete(m, "signal") }), 400, "invalid_field", "signal"},
		{"too large", obs(func(m map[string]any) { m["rawText"] = strings.Repeat("x", 3<<20) }), 413, "too_large", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := r.fail(t, "POST", path, c.body, testToken, c.status, c.code, c.field)
			if c.field == "source" && !slices.Contains(e.Error.Accepted, "mcp") {
				t.Errorf("accepted %v, want the observation sources", e.Error.Accepted)
			}
		})
	}
	t.Run("unknown execution", func(t *testing.T) {
		r.fail(t, "POST", "/v1/executions/ae-nope/observations", needsInput, testToken, http.StatusNotFound, "not_found", "")
	})
}

func TestDecisionTimeout(t *testing.T) {
	r := startRig(t, false, func(c *api.Config) { c.DecisionWait = 300 * time.Millisecond })
	id := r.launch(t, "t-timeout", "", "sleep:60s").Reference.AgentExecutionID
	body := map[string]any{"observationId": "o-1", "source": "mcp", "confidence": "high", "rawText": "x"}
	for range 2 {
		e := r.fail(t, "POST", "/v1/executions/"+id+"/observations", body, testToken, http.StatusGatewayTimeout, "timeout", "")
		if !strings.Contains(e.Error.Message, "policy") {
			t.Errorf("message %q does not point at the policy subscriber", e.Error.Message)
		}
	}
}

func TestTerminal(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-term", eventstore.PostureStructuredInteractive, "echo:1", "sleep:60s")
	id := l.Reference.AgentExecutionID
	if l.State.Live.TerminalID == "" {
		t.Fatalf("launch answered %+v, want a terminal lane", l.State)
	}
	type termView struct {
		AgentExecutionID string `json:"agentExecutionId"`
		TerminalID       string `json:"terminalId"`
		Available        bool   `json:"available"`
		Snapshot         struct {
			ID     string `json:"id"`
			Cols   uint16 `json:"cols"`
			Rows   uint16 `json:"rows"`
			Recent string `json:"recent"`
		} `json:"snapshot"`
	}
	base := "/v1/executions/" + id + "/terminal"
	var opened, attached, read termView
	r.call(t, "POST", base, nil, http.StatusOK, &opened)
	if opened.TerminalID != l.State.Live.TerminalID || !opened.Available || opened.Snapshot.ID != opened.TerminalID {
		t.Fatalf("open: %+v, want the launch lane %s", opened, l.State.Live.TerminalID)
	}
	r.call(t, "POST", base+"/attach", map[string]any{"terminalId": opened.TerminalID}, http.StatusOK, &attached)
	if attached.TerminalID != opened.TerminalID {
		t.Fatalf("attach: %+v, want %s", attached, opened.TerminalID)
	}
	r.fail(t, "POST", base+"/attach", map[string]any{"terminalId": "term-nope"}, testToken, http.StatusNotFound, "not_found", "terminalId")
	r.fail(t, "POST", base+"/attach", map[string]any{}, testToken, http.StatusBadRequest, "invalid_field", "terminalId")

	events := r.subscribe(t, "?execution="+id, "", nil)
	var typed termView
	r.call(t, "POST", base+"/input", map[string]any{"data": "hello pty\r"}, http.StatusOK, &typed)
	got := events.until(t, 10*time.Second, func(e sseEvent) bool { return e.Name == "terminal" })
	last := got[len(got)-1]
	var data struct {
		ExecutionID string   `json:"executionId"`
		Terminal    termView `json:"terminal"`
	}
	if err := json.Unmarshal([]byte(last.Data), &data); err != nil || data.ExecutionID != id || data.Terminal.TerminalID != opened.TerminalID {
		t.Fatalf("terminal event %s: %v, want the lane of %s", last.Data, err, id)
	}
	eventually(t, 10*time.Second, "the agent echoes the input", func() bool {
		r.call(t, "GET", base, nil, http.StatusOK, &read)
		return strings.Contains(read.Snapshot.Recent, "echo: hello pty")
	})
	var resized termView
	r.call(t, "POST", base+"/input", map[string]any{"cols": 100, "rows": 30}, http.StatusOK, &resized)
	if resized.Snapshot.Cols != 100 || resized.Snapshot.Rows != 30 {
		t.Fatalf("after resize: %dx%d, want 100x30", resized.Snapshot.Cols, resized.Snapshot.Rows)
	}
	r.fail(t, "POST", base+"/input", map[string]any{}, testToken, http.StatusBadRequest, "invalid_field", "data")
	r.fail(t, "POST", base+"/input", map[string]any{"cols": 100}, testToken, http.StatusBadRequest, "invalid_field", "rows")
	r.fail(t, "POST", base+"/input", map[string]any{"cols": 70000, "rows": 1}, testToken, http.StatusBadRequest, "invalid_field", "cols")

	// The raw input never became a journal record.
	var recs struct {
		Records []json.RawMessage `json:"records"`
	}
	r.call(t, "GET", "/v1/executions/"+id+"/records?limit=1000", nil, http.StatusOK, &recs)
	for _, rec := range recs.Records {
		if strings.Contains(string(rec), "hello pty") {
			t.Fatalf("the journal holds the raw terminal input: %s", rec)
		}
	}

	t.Run("headless execution", func(t *testing.T) {
		other := r.launch(t, "t-term", "", "sleep:60s").Reference.AgentExecutionID
		e := r.fail(t, "POST", "/v1/executions/"+other+"/terminal", nil, testToken, http.StatusConflict, "conflict", "")
		if !strings.Contains(e.Error.Message, "structured-interactive") {
			t.Errorf("message %q does not say which posture has a lane", e.Error.Message)
		}
		var none termView
		r.call(t, "GET", "/v1/executions/"+other+"/terminal", nil, http.StatusOK, &none)
		if none.Available || none.TerminalID != "" {
			t.Fatalf("read of a headless execution's terminal: %+v, want unavailable", none)
		}
		r.fail(t, "POST", "/v1/executions/"+other+"/terminal/input", map[string]any{"data": "x"}, testToken, http.StatusConflict, "conflict", "")
		r.fail(t, "POST", "/v1/executions/"+other+"/terminal/attach", map[string]any{"terminalId": opened.TerminalID}, testToken, http.StatusConflict, "conflict", "")
		r.fail(t, "GET", "/v1/executions/ae-nope/terminal", nil, testToken, http.StatusNotFound, "not_found", "")
	})
}

func TestPaging(t *testing.T) {
	r := newRig(t)
	steps := []string{}
	for _, s := range []string{"one", "two", "three"} {
		steps = append(steps, `signal:{"type":"progress","payload":{"summary":"`+s+`"}}`)
	}
	id := r.launch(t, "t-page", "", steps...).Reference.AgentExecutionID
	var v struct {
		view
		Decisions map[string]any `json:"decisions"`
	}
	eventually(t, 20*time.Second, "the agent completes and every observation is decided", func() bool {
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		return v.Lifecycle == eventstore.LifecycleCompleted && len(v.Decisions) == 3
	})
	// The decisions' own records follow them: wait for the journal to
	// stop growing.
	v.Journal = r.quiet(t, v.Journal)

	t.Run("timeline", func(t *testing.T) {
		var all struct {
			Items []execution.TimelineItem `json:"items"`
			Next  *uint64                  `json:"next"`
		}
		r.call(t, "GET", "/v1/executions/"+id+"/timeline?limit=1000", nil, http.StatusOK, &all)
		if len(all.Items) < 4 || all.Next != nil {
			t.Fatalf("whole timeline: %d items, next %v; want several and no next page", len(all.Items), all.Next)
		}
		// The progress signals' record-only decisions change nothing: only
		// all=true shows them.
		var every struct {
			Items []execution.TimelineItem `json:"items"`
		}
		r.call(t, "GET", "/v1/executions/"+id+"/timeline?limit=1000&all=true", nil, http.StatusOK, &every)
		quiet := 0
		for _, it := range every.Items {
			if it.Quiet() {
				quiet++
			}
		}
		for _, it := range all.Items {
			if it.Quiet() {
				t.Errorf("default timeline holds the quiet decision %q", it.Text)
			}
		}
		if quiet != 3 || len(every.Items) != len(all.Items)+quiet {
			t.Errorf("all=true: %d items, %d quiet; want the %d of the default and 3 quiet", len(every.Items), quiet, len(all.Items))
		}
		r.fail(t, "GET", "/v1/executions/"+id+"/timeline?all=yes", nil, testToken, http.StatusBadRequest, "invalid_field", "all")
		var paged []execution.TimelineItem
		query := "?limit=2"
		for pages := 0; ; pages++ {
			var page struct {
				Items []execution.TimelineItem `json:"items"`
				Next  *uint64                  `json:"next"`
			}
			r.call(t, "GET", "/v1/executions/"+id+"/timeline"+query, nil, http.StatusOK, &page)
			paged = append(paged, page.Items...)
			if page.Next == nil {
				break
			}
			if pages > 100 {
				t.Fatal("the timeline does not end")
			}
			query = "?limit=2&before=" + jsonNum(*page.Next)
		}
		if len(paged) != len(all.Items) {
			t.Fatalf("paged %d items, want %d", len(paged), len(all.Items))
		}
		for i := range paged {
			if paged[i].ID != all.Items[i].ID {
				t.Fatalf("item %d is %s, want %s", i, paged[i].ID, all.Items[i].ID)
			}
		}
		r.fail(t, "GET", "/v1/executions/"+id+"/timeline?limit=0", nil, testToken, http.StatusBadRequest, "invalid_field", "limit")
		r.fail(t, "GET", "/v1/executions/"+id+"/timeline?before=x", nil, testToken, http.StatusBadRequest, "invalid_field", "before")
		r.fail(t, "GET", "/v1/executions/ae-nope/timeline", nil, testToken, http.StatusNotFound, "not_found", "")
	})

	t.Run("records", func(t *testing.T) {
		var seqs []uint64
		query := "?limit=2"
		for {
			var page struct {
				Records []json.RawMessage `json:"records"`
				Next    *uint64           `json:"next"`
			}
			r.call(t, "GET", "/v1/executions/"+id+"/records"+query, nil, http.StatusOK, &page)
			for _, raw := range page.Records {
				rec, err := eventstore.Decode(raw)
				if err != nil {
					t.Fatalf("record %s does not decode: %v", raw, err)
				}
				seqs = append(seqs, rec.RecordBase().Sequence)
			}
			if page.Next == nil {
				break
			}
			if len(page.Records) != 2 {
				t.Fatalf("a page before the last has %d records, want 2", len(page.Records))
			}
			query = "?limit=2&fromSeq=" + jsonNum(*page.Next)
		}
		for i, s := range seqs {
			if s != uint64(i+1) {
				t.Fatalf("sequences %v, want 1, 2, 3 …", seqs)
			}
		}
		if uint64(len(seqs)) != v.Journal.RecordCount {
			t.Fatalf("paged %d records, the journal has %d", len(seqs), v.Journal.RecordCount)
		}
		r.fail(t, "GET", "/v1/executions/"+id+"/records?fromSeq=0", nil, testToken, http.StatusBadRequest, "invalid_field", "fromSeq")
		r.fail(t, "GET", "/v1/executions/ae-nope/records", nil, testToken, http.StatusNotFound, "not_found", "")
	})

	t.Run("log", func(t *testing.T) {
		last, err := r.store.LastOffset(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var offsets []uint64
		query := "?limit=3"
		for pages := 0; ; pages++ {
			var page struct {
				Entries []struct {
					Offset uint64          `json:"offset"`
					Record json.RawMessage `json:"record"`
				} `json:"entries"`
				Next *uint64 `json:"next"`
			}
			r.call(t, "GET", "/v1/log"+query, nil, http.StatusOK, &page)
			for _, e := range page.Entries {
				if _, err := eventstore.Decode(e.Record); err != nil {
					t.Fatalf("record at %d does not decode: %v", e.Offset, err)
				}
				offsets = append(offsets, e.Offset)
			}
			if page.Next == nil {
				break
			}
			if pages > 1000 {
				t.Fatal("the log does not end")
			}
			query = "?limit=3&fromOffset=" + jsonNum(*page.Next)
		}
		if uint64(len(offsets)) < last {
			t.Fatalf("paged %d entries, the log has %d", len(offsets), last)
		}
		for i, o := range offsets {
			if o != uint64(i+1) {
				t.Fatalf("offsets %v, want 1, 2, 3 …", offsets)
			}
		}
		r.fail(t, "GET", "/v1/log?limit=1001", nil, testToken, http.StatusBadRequest, "invalid_field", "limit")
	})
}

func jsonNum(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHealthAndMetrics(t *testing.T) {
	r := newRig(t)
	r.launch(t, "t-metrics", "", "exit:0")
	var h struct {
		Status     string `json:"status"`
		Checkpoint uint64 `json:"checkpoint"`
		LastOffset uint64 `json:"lastOffset"`
		Lag        uint64 `json:"lag"`
	}
	eventually(t, 10*time.Second, "the projection catches up", func() bool {
		code, body := r.do(t, "GET", "/healthz", nil, testToken)
		if code != http.StatusOK {
			t.Fatalf("GET /healthz: %d %s", code, body)
		}
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		return h.LastOffset > 0 && h.Lag == 0 && h.Checkpoint == h.LastOffset
	})
	if h.Status != "ok" {
		t.Fatalf("health %+v, want ok", h)
	}
	r.fail(t, "GET", "/metrics", nil, "", http.StatusUnauthorized, "unauthorized", "")
	code, body := r.do(t, "GET", "/metrics", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for _, want := range []string{
		`agentjournal_http_requests_total{route="POST /v1/executions",code="201"} 1`,
		`agentjournal_http_request_duration_seconds_bucket{route="GET /healthz",le="+Inf"}`,
		`agentjournal_http_request_duration_seconds_count{route="GET /healthz"}`,
		"agentjournal_projection_lag_records ",
		`agentjournal_executions{lifecycle="running"} `,
		"agentjournal_sse_subscribers 0",
		"# TYPE agentjournal_http_request_duration_seconds histogram",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestRoutingErrors(t *testing.T) {
	r := newRig(t)
	r.fail(t, "GET", "/v1/nothing", nil, testToken, http.StatusNotFound, "not_found", "")
	r.fail(t, "DELETE", "/v1/executions", nil, testToken, http.StatusMethodNotAllowed, "method_not_allowed", "")
	r.fail(t, "PUT", "/v1/executions/x/stop", nil, testToken, http.StatusMethodNotAllowed, "method_not_allowed", "")
	r.fail(t, "GET", "/mcp", nil, testToken, http.StatusNotFound, "not_found", "")
	resp, _ := r.send(t, "DELETE", "/v1/executions", nil, map[string]string{"Authorization": "Bearer " + testToken})
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q, want GET and POST", allow)
	}
}

func TestMCPMount(t *testing.T) {
	var gotScope string
	var mcp http.HandlerFunc
	r := newRig(t, func(c *api.Config) {
		c.MCP = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { mcp(w, req) })
	})
	mcp = func(w http.ResponseWriter, req *http.Request) {
		tok := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		gotScope, _ = r.srv.CheckScopedToken(tok)
		if _, ok := w.(http.Flusher); !ok {
			t.Error("the MCP handler's writer is no http.Flusher: it could not stream")
		}
		w.WriteHeader(http.StatusAccepted)
	}
	if code, _ := r.do(t, "POST", "/mcp", "{}", r.srv.ScopedToken("ae-1")); code != http.StatusAccepted || gotScope != "ae-1" {
		t.Fatalf("POST /mcp with a scoped token: %d, scope %q; want 202 from the MCP handler, scope ae-1", code, gotScope)
	}
	// The operator's token names no execution to signal: it is told which
	// token MCP takes, in the API's error shape.
	gotScope = "not called"
	e := r.fail(t, "POST", "/mcp", "{}", testToken, http.StatusForbidden, "forbidden", "")
	if !strings.Contains(e.Error.Message, "AGENTJOURNAL_TOKEN") || gotScope != "not called" {
		t.Errorf("POST /mcp with the API token: %q (MCP handler saw scope %q); want the token MCP takes named, and the handler not reached", e.Error.Message, gotScope)
	}
	r.fail(t, "POST", "/mcp", "{}", "", http.StatusUnauthorized, "unauthorized", "")
}

// /healthz shows the daemon's share of the policy's partitions when it has
// one, and nothing of them when it does not.
func TestHealthShowsThePolicyShare(t *testing.T) {
	share := api.PolicyShare{Member: "node-a", Partitions: []int{1, 4}, Of: 6}
	r := newRig(t, func(c *api.Config) { c.PolicyShare = func() api.PolicyShare { return share } })
	code, body := r.do(t, "GET", "/healthz", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("GET /healthz: %d %s", code, body)
	}
	var h struct {
		Policy *api.PolicyShare `json:"policy"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	if h.Policy == nil || h.Policy.Member != share.Member || !slices.Equal(h.Policy.Partitions, share.Partitions) || h.Policy.Of != share.Of {
		t.Errorf("health's policy is %+v, want %+v", h.Policy, share)
	}
	// A daemon waiting for its partitions says it decides on none, as a list.
	share = api.PolicyShare{Member: "node-a", Of: 6}
	if _, body = r.do(t, "GET", "/healthz", nil, testToken); !strings.Contains(string(body), `"policy":{"member":"node-a","partitions":[],"of":6}`) {
		t.Errorf("health with no partitions: %s", body)
	}

	plain := newRig(t)
	if _, body = plain.do(t, "GET", "/healthz", nil, testToken); strings.Contains(string(body), `"policy"`) {
		t.Errorf("health of a daemon not sharing partitions: %s, want no policy", body)
	}
}
