package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// waitEnded waits until the read model holds the execution's end.
func (r *rig) waitEnded(t *testing.T, id string) view {
	t.Helper()
	var v view
	eventually(t, 30*time.Second, "the execution ends", func() bool {
		r.call(t, "GET", "/v1/executions/"+id, nil, http.StatusOK, &v)
		return v.Lifecycle.Final()
	})
	return v
}

// byStream is "stream line" per stream, in order.
func byStream(lines []outputlog.Entry) map[string][]string {
	got := map[string][]string{}
	for _, l := range lines {
		got[l.Stream] = append(got[l.Stream], l.Line)
	}
	return got
}

func TestOutputOfAFailedAgent(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-out", "", "say:compiling", "err:warning: deprecated flag",
		`signal:{"type":"status","payload":{"summary":"a marker"}}`,
		"say:linking", "err:error: undefined symbol main", "exit:3")
	id := l.Reference.AgentExecutionID
	if v := r.waitEnded(t, id); v.Lifecycle != "failed" {
		t.Fatalf("lifecycle %s, want failed", v.Lifecycle)
	}
	var p wire.Output
	r.call(t, "GET", "/v1/executions/"+id+"/output", nil, http.StatusOK, &p)
	want := map[string][]string{
		"stdout": {"compiling", "linking"},
		"stderr": {"warning: deprecated flag", "error: undefined symbol main"},
	}
	if diff := cmp.Diff(want, byStream(p.Lines)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	for i, line := range p.Lines {
		if line.N != uint64(i+1) || line.Time.IsZero() {
			t.Errorf("line %d is numbered %d at %v, want %d with its time", i, line.N, line.Time, i+1)
		}
	}
	if p.First != 1 || p.Next != 5 {
		t.Errorf("first %d, next %d, want 1 and 5", p.First, p.Next)
	}

	// Pages follow each other by next.
	var page wire.Output
	r.call(t, "GET", "/v1/executions/"+id+"/output?from=2&limit=2", nil, http.StatusOK, &page)
	if len(page.Lines) != 2 || page.Lines[0].N != 2 || page.Next != 4 {
		t.Errorf("from=2&limit=2 gave %+v, want lines 2 and 3 and next 4", page)
	}
	r.call(t, "GET", "/v1/executions/"+id+"/output?tail=1&stream=stderr", nil, http.StatusOK, &page)
	if len(page.Lines) != 1 || page.Lines[0].Line != "error: undefined symbol main" {
		t.Errorf("the last stderr line is %+v, want the error", page.Lines)
	}

	r.fail(t, "GET", "/v1/executions/"+id+"/output?stream=both", nil, testToken, http.StatusBadRequest, "invalid_field", "stream")
	r.fail(t, "GET", "/v1/executions/"+id+"/output?tail=1&from=1", nil, testToken, http.StatusBadRequest, "invalid_field", "tail")
	r.fail(t, "GET", "/v1/executions/"+id+"/output?limit=0", nil, testToken, http.StatusBadRequest, "invalid_field", "limit")
	r.fail(t, "GET", "/v1/executions/"+id+"/output?since=1", nil, testToken, http.StatusBadRequest, "invalid_field", "since")
	r.fail(t, "GET", "/v1/executions/nobody/output", nil, testToken, http.StatusNotFound, "not_found", "")
	r.fail(t, "GET", "/v1/executions/"+id+"/output", nil, "", http.StatusUnauthorized, "unauthorized", "")
}

// follow=1 sends the lines there are, then each line as it is printed, and
// ends once the execution has ended.
func TestOutputFollow(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-follow", "", "say:waiting for a message", "echo:1", "err:failing after the message", "exit:3")
	id := l.Reference.AgentExecutionID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", r.http.URL+"/v1/executions/"+id+"/output?follow=1", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/x-ndjson" {
		t.Fatalf("status %d, content type %q, want 200 application/x-ndjson", resp.StatusCode, ct)
	}
	lines := make(chan outputlog.Entry)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l outputlog.Entry
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("follow line %q: %v", sc.Text(), err)
				return
			}
			lines <- l
		}
	}()
	next := func(what string) outputlog.Entry {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			return l
		case <-ctx.Done():
			t.Fatalf("no %s within the time", what)
		}
		return outputlog.Entry{}
	}
	if l := next("the first line"); l.Line != "waiting for a message" || l.Stream != "stdout" || l.N != 1 {
		t.Fatalf("first line %+v, want line 1 on stdout", l)
	}
	// The agent prints nothing more until it gets the message.
	r.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "payload": map[string]any{"text": "go on"}}, http.StatusOK, nil)
	got := map[string]string{}
	for range 2 {
		l := next("the lines printed after the message")
		got[l.Stream] = l.Line
	}
	if want := map[string]string{"stdout": "echo: go on", "stderr": "failing after the message"}; !cmp.Equal(got, want) {
		t.Errorf("lines after the message %v, want %v", got, want)
	}
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("an unexpected line %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("the stream did not end after the execution ended")
	}
	if v := r.waitEnded(t, id); v.Lifecycle != "failed" {
		t.Errorf("lifecycle %s, want failed", v.Lifecycle)
	}
}
