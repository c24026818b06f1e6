package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
)

// /healthz without a token says whether the daemon serves and nothing of
// where: no data directory, no offsets. The API token gets every detail; a
// scoped token (an agent's) or a wrong one is refused, not answered the
// short way.
func TestHealthDetailsNeedTheToken(t *testing.T) {
	const dataDir = "/srv/secret-data-dir"
	r := newRig(t, func(c *api.Config) {
		c.DiskSpace = func() (api.DiskSpace, bool) {
			return api.DiskSpace{Dir: dataDir, Free: 1 << 30, Reserve: 1 << 20}, true
		}
	})
	code, body := r.do(t, "GET", "/healthz", nil, "")
	if code != http.StatusOK || bytes.Contains(body, []byte(dataDir)) {
		t.Fatalf("GET /healthz without a token: %d %s, want 200 without the data directory", code, body)
	}
	var brief map[string]any
	if err := json.Unmarshal(body, &brief); err != nil {
		t.Fatal(err)
	}
	if len(brief) != 1 || brief["status"] != "ok" {
		t.Errorf("GET /healthz without a token: %s, want {\"status\":\"ok\"} alone", body)
	}

	code, body = r.do(t, "GET", "/healthz", nil, testToken)
	if code != http.StatusOK || !bytes.Contains(body, []byte(dataDir)) || !bytes.Contains(body, []byte(`"checkpoint"`)) {
		t.Fatalf("GET /healthz with the API token: %d %s, want 200 with the data directory and the checkpoint", code, body)
	}

	id := r.launch(t, "t-health", "", "sleep:60s").Reference.AgentExecutionID
	r.fail(t, "GET", "/healthz", nil, r.srv.ScopedToken(id), http.StatusForbidden, "forbidden", "")
	r.fail(t, "GET", "/healthz", nil, testToken+"x", http.StatusUnauthorized, "unauthorized", "")
}

// A daemon that cannot serve says so without a token, but not why: the
// reason may name its log's address.
func TestHealthFailureReasonNeedsTheToken(t *testing.T) {
	const reason = "nats://10.1.2.3:4222 is unreachable"
	r := newRig(t, func(c *api.Config) { c.LogReachable = func() error { return errString(reason) } })
	code, body := r.do(t, "GET", "/healthz", nil, "")
	if code != http.StatusServiceUnavailable || bytes.Contains(body, []byte("10.1.2.3")) {
		t.Errorf("GET /healthz without a token: %d %s, want 503 without the reason", code, body)
	}
	code, body = r.do(t, "GET", "/healthz", nil, testToken)
	if code != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("10.1.2.3")) {
		t.Errorf("GET /healthz with the API token: %d %s, want 503 with the reason", code, body)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Ids made only of dots are refused in a path and in a body, saying what
// an id is: a client's /v1/journals/{id}/entries must not become another
// route.
func TestDotIDsRefusedByTheAPI(t *testing.T) {
	r := newRig(t)
	for _, path := range []string{"/v1/executions/%2E", "/v1/executions/%2E%2E/timeline", "/v1/journals/%2E%2E/entries", "/v1/journals/%2E%2E%2E"} {
		e := r.fail(t, "GET", path, nil, testToken, http.StatusNotFound, "not_found", "")
		if !bytes.Contains([]byte(e.Error.Message), []byte("only dots")) {
			t.Errorf("GET %s: %q, want it to say the id is only dots", path, e.Error.Message)
		}
	}
	body := map[string]any{"ownerEntity": "Task", "ownerId": "..", "agent": "generic", "command": []string{r.agent}}
	r.fail(t, "POST", "/v1/executions", body, testToken, http.StatusBadRequest, "invalid_field", "ownerId")
}

// A scoped token ends with its execution and the grace after it: refused
// once the execution has ended and the grace has passed, while the token of
// a live execution is still taken.
func TestScopedTokenEndsWithItsExecution(t *testing.T) {
	r := newRig(t, func(c *api.Config) { c.ScopedTokenGrace = time.Millisecond })
	obs := func(id, obsID string) map[string]any {
		return map[string]any{"observationId": obsID, "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "working"}}}
	}
	live := r.launch(t, "t-expiry", "", "sleep:60s").Reference.AgentExecutionID
	done := r.launch(t, "t-expiry", "", "sleep:60s").Reference.AgentExecutionID
	token := r.srv.ScopedToken(done)
	if code, body := r.do(t, "POST", "/v1/executions/"+done+"/observations", obs(done, "o-1"), token); code != http.StatusOK {
		t.Fatalf("observation while the execution runs: %d %s, want 200", code, body)
	}
	r.call(t, "POST", "/v1/executions/"+done+"/stop", nil, http.StatusOK, nil)
	eventually(t, 20*time.Second, "the stopped execution ends in the read models", func() bool {
		var v view
		r.call(t, "GET", "/v1/executions/"+done, nil, http.StatusOK, &v)
		return v.Lifecycle.Final()
	})
	time.Sleep(5 * time.Millisecond) // the grace
	e := r.fail(t, "POST", "/v1/executions/"+done+"/observations", obs(done, "o-2"), token, http.StatusUnauthorized, "unauthorized", "")
	if !strings.Contains(e.Error.Message, "ended") {
		t.Errorf("refusal %q, want it to say the execution ended", e.Error.Message)
	}
	if code, body := r.do(t, "POST", "/v1/executions/"+live+"/observations", obs(live, "o-3"), r.srv.ScopedToken(live)); code != http.StatusOK {
		t.Errorf("observation of a live execution: %d %s, want 200", code, body)
	}
}
