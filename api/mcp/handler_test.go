package mcp

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestListTools(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, tokenA, nil)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		typ := eventstore.SignalType(strings.TrimPrefix(tool.Name, ToolPrefix))
		spec, ok := eventstore.LookupSignal(typ)
		if !ok || !spec.Surfaced {
			t.Errorf("tool %s: no surfaced signal type %q", tool.Name, typ)
			continue
		}
		if tool.Description != spec.Description {
			t.Errorf("tool %s: description %q, want %q", tool.Name, tool.Description, spec.Description)
		}
		got, want := jsonValue(t, tool.InputSchema), jsonValue(t, spec.Schema())
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tool %s: input schema (-registry +listed):\n%s", tool.Name, diff)
		}
		if r := got.(map[string]any)["required"]; !cmp.Equal(r, want.(map[string]any)["required"]) || r == nil {
			t.Errorf("tool %s: required %v, want %v", tool.Name, r, want.(map[string]any)["required"])
		}
	}
	want := []string{"signal_progress", "signal_status", "signal_needs_input", "signal_blocked",
		"signal_ready_for_verification", "signal_completed_claim", "signal_failed_claim", "signal_message", "signal_plan", "signal_checkpoint"}
	if !slices.Equal(Tools(), want) {
		t.Errorf("Tools() = %v, want %v", Tools(), want)
	}
	// The SDK lists tools by name.
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
}

