package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// POST /v1/projections/rebuild rebuilds the live projection while the API
// keeps serving from it, streaming its progress, and the executions read
// the same afterwards.
func TestRebuildProjection(t *testing.T) {
	r := newRig(t)
	ids := []string{
		r.launch(t, "t-r1", "", `signal:{"type":"progress","payload":{"summary":"one"}}`).Reference.AgentExecutionID,
		r.launch(t, "t-r2", "").Reference.AgentExecutionID,
	}
	before := map[string]view{}
	for _, id := range ids {
		var v view
		eventually(t, 20*time.Second, "the agent completes", func() bool {
			r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
			return v.Lifecycle == eventstore.LifecycleCompleted
		})
		v.Journal = r.quiet(t, v.Journal)
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		before[id] = v
	}
	last, err := r.store.LastOffset(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	code, body := r.do(t, "POST", "/v1/projections/rebuild", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("rebuild: %d %s", code, body)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) < 2 {
		t.Fatalf("rebuild answered %d lines, want progress and a last line:\n%s", len(lines), body)
	}
	end := lines[len(lines)-1]
	if end["executions"] != float64(len(ids)) || end["error"] != nil || end["done"].(float64) < float64(last) || end["total"].(float64) < float64(last) {
		t.Fatalf("last line %v, want %d executions and at least %d records done", end, len(ids), last)
	}
	for _, id := range ids {
		var v view
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		if d := cmp.Diff(before[id], v); d != "" {
			t.Fatalf("execution %s after the rebuild differs (-before +after):\n%s", id, d)
		}
	}

	r.fail(t, "POST", "/v1/projections/rebuild?force=1", nil, testToken, http.StatusBadRequest, "invalid_field", "force")
	r.fail(t, "POST", "/v1/projections/rebuild", nil, "", http.StatusUnauthorized, "unauthorized", "")
	r.fail(t, "GET", "/v1/projections/rebuild", nil, testToken, http.StatusMethodNotAllowed, "method_not_allowed", "")
}
