package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestDuplicateKeys: a body with a key twice in one object is refused with
// the key's path, whatever the route and however deep the object; the
// journal gets nothing.
func TestDuplicateKeys(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-dup", "", "sleep:60s")
	id := l.Reference.AgentExecutionID
	messages := "/v1/executions/" + id + "/messages"
	observations := "/v1/executions/" + id + "/observations"
	launch := func(extra string) string {
		return fmt.Sprintf(`{"ownerEntity":"Task","ownerId":"t-dup-2","agent":"generic","command":[%q,"exit:0"]%s}`, r.agent, extra)
	}
	cases := []struct {
		name, path, body, field string
	}{
		{"launch: top level", "/v1/executions", launch(`,"ownerId":"t-dup-3"`), "ownerId"},
		{"launch: escaped spelling", "/v1/executions", launch(`,"owner\u0049d":"t-dup-3"`), "ownerId"},
		{"launch: env", "/v1/executions", launch(`,"env":{"A":"1","B":"2","A":"3"}`), "env.A"},
		{"message: type", messages, `{"type":"prompt","type":"answer","payload":{"text":"x"}}`, "type"},
		{"message: payload", messages, `{"type":"prompt","payload":{"text":"yes","text":"no"}}`, "payload.text"},
		{"observation: signal type", observations,
			`{"observationId":"o-d1","source":"mcp","confidence":"high","signal":{"type":"progress","type":"blocked","payload":{"summary":"s"}}}`, "signal.type"},
		{"observation: signal payload", observations,
			`{"observationId":"o-d2","source":"mcp","confidence":"high","signal":{"type":"progress","payload":{"summary":"a","summary":"b"}}}`, "signal.payload.summary"},
		{"observation: in an array", observations,
			`{"observationId":"o-d3","source":"mcp","confidence":"high","rawText":"x","payload":{"list":[{"k":1},{"k":1,"k":2}]}}`, "payload.list[1].k"},
		{"stop: optional body", "/v1/executions/" + id + "/stop", `{"a":1,"a":2}`, "a"},
	}
	before := r.records(t, l.Reference)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := r.fail(t, "POST", c.path, c.body, testToken, http.StatusBadRequest, "invalid_field", c.field)
			if !strings.Contains(e.Error.Message, "more than once") {
				t.Errorf("message %q, want it to say the key appears more than once", e.Error.Message)
			}
		})
	}
	if after := r.records(t, l.Reference); after != before {
		t.Fatalf("the journal went from %d to %d records, want no record from a refused body", before, after)
	}
	if code, body := r.do(t, "GET", "/v1/executions?owner=Task/t-dup-2", nil, testToken); code != http.StatusOK || strings.Contains(string(body), "t-dup-2") {
		t.Fatalf("GET /v1/executions?owner=Task/t-dup-2: %d %s, want 200 and no execution: a refused launch starts nothing", code, body)
	}

	t.Run("same key in sibling objects", func(t *testing.T) {
		body := `{"observationId":"o-ok","source":"mcp","confidence":"high","rawText":"x","payload":{"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]}}`
		r.call(t, "POST", observations, body, http.StatusOK, nil)
	})
	t.Run("nested too deep", func(t *testing.T) {
		body := `{"type":"prompt","payload":{"text":"x","deep":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`
		e := r.fail(t, "POST", messages, body, testToken, http.StatusBadRequest, "invalid_field", "(body)")
		if !strings.Contains(e.Error.Message, "64") {
			t.Errorf("message %q, want the depth accepted", e.Error.Message)
		}
	})
	t.Run("malformed body still named as such", func(t *testing.T) {
		r.fail(t, "POST", messages, `{"type":"prompt","payload":{"text":`, testToken, http.StatusBadRequest, "invalid_field", "(body)")
	})
}

// lookup is the reference of execution id's journal, with its record
// count.
func (r *rig) lookup(t *testing.T, id string) eventstore.Reference {
	t.Helper()
	ref, err := r.store.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// records counts a journal's records.
func (r *rig) records(t *testing.T, ref eventstore.Reference) uint64 {
	t.Helper()
	h, err := r.store.Head(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return h.RecordCount
}

// logLines is a log destination that keeps every line.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range bytes.Lines(p) {
		l.lines = append(l.lines, string(line))
	}
	return len(p), nil
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// TestLongPathID: an id longer than any execution id in a request path is
// answered as an unknown execution on every route, with a short answer and
// no long line in the daemon log.
func TestLongPathID(t *testing.T) {
	const maxLogLine = 2 << 10
	var log logLines
	r := newRig(t, func(c *api.Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	long := strings.Repeat("a", 10<<10)
	base := "/v1/executions/" + long
	cases := []struct {
		name, method, path string
		body               any
	}{
		{"read", "GET", base, nil},
		{"stop", "POST", base + "/stop", nil},
		{"message", "POST", base + "/messages", `{"type":"prompt","payload":{"text":"x"}}`},
		{"observation", "POST", base + "/observations", `{"observationId":"o-1","source":"mcp","confidence":"high","rawText":"x"}`},
		{"open terminal", "POST", base + "/terminal", nil},
		{"attach terminal", "POST", base + "/terminal/attach", `{"terminalId":"term-1"}`},
		{"read terminal", "GET", base + "/terminal", nil},
		{"terminal input", "POST", base + "/terminal/input", `{"data":"x"}`},
		{"recording", "GET", base + "/terminal/recording", nil},
		{"timeline", "GET", base + "/timeline", nil},
		{"records", "GET", base + "/records", nil},
		{"replay", "GET", base + "/replay", nil},
		{"one byte over", "GET", "/v1/executions/" + strings.Repeat("a", eventstore.MaxIDLength+1), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := r.do(t, c.method, c.path, c.body, testToken)
			var e apiErr
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s: status %d, body %.200q is not the error shape: %v", c.name, code, body, err)
			}
			if code != http.StatusNotFound || e.Error.Code != "not_found" {
				t.Fatalf("got %d %s (%.200s), want 404 not_found", code, e.Error.Code, e.Error.Message)
			}
			if !strings.Contains(e.Error.Message, strconv.Itoa(eventstore.MaxIDLength)) {
				t.Errorf("message %.300q, want the longest id accepted (%d bytes)", e.Error.Message, eventstore.MaxIDLength)
			}
			if len(body) > 1<<10 {
				t.Errorf("the answer is %d bytes, want at most 1 KiB", len(body))
			}
		})
	}
	for _, line := range log.all() {
		if len(line) > maxLogLine {
			t.Errorf("a log line of %d bytes, want at most %d: %.200s…", len(line), maxLogLine, line)
		}
	}
}
