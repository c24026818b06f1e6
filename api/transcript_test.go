package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestTranscriptRoute: the transcript of a run that asks a question and is
// answered, in each format, with its content type, each answer valid
// against openapi.yaml; the client reads the same; unknown ids and formats
// are refused in the error shape.
func TestTranscriptRoute(t *testing.T) {
	t.Parallel()
	s, c, ctx := startClient(t, apitest.Options{})
	id := launchRun(t, ctx, c, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-tr", Agent: "generic",
		Prompt: "pick one", Command: []string{s.Agent, "ask:r1:Proceed?", `signal:{"type":"message","payload":{"text":"**Done** now","format":"markdown"}}`}})
	waitAsked(t, ctx, c, id, "r1")
	if _, err := c.SendMessage(ctx, id, client.Message{Type: "answer", Payload: json.RawMessage(`{"text":"yes","requestId":"r1"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFinal(t, ctx, c, id, "never ended")

	v := servedValidator(t, s.HTTP.URL)
	base := "/v1/executions/" + id + "/transcript"
	for _, tc := range []struct{ query, ctype, has string }{
		{"", "application/json", `"kind":"question"`},
		{"?format=json", "application/json", `"kind":"answer"`},
		{"?format=text", "text/plain; charset=utf-8", "↳ answer from operator: yes\n"},
		{"?format=markdown", "text/markdown; charset=utf-8", "**Answer** from operator:\n\n> yes\n"},
	} {
		code, ctype, body := validatedGet(t, v, s.HTTP.URL, base+tc.query)
		if code != 200 || ctype != tc.ctype || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s%s: %d %s, want 200 %s with %q:\n%s", base, tc.query, code, ctype, tc.ctype, tc.has, body)
		}
	}
	tr, err := c.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range tr.Entries {
		kinds = append(kinds, string(e.Kind))
	}
	if tr.AgentExecutionID != id || strings.Join(kinds, " ") != "prompt question answer message end" {
		t.Errorf("transcript through the client: %s with kinds %q, want %s with prompt question answer message end", tr.AgentExecutionID, kinds, id)
	}
	if last := tr.Entries[len(tr.Entries)-1]; last.Kind != wire.TranscriptEnd || last.End.Lifecycle != eventstore.LifecycleCompleted {
		t.Errorf("last entry %+v, want the completed end", last)
	}
	var doc bytes.Buffer
	if err := c.TranscriptDocument(ctx, &doc, id, "text"); err != nil || !strings.HasPrefix(doc.String(), "▶ operator: pick one\n") {
		t.Errorf("text through the client: %v\n%s", err, doc.String())
	}
	if code, _, _ := validatedGet(t, v, s.HTTP.URL, base+"?format=html"); code != 400 {
		t.Errorf("format html: %d, want 400", code)
	}
	if code, _, _ := validatedGet(t, v, s.HTTP.URL, "/v1/executions/ae-nosuch/transcript"); code != 404 {
		t.Errorf("unknown execution: %d, want 404", code)
	}
}