func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCallEveryTool(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		opts *sdk.ClientSessionOptions
	}{
		{"latest protocol", nil},
		{"protocol 2025-06-18", &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, e.url, tokenA, tc.opts)
			for _, p := range surfaced {
				before := len(e.observations(t, execA))
				res, txt := call(t, cs, &sdk.CallToolParams{Name: ToolName(p.SignalType()), Arguments: args(t, p)})
				r := result(t, res)
				obs := e.observations(t, execA)
				if len(obs) != before+1 {
					t.Fatalf("%s: %d observations after the call, want %d", p.SignalType(), len(obs), before+1)
				}
				o := obs[len(obs)-1]
				if o.ObservationID != r.ObservationID || !strings.HasPrefix(o.ObservationID, "mcp-") {
					t.Errorf("%s: recorded observation %q, result names %q (want an mcp- id)", p.SignalType(), o.ObservationID, r.ObservationID)
				}
				if o.Source != eventstore.ObservedMCP || o.Confidence != eventstore.ConfidenceAuthoritative || o.RawText != "" {
					t.Errorf("%s: source %s confidence %s rawText %q, want mcp authoritative and none", p.SignalType(), o.Source, o.Confidence, o.RawText)
				}
				if diff := cmp.Diff(eventstore.NewSignal(p), o.Signal); diff != "" {
					t.Errorf("%s: signal (-sent +recorded):\n%s", p.SignalType(), diff)
				}
				if r.Decision.Action == "" || r.Decision.DecisionID == "" || r.Decision.Duplicate {
					t.Errorf("%s: decision %+v, want a new decision", p.SignalType(), r.Decision)
				}
				want := "recorded observation " + r.ObservationID + ": decision " + r.Decision.Action + " (" + r.Decision.Reason + ")"
				if txt != want {
					t.Errorf("%s: text %q, want %q", p.SignalType(), txt, want)
				}
			}
			if n := len(e.observations(t, execB)); n != 0 {
				t.Errorf("execution B has %d observations, want 0", n)
			}
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, tokenA, nil)
	for _, tc := range []struct {
		name      string
		tool      string
		args      any
		wantField string
		wantText  string
	}{
		{"missing required field", "signal_progress", map[string]any{"detail": "d"}, "summary", "required"},
		{"no arguments", "signal_needs_input", nil, "requestId", "required"},
		{"missing second required field", "signal_needs_input", map[string]any{"requestId": "q1"}, "question", "required"},
		{"empty required string", "signal_blocked", map[string]any{"reason": ""}, "reason", "required"},
		{"unknown field", "signal_status", map[string]any{"summary": "s", "bogus": 1}, "bogus", "unknown field (want one of: phase, summary)"},
		{"unknown nested field", "signal_progress", map[string]any{"summary": "s", "units": map[string]any{"done": 1}}, "units.done", "unknown field (want one of: completed, total, unit)"},
		{"another execution named", "signal_message", map[string]any{"text": "hi", "agentExecutionId": execB}, "agentExecutionId", "unknown field"},
		{"wrong type", "signal_progress", map[string]any{"summary": 5}, "summary", "want string"},
		{"wrong nested type", "signal_progress", map[string]any{"summary": "s", "units": map[string]any{"completed": "3"}}, "units.completed", "want a whole number"},
		{"negative count", "signal_progress", map[string]any{"summary": "s", "units": map[string]any{"total": -1}}, "units.total", "negative"},
		{"value not accepted", "signal_message", map[string]any{"text": "hi", "format": "html"}, "format", "plain, markdown"},
		{"array for list item", "signal_completed_claim", map[string]any{"summary": "s", "evidence": "a.go"}, "evidence", "want array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, txt := call(t, cs, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if !res.IsError {
				t.Fatalf("got success %q, want a tool error", txt)
			}
			if !strings.Contains(txt, `field "`+tc.wantField+`"`) || !strings.Contains(txt, tc.wantText) {
				t.Errorf("error %q, want it to name field %q and say %q", txt, tc.wantField, tc.wantText)
			}
			if !strings.Contains(txt, "invalid arguments for "+tc.tool+": ") || !strings.Contains(txt, "; accepted arguments: ") {
				t.Errorf("error %q, want the accepted arguments", txt)
			}
		})
	}
	for _, id := range []string{execA, execB} {
		if recs := e.records(t, id); len(recs) != 1 {
			t.Errorf("execution %s has %d records, want only its header", id, len(recs))
		}
	}
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"signal_message","arguments":{"text":"hi"}}}`
	for _, tc := range []struct {
		name, header string
	}{
		{"no header", ""},
		{"bad token", "Bearer nope"},
		{"not bearer", "Basic " + tokenA},
		{"empty bearer", "Bearer "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var answer struct {
				Error struct {
					Code, Message string
				}
			}
			decodeErr := json.NewDecoder(resp.Body).Decode(&answer)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("got %s (WWW-Authenticate %q), want 401 with a Bearer challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
			}
			if decodeErr != nil || answer.Error.Code != "unauthorized" || answer.Error.Message == "" {
				t.Errorf("answer %+v (%v), want the API's error shape with code unauthorized", answer, decodeErr)
			}
		})
	}
	t.Run("sdk client with a bad token", func(t *testing.T) {
		if cs, err := dial(t.Context(), e.url, "nope", nil); err == nil {
			cs.Close()
			t.Fatal("connected with a bad token, want an error")
		}
	})
	for _, id := range []string{execA, execB} {
		if recs := e.records(t, id); len(recs) != 1 {
			t.Errorf("execution %s has %d records, want only its header", id, len(recs))
		}
	}
}

// TestTokenScopesExecution: the token decides the journal. A's token
// records into A and nothing a call can say reaches B.
func TestTokenScopesExecution(t *testing.T) {
	e := newEnv(t)
	csA := connect(t, e.url, tokenA, nil)
	r := result(t, first(call(t, csA, &sdk.CallToolParams{Name: "signal_message", Arguments: map[string]any{"text": "from A"}})))
	// Metadata is not an address either.
	result(t, first(call(t, csA, &sdk.CallToolParams{Name: "signal_message", Arguments: map[string]any{"text": "also from A"},
		Meta: sdk.Meta{"agentExecutionId": execB}})))
	obsA := e.observations(t, execA)
	if len(obsA) != 2 || obsA[0].ObservationID != r.ObservationID {
		t.Fatalf("A has %d observations, want the 2 sent with A's token", len(obsA))
	}
	for _, o := range obsA {
		if o.AgentExecutionID != execA {
			t.Errorf("observation %s is of %s, want %s", o.ObservationID, o.AgentExecutionID, execA)
		}
	}
	if recs := e.records(t, execB); len(recs) != 1 {
		t.Errorf("B has %d records, want only its header", len(recs))
	}

	csB := connect(t, e.url, tokenB, nil)
	result(t, first(call(t, csB, &sdk.CallToolParams{Name: "signal_message", Arguments: map[string]any{"text": "from B"}})))
	if obs := e.observations(t, execB); len(obs) != 1 || obs[0].Signal.Payload.(*eventstore.MessageSignal).Text != "from B" {
		t.Errorf("B's observations %v, want the one sent with B's token", obs)
	}
	if n := len(e.observations(t, execA)); n != 2 {
		t.Errorf("A has %d observations after B's call, want 2", n)
	}
}

func first(res *sdk.CallToolResult, _ string) *sdk.CallToolResult { return res }

// TestObservationIDs: a client's call id makes a retry a duplicate; without
// one every call is a new observation, even with the same arguments.
func TestObservationIDs(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.url, tokenA, nil)
	progress := map[string]any{"summary": "compiling"}

	a := result(t, first(call(t, cs, &sdk.CallToolParams{Name: "signal_progress", Arguments: progress})))
	b := result(t, first(call(t, cs, &sdk.CallToolParams{Name: "signal_progress", Arguments: progress})))
	if a.ObservationID == b.ObservationID {
		t.Errorf("two calls without a call id share observation id %s, want two", a.ObservationID)
	}

	meta := sdk.Meta{MetaCallID: "call-7"}
	c1, txt1 := call(t, cs, &sdk.CallToolParams{Name: "signal_needs_input", Meta: meta,
		Arguments: map[string]any{"requestId": "q9", "question": "Which branch?"}})
	c2, txt2 := call(t, cs, &sdk.CallToolParams{Name: "signal_needs_input", Meta: meta,
		Arguments: map[string]any{"requestId": "q9", "question": "Which branch?"}})
	r1, r2 := result(t, c1), result(t, c2)
	if r1.ObservationID != r2.ObservationID || r1.Decision.Duplicate || !r2.Decision.Duplicate {
		t.Errorf("retry with one call id: %+v then %+v, want the same id, the second a duplicate", r1, r2)
	}
	if r1.Decision.DecisionID != r2.Decision.DecisionID || r1.Decision.Action != r2.Decision.Action {
		t.Errorf("retry decision %+v, want the first one %+v", r2.Decision, r1.Decision)
	}
	if !strings.HasPrefix(txt1, "recorded observation ") || !strings.Contains(txt2, "was recorded before") {
		t.Errorf("texts %q and %q, want recorded then recorded before", txt1, txt2)
	}
	if n := len(e.observations(t, execA)); n != 3 {
		t.Errorf("A has %d observations, want 3", n)
	}

	res, txt := call(t, cs, &sdk.CallToolParams{Name: "signal_progress", Arguments: progress, Meta: sdk.Meta{MetaCallID: 12}})
	if !res.IsError || !strings.Contains(txt, MetaCallID) {
		t.Errorf("call id 12: %q, want a tool error naming %s", txt, MetaCallID)
	}
}
