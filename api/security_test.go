package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
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

// A journal imported from a file names the command and directory a fork or
// a resume would run: whoever wrote the file chose them. Such a fork or
// resume is refused (409) with them in error.imported until the request
// restates both; a restatement that differs is refused too.
func TestImportedJournalRunsOnlyWhatIsRestated(t *testing.T) {
	src := newRig(t)
	dir := t.TempDir()
	command := []string{src.agent, "echo:1"}
	var l launched
	src.call(t, "POST", "/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-imported", "agent": "generic",
		"dir": dir, "prompt": "one", "command": command}, http.StatusCreated, &l)
	id := l.Reference.AgentExecutionID
	eventually(t, 20*time.Second, "the run ends", func() bool {
		var v view
		src.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		return v.Lifecycle.Final()
	})
	var records []eventstore.Record
	for e, err := range src.store.ReadJournal(t.Context(), src.quiet(t, l.Reference), 1) {
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, e.Record)
	}
	var file bytes.Buffer
	if err := journalfile.Write(&file, records); err != nil {
		t.Fatal(err)
	}

	r := newRig(t)
	r.call(t, "POST", "/v1/journals", file.String(), http.StatusCreated, nil)
	var entries page
	r.call(t, "GET", "/v1/journals/"+id+"/entries?limit=1", nil, http.StatusOK, &entries)
	if len(entries.Entries) != 1 || !bytes.Contains(entries.Entries[0].Record, []byte(`"imported":true`)) {
		t.Fatalf("the imported header: %+v, want it marked imported", entries.Entries)
	}

	type refusal struct {
		Error struct {
			Code     string                `json:"code"`
			Field    string                `json:"field"`
			Message  string                `json:"message"`
			Imported *wire.ImportedCommand `json:"imported"`
		} `json:"error"`
	}
	refused := func(path string, body map[string]any, want string) {
		t.Helper()
		code, data := r.do(t, "POST", path, body, testToken)
		var e refusal
		if err := json.Unmarshal(data, &e); err != nil || code != http.StatusConflict || e.Error.Field != "confirmImported" {
			t.Fatalf("POST %s: %d %s, want 409 on confirmImported", path, code, data)
		}
		if im := e.Error.Imported; im == nil || !slices.Equal(im.Command, command) || im.WorkingDirectory != dir || im.AgentID != "generic" {
			t.Errorf("POST %s: imported %+v, want command %q in %s", path, e.Error.Imported, command, dir)
		}
		if !strings.Contains(e.Error.Message, want) || !strings.Contains(e.Error.Message, dir) {
			t.Errorf("POST %s: message %q, want it to say %q and name the directory", path, e.Error.Message, want)
		}
	}
	resume := "/v1/executions/" + id + "/resume"
	refused(resume, map[string]any{"prompt": "two"}, "does not restate them")
	refused("/v1/executions/"+id+"/fork", map[string]any{"at": 1, "prompt": "two"}, "does not restate them")
	refused(resume, map[string]any{"prompt": "two", "confirmImported": map[string]any{"command": []string{"/bin/sh", "-c", "true"}, "workingDirectory": dir}}, "restates others")
	refused(resume, map[string]any{"prompt": "two", "confirmImported": map[string]any{"command": command, "workingDirectory": "/"}}, "restates others")

	var resumed launched
	r.call(t, "POST", resume, map[string]any{"prompt": "two", "confirmImported": map[string]any{"command": command, "workingDirectory": dir}},
		http.StatusCreated, &resumed)
	if resumed.Reference.AgentExecutionID == "" || resumed.Reference.AgentExecutionID == id {
		t.Errorf("resume restating the command: %+v, want a new execution", resumed.Reference)
	}
	// What the daemon launched itself needs no restating.
	src.call(t, "POST", "/v1/executions/"+id+"/resume", map[string]any{"prompt": "two"}, http.StatusCreated, nil)
}
