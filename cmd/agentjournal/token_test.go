package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// token prints the execution's scoped token: the daemon takes it for that
// execution's observations and refuses it for anything else.
func TestTokenIsScopedToItsExecution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	if r := run(t, dir, "token", "ae-0123456789abcdef01234567"); r.code != exitError || !strings.Contains(r.stderr, "serve") {
		t.Errorf("token without a daemon: exit %d %q, want 1 saying how to start one", r.code, r.stderr)
	}

	startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	id := launched(t, dir, "--owner", "Task/t-token", "--", agent, "sleep:60s")
	other := launched(t, dir, "--owner", "Task/t-token", "--", agent, "sleep:60s")
	t.Cleanup(func() { run(t, dir, "stop", id); run(t, dir, "stop", other) })

	token := strings.TrimSpace(mustRun(t, dir, "token", id))
	if !strings.HasPrefix(token, "aje1.") || strings.Contains(token, " ") {
		t.Fatalf("token printed %q, want one scoped token", token)
	}
	var grant struct {
		AgentExecutionID string   `json:"agentExecutionId"`
		Token            string   `json:"token"`
		Allows           []string `json:"allows"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "token", id, "--json")), &grant); err != nil || grant.Token != token || grant.AgentExecutionID != id || len(grant.Allows) == 0 {
		t.Errorf("token --json: %+v (%v), want the same token for %s and what it allows", grant, err, id)
	}

	data, err := os.ReadFile(daemon.Layout{Dir: dir}.DaemonInfo())
	if err != nil {
		t.Fatal(err)
	}
	var info daemon.Info
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", info.URL+path, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	progress := `{"observationId":"o-token","source":"sdk","confidence":"high","signal":{"type":"progress","payload":{"summary":"from a hook"}}}`
	if code := post("/v1/executions/"+id+"/observations", progress); code != http.StatusOK {
		t.Errorf("the token on its execution's observations: %d, want 200", code)
	}
	if code := post("/v1/executions/"+other+"/observations", progress); code != http.StatusForbidden {
		t.Errorf("the token on another execution's observations: %d, want 403", code)
	}
	if code := post("/v1/executions/"+id+"/stop", "{}"); code != http.StatusForbidden {
		t.Errorf("the token on stop: %d, want 403", code)
	}

	if r := run(t, dir, "token", "ae-00000000000000000000000a"); r.code != exitError || !strings.Contains(r.stderr, "no execution") {
		t.Errorf("token of no execution: exit %d %q, want 1 saying there is none", r.code, r.stderr)
	}
	if r := run(t, dir, "token"); r.code != exitUsage {
		t.Errorf("token without an ID: exit %d, want 2", r.code)
	}
}
