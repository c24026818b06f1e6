package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestNarrativeRoutes: the narrative of a run in each format, with its
// content type, each answer valid against openapi.yaml; the session route
// tells the same run; unknown ids and formats are refused in the error
// shape.
func TestNarrativeRoutes(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	id := launchRun(t, ctx, c, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-n", Agent: "generic",
		Prompt: "say <b>hi</b>", Command: []string{s.Agent, "ask:r1:Proceed?", `signal:{"type":"completed_claim","payload":{"summary":"done"}}`}})
	waitAsked(t, ctx, c, id, "r1")
	if _, err := c.SendMessage(ctx, id, client.Message{Type: "answer", Payload: json.RawMessage(`{"text":"yes","requestId":"r1"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFinal(t, ctx, c, id, "never ended")

	v := servedValidator(t, s.HTTP.URL)
	get := func(path string) (int, string, string) {
		t.Helper()
		return validatedGet(t, v, s.HTTP.URL, path)
	}
	base := "/v1/executions/" + id + "/narrative"
	for _, tc := range []struct{ query, ctype, has string }{
		{"", "text/markdown; charset=utf-8", "# Narrative of execution " + id},
		{"?format=md", "text/markdown; charset=utf-8", "asked: Proceed?; operator answered: yes"},
		{"?format=md&audit=true", "text/markdown; charset=utf-8", "operator answered r1"},
		{"?format=html", "text/html; charset=utf-8", "say &lt;b&gt;hi&lt;/b&gt;"},
		{"?format=html&audit=true", "text/html; charset=utf-8", `<span class="marker">observed</span>`},
		{"?format=json", "application/json", `"marker": "inferred"`},
	} {
		code, ctype, body := get(base + tc.query)
		if code != 200 || ctype != tc.ctype || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s%s: %d %s, want 200 %s with %q:\n%s", base, tc.query, code, ctype, tc.ctype, tc.has, body)
		}
	}
	n, err := c.Narrative(ctx, id, true)
	if err != nil || n.Subject != "session" || n.SessionID != id || len(n.Runs) != 1 || n.Runs[0].Lifecycle != "completed" {
		t.Fatalf("session narrative through the client: %+v, %v; want the one completed run", n, err)
	}
	var page bytes.Buffer
	if err := c.NarrativeDocument(ctx, &page, id, false, "html", false); err != nil || !strings.HasPrefix(page.String(), "<!DOCTYPE html>") {
		t.Errorf("html through the client: %v %.100s", err, page.String())
	}
	page.Reset()
	if err := c.NarrativeDocument(ctx, &page, id, false, "md", true); err != nil || !strings.Contains(page.String(), "**observed**") {
		t.Errorf("audit through the client: %v %.300s", err, page.String())
	}
	if code, _, body := get("/v1/sessions/" + id + "/narrative?format=json"); code != 200 || !strings.Contains(body, `"subject": "session"`) {
		t.Errorf("session route: %d %s", code, body)
	}
	if code, _, _ := get(base + "?format=pdf"); code != 400 {
		t.Errorf("format pdf: %d, want 400", code)
	}
	if code, _, body := get(base + "?audit=yes"); code != 400 || !strings.Contains(body, "audit") {
		t.Errorf("audit=yes: %d %s, want 400 naming audit", code, body)
	}
	if code, _, _ := get("/v1/executions/ae-nosuch/narrative"); code != 404 {
		t.Errorf("unknown execution: %d, want 404", code)
	}
	if code, _, _ := get("/v1/sessions/ae-nosuch/narrative"); code != 404 {
		t.Errorf("unknown session: %d, want 404", code)
	}
	if _, err := c.Narrative(ctx, "ae-nosuch", false); err == nil {
		t.Error("client: unknown execution answered")
	}
}
