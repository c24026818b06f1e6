package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestLaunchTimeoutRefused: a timeout that is not a duration, or is out of
// range, is refused naming the field and what it accepts.
func TestLaunchTimeoutRefused(t *testing.T) {
	r := newRig(t)
	for _, v := range []any{"yesterday", "-1s", "30d", "0s", "169h", 90} {
		body := map[string]any{"ownerEntity": "Task", "ownerId": "t-1", "agent": "generic", "command": []string{r.agent, "exit:0"}, "timeout": v}
		e := r.fail(t, "POST", "/v1/executions", body, testToken, http.StatusBadRequest, "invalid_field", "timeout")
		if _, ok := v.(string); ok && (!strings.Contains(e.Error.Message, "90s") || !strings.Contains(e.Error.Message, "at most 168h")) {
			t.Errorf("timeout %v: %q, want what is accepted: a duration such as 90s, at most 168h", v, e.Error.Message)
		}
	}
}

// TestLaunchTimeoutEndsTheRun: a launch through the client with a timeout
// is a request the API document accepts, its header keeps the limit, and
// the run ends interrupted by it.
func TestLaunchTimeoutEndsTheRun(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	req := client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-timeout", Agent: "generic",
		Command: []string{s.Agent, "sleep:60s"}, Timeout: "300ms"}

	// The document the server serves accepts the request.
	v := servedValidator(t, s.HTTP.URL)
	body, _ := json.Marshal(req)
	hreq, _ := http.NewRequest("POST", s.HTTP.URL+"/v1/executions", bytes.NewReader(body))
	hreq.Header.Set("Authorization", "Bearer "+apitest.Token)
	hreq.Header.Set("Content-Type", "application/json")
	if ok, errs := v.ValidateHttpRequest(hreq); !ok {
		for _, e := range errs {
			t.Errorf("launch request %s: %s: %s %v", body, e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}

	ctx := context.Background()
	cl := client.New(s.HTTP.URL, apitest.Token)
	res, err := cl.Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Reference.AgentExecutionID
	var recs []eventstore.Record
	deadline := time.Now().Add(30 * time.Second)
	for {
		if recs, _, err = cl.Records(ctx, id, 1, 100); err != nil {
			t.Fatal(err)
		}
		if st, ok := recs[len(recs)-1].(*eventstore.StateChanged); ok && st.Lifecycle.Final() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not end at its time limit; %d records", id, len(recs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h := recs[0].(*eventstore.Header); h.TimeoutMs != 300 {
		t.Fatalf("header timeoutMs %d, want 300", h.TimeoutMs)
	}
	if in, ok := recs[len(recs)-2].(*eventstore.Interruption); !ok || in.Reason != eventstore.InterruptTimeout {
		t.Fatalf("record before the final state: %+v, want an interruption with reason timeout", recs[len(recs)-2])
	}
}
