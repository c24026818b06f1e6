package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/terminal"
)

// The routes the operator console relies on: its page, the event stream's
// access_token, replay and terminal recordings.

func TestConsoleMount(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, path, contentType, contains string
	}{
		{"page", "/", "text/html", "<title>agentjournal console</title>"},
		{"script", "/console/app.js", "text/javascript", "EventSource"},
		{"styles", "/console/style.css", "text/css", ".timeline"},
		{"terminal emulator", "/console/vendor/xterm.js", "text/javascript", "Terminal"},
		{"terminal styles", "/console/vendor/xterm.css", "text/css", ".xterm"},
		{"markdown", "/console/vendor/marked.js", "text/javascript", "marked"},
		{"sanitizer", "/console/vendor/purify.js", "text/javascript", "DOMPurify"},
		{"licences", "/console/vendor/xterm.LICENSE", "text/plain", "The xterm.js authors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := r.send(t, "GET", tc.path, nil, nil)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) {
				t.Fatalf("GET %s without a token: %d %q, want 200 %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contentType)
			}
			if !bytes.Contains(body, []byte(tc.contains)) {
				t.Errorf("GET %s: the body lacks %q", tc.path, tc.contains)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("GET %s: Content-Security-Policy %q, want one that allows only the console's own assets", tc.path, csp)
			}
		})
	}
	t.Run("every module the page imports, as JavaScript", func(t *testing.T) {
		// The browser runs a module only when it is served as JavaScript:
		// follow the imports from the entry module through the graph.
		imports := regexp.MustCompile(`(?m)^(?:import|export)\b[^;]*?\bfrom '\./([a-z]+\.js)';`)
		seen := map[string]bool{"app.js": true}
		for queue := []string{"app.js"}; len(queue) > 0; queue = queue[1:] {
			resp, body := r.send(t, "GET", "/console/"+queue[0], nil, nil)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/javascript; charset=utf-8" {
				t.Errorf("GET /console/%s: %d %q, want 200 text/javascript; charset=utf-8", queue[0], resp.StatusCode, ct)
			}
			for _, m := range imports.FindAllSubmatch(body, -1) {
				if name := string(m[1]); !seen[name] {
					seen[name] = true
					queue = append(queue, name)
				}
			}
		}
		if len(seen) < 10 {
			t.Errorf("the entry module imports %d modules in all, want one per screen and card: %v", len(seen), seen)
		}
	})
	t.Run("no other file", func(t *testing.T) {
		for _, p := range []string{"/console/", "/console/nope.js", "/console/index.html", "/console/static/app.js",
			"/console/vendor", "/console/vendor/", "/console/vendor/index.html", "/console/vendor/x/y.js", "/console/app.js/x"} {
			if resp, _ := r.send(t, "GET", p, nil, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
	})
	t.Run("a style nonce per page", func(t *testing.T) {
		nonces := map[string]bool{}
		for range 2 {
			resp, body := r.send(t, "GET", "/", nil, nil)
			m := regexp.MustCompile(`<link id="styles"[^>]* nonce="([A-Za-z0-9_-]{22})">`).FindSubmatch(body)
			if m == nil {
				t.Fatalf("the page has no style nonce on its stylesheet link:\n%s", body)
			}
			nonce := string(m[1])
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self' 'nonce-"+nonce+"';") {
				t.Errorf("Content-Security-Policy %q, want style-src with the page's nonce %s", csp, nonce)
			}
			nonces[nonce] = true
		}
		if len(nonces) != 2 {
			t.Errorf("two pages had the same nonce")
		}
	})
	t.Run("the API still needs a token", func(t *testing.T) {
		r.fail(t, "GET", "/v1/nothing", nil, "", http.StatusUnauthorized, "unauthorized", "")
		r.fail(t, "GET", "/nothing", nil, "", http.StatusUnauthorized, "unauthorized", "")
	})
}

func TestEventsAccessToken(t *testing.T) {
	r := newRig(t)
	id := r.launch(t, "t-query-token", "", "sleep:60s").Reference.AgentExecutionID
	open := func(t *testing.T, query string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", r.http.URL+"/v1/events?"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, resp.Header.Get("Content-Type")
		}
		var e apiErr
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("GET /v1/events?%s: status %d, body not the error shape: %v", query, resp.StatusCode, err)
		}
		return resp.StatusCode, e.Error.Code
	}

	t.Run("the API token opens the stream", func(t *testing.T) {
		q := url.Values{"access_token": {testToken}, "execution": {id}}
		if code, ct := open(t, q.Encode()); code != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("got %d %s, want 200 text/event-stream", code, ct)
		}
	})
	t.Run("a wrong token does not", func(t *testing.T) {
		if code, c := open(t, "access_token="+testToken+"x"); code != http.StatusUnauthorized || c != "unauthorized" {
			t.Fatalf("got %d %s, want 401 unauthorized", code, c)
		}
	})
	t.Run("a scoped token does not", func(t *testing.T) {
		q := url.Values{"access_token": {r.srv.ScopedToken(id)}}
		if code, c := open(t, q.Encode()); code != http.StatusForbidden || c != "forbidden" {
			t.Fatalf("got %d %s, want 403 forbidden", code, c)
		}
	})
	t.Run("other routes refuse it", func(t *testing.T) {
		q := "?access_token=" + testToken
		for _, p := range []string{"/v1/executions" + q, "/v1/executions/" + id + q, "/v1/executions/" + id + "/timeline" + q,
			"/v1/executions/" + id + "/records" + q, "/v1/executions/" + id + "/replay" + q, "/v1/log" + q, "/metrics" + q} {
			r.fail(t, "GET", p, nil, "", http.StatusUnauthorized, "unauthorized", "")
		}
		r.fail(t, "POST", "/v1/executions/"+id+"/messages"+q, map[string]any{"type": "prompt"}, "", http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("other routes name it as unknown with the header", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions?access_token="+testToken, nil, testToken, http.StatusBadRequest, "invalid_field", "access_token")
	})
}

// replayed is the answer of GET /v1/executions/{id}/replay.
type replayed struct {
	ToSeq uint64 `json:"toSeq"`
	State struct {
		view
		Timeline []struct {
			Sequence uint64 `json:"sequence"`
			Kind     string `json:"kind"`
		} `json:"timeline"`
	} `json:"state"`
	Records []struct {
		Offset uint64 `json:"offset"`
		Record struct {
			Type     string `json:"type"`
			Sequence uint64 `json:"sequence"`
		} `json:"record"`
		Summary string `json:"summary"`
	} `json:"records"`
}

func TestReplay(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-replay", "", `signal:{"type":"needs_input","payload":{"requestId":"r1","question":"go?"}}`, "sleep:60s")
	id := l.Reference.AgentExecutionID
	eventually(t, 20*time.Second, "the input request opens", func() bool {
		var v view
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		return v.CurrentInputRequestID == "r1"
	})
	head := r.quiet(t, l.Reference)
	base := "/v1/executions/" + id + "/replay"

	var whole replayed
	r.call(t, "GET", base+"?limit=1000", nil, http.StatusOK, &whole)
	if whole.ToSeq != head.LastSequence || uint64(len(whole.Records)) != head.LastSequence {
		t.Fatalf("whole journal: toSeq %d with %d records, want %d and %d", whole.ToSeq, len(whole.Records), head.LastSequence, head.LastSequence)
	}
	if whole.State.Attention != eventstore.AttentionAwaitingOperator || whole.State.CurrentInputRequestID != "r1" {
		t.Fatalf("whole journal: attention %s, request %q, want awaiting-operator and r1", whole.State.Attention, whole.State.CurrentInputRequestID)
	}
	var offset uint64
	stored := fixtures.ReadJournal(t, r.store, l.Reference)
	for i, rec := range whole.Records {
		if rec.Record.Sequence != uint64(i+1) || rec.Offset <= offset {
			t.Fatalf("record %d: sequence %d at offset %d after offset %d, want sequence %d at a later offset", i, rec.Record.Sequence, rec.Offset, offset, i+1)
		}
		offset = rec.Offset
		// Each record is told for a person as journal cat tells it.
		if want := eventstore.Summary(stored[i]); rec.Summary != want || want == "" {
			t.Errorf("record %d (%s): summary %q, want %q", rec.Record.Sequence, rec.Record.Type, rec.Summary, want)
		}
	}

	var first replayed
	r.call(t, "GET", base+"?toSeq=1", nil, http.StatusOK, &first)
	if first.ToSeq != 1 || first.State.Lifecycle != eventstore.LifecycleStarting || len(first.Records) != 1 || first.Records[0].Record.Type != "journal.header" {
		t.Fatalf("toSeq=1: %+v, want the header alone and lifecycle starting", first)
	}
	if first.Records[0].Offset != whole.Records[0].Offset {
		t.Errorf("toSeq=1: offset %d, want %d as in the whole journal", first.Records[0].Offset, whole.Records[0].Offset)
	}

	// The timeline grows with the sequence, and never holds a later item.
	for seq := uint64(1); seq <= head.LastSequence; seq++ {
		var at replayed
		r.call(t, "GET", base+"?toSeq="+strconv.FormatUint(seq, 10)+"&limit=2", nil, http.StatusOK, &at)
		if at.ToSeq != seq || len(at.Records) != min(2, int(seq)) || at.Records[len(at.Records)-1].Record.Sequence != seq {
			t.Fatalf("toSeq=%d: toSeq %d, %d records, want %d and the last at %d", seq, at.ToSeq, len(at.Records), seq, seq)
		}
		for _, it := range at.State.Timeline {
			if it.Sequence > seq {
				t.Fatalf("toSeq=%d: timeline item at %d", seq, it.Sequence)
			}
		}
	}

	var beyond replayed
	r.call(t, "GET", base+"?toSeq=99999&limit=0", nil, http.StatusOK, &beyond)
	if beyond.ToSeq != head.LastSequence || len(beyond.Records) != 0 {
		t.Fatalf("toSeq beyond the end: toSeq %d with %d records, want %d and none", beyond.ToSeq, len(beyond.Records), head.LastSequence)
	}
	r.fail(t, "GET", base+"?toSeq=0", nil, testToken, http.StatusBadRequest, "invalid_field", "toSeq")
	r.fail(t, "GET", base+"?limit=1001", nil, testToken, http.StatusBadRequest, "invalid_field", "limit")
	r.fail(t, "GET", base+"?fromSeq=1", nil, testToken, http.StatusBadRequest, "invalid_field", "fromSeq")
	r.fail(t, "GET", "/v1/executions/ae-nope/replay", nil, testToken, http.StatusNotFound, "not_found", "")
}

// recording waits for the agent of execution id to exit and its terminal
// recording to hold the exit, and returns the recording as served, which
// must be asciicast v2, and the output it records.
func (r *rig) recording(t *testing.T, id string) (rec []byte, output string) {
	t.Helper()
	// Done is nil once the execution has ended here: the agent may have
	// exited already.
	if done := r.rt.Done(id); done != nil {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the agent did not exit")
		}
	}
	eventually(t, 10*time.Second, "the recording holds the exit", func() bool {
		resp, body := r.send(t, "GET", "/v1/executions/"+id+"/terminal/recording", nil, map[string]string{"Authorization": "Bearer " + testToken})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-asciicast" {
			t.Fatalf("GET recording: %d %q %s, want 200 application/x-asciicast", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		rec = body
		return bytes.Contains(body, []byte(`"m", "exit 0"`))
	})
	_, events, err := terminal.ReadRecording(bytes.NewReader(rec))
	if err != nil {
		t.Fatalf("the recording does not read as asciicast v2: %v", err)
	}
	var out strings.Builder
	for _, ev := range events {
		if ev.Code == terminal.CodeOutput {
			out.WriteString(ev.Data)
		}
	}
	return rec, out.String()
}

func TestTerminalRecording(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-rec", eventstore.PostureStructuredInteractive, "echo:1")
	id := l.Reference.AgentExecutionID
	r.call(t, "POST", "/v1/executions/"+id+"/terminal/input", map[string]any{"data": "recorded line\r"}, http.StatusOK, nil)
	if _, out := r.recording(t, id); !strings.Contains(out, "echo: recorded line") {
		t.Fatalf("the recorded output %q lacks the agent's echo", out)
	}

	t.Run("headless execution", func(t *testing.T) {
		other := r.launch(t, "t-rec", "", "exit:0").Reference.AgentExecutionID
		e := r.fail(t, "GET", "/v1/executions/"+other+"/terminal/recording", nil, testToken, http.StatusNotFound, "not_found", "")
		if !strings.Contains(e.Error.Message, "structured-interactive") {
			t.Errorf("message %q does not say which executions have a recording", e.Error.Message)
		}
	})
	t.Run("unknown execution", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions/ae-nope/terminal/recording", nil, testToken, http.StatusNotFound, "not_found", "")
	})
	t.Run("no recording directory", func(t *testing.T) {
		bare := newRig(t, func(c *api.Config) { c.RecordingDir = "" })
		l := bare.launch(t, "t-rec", eventstore.PostureStructuredInteractive, "exit:0")
		e := bare.fail(t, "GET", "/v1/executions/"+l.Reference.AgentExecutionID+"/terminal/recording", nil, testToken, http.StatusNotFound, "not_found", "")
		if !strings.Contains(e.Error.Message, "keeps no terminal recordings") {
			t.Errorf("message %q, want one saying the daemon keeps none", e.Error.Message)
		}
	})
}

// markerScript is an agent on a terminal lane that writes its nonce to the
// file named by $1, prints a marker line, a marker inside a line after a
// progress redraw, and ordinary lines, then waits for a line of input.
const markerScript = `printf '%s' "$AGENTJOURNAL_MARKER_NONCE" > "$1"
printf 'before the marker\n'
printf '@@agentjournal %s {"type":"progress","payload":{"summary":"Read from the hidden line"}}\n' "$AGENTJOURNAL_MARKER_NONCE"
printf 'working 50%%\r@@agentjournal %s {"type":"status","payload":{"summary":"not a marker"}}\n' "$AGENTJOURNAL_MARKER_NONCE"
printf 'after the marker\n'
read line
printf 'got %s\n' "$line"
`

// A terminal lane's marker lines are read as signals, and never shown: not
// in the lane's snapshot, the answer to its input nor its recording as
// served. The recording file keeps them.
func TestTerminalHidesMarkers(t *testing.T) {
	r := newRig(t)
	nonceFile := filepath.Join(t.TempDir(), "nonce")
	var l struct {
		Reference eventstore.Reference `json:"reference"`
	}
	r.call(t, "POST", "/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-markers", "agent": "generic",
		"posture": eventstore.PostureStructuredInteractive, "command": []string{"/bin/sh", "-c", markerScript, "sh", nonceFile}}, http.StatusCreated, &l)
	id := l.Reference.AgentExecutionID
	base := "/v1/executions/" + id + "/terminal"

	var view struct {
		Snapshot struct {
			Recent string `json:"recent"`
		} `json:"snapshot"`
	}
	eventually(t, 20*time.Second, "the lane shows the line after the marker", func() bool {
		r.call(t, "GET", base, nil, http.StatusOK, &view)
		return strings.Contains(view.Snapshot.Recent, "after the marker")
	})
	nonce, err := os.ReadFile(nonceFile)
	if err != nil || len(nonce) != 32 {
		t.Fatalf("the agent wrote nonce %q (%v), want 32 hex digits", nonce, err)
	}
	hidden := func(t *testing.T, where, shown string) {
		t.Helper()
		for _, secret := range []string{string(nonce), "@@agentjournal", "Read from the hidden line", "not a marker"} {
			if strings.Contains(shown, secret) {
				t.Errorf("%s shows %q: %q", where, secret, shown)
			}
		}
		if !strings.Contains(shown, "before the marker\r\n") || !strings.Contains(shown, "working 50%\r") {
			t.Errorf("%s: %q, want the ordinary output around the markers", where, shown)
		}
	}
	hidden(t, "the snapshot", view.Snapshot.Recent)

	var timeline struct {
		Items []struct{ Text string } `json:"items"`
	}
	eventually(t, 20*time.Second, "the marker's progress in the timeline", func() bool {
		r.call(t, "GET", "/v1/executions/"+id+"/timeline", nil, http.StatusOK, &timeline)
		for _, it := range timeline.Items {
			if strings.Contains(it.Text, "Read from the hidden line") {
				return true
			}
		}
		return false
	})

	var typed struct {
		Snapshot struct {
			Recent string `json:"recent"`
		} `json:"snapshot"`
	}
	r.call(t, "POST", base+"/input", map[string]any{"data": "go on\r"}, http.StatusOK, &typed)
	hidden(t, "the answer to input", typed.Snapshot.Recent)

	rec, out := r.recording(t, id)
	hidden(t, "the recording", out)
	if !strings.Contains(out, "got go on") {
		t.Errorf("the recording %q lacks the agent's last line", out)
	}
	if strings.Contains(string(rec), string(nonce)) {
		t.Errorf("the recording served holds the nonce")
	}
}
