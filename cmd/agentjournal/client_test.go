package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

// showState reads an execution with show --json.
func showState(t *testing.T, dir, id string) execution.State {
	t.Helper()
	var st execution.State
	if err := json.Unmarshal([]byte(mustRun(t, dir, "show", id, "--json")), &st); err != nil {
		t.Fatalf("show %s --json: %v", id, err)
	}
	return st
}

// awaitState polls show --json until ok holds for the execution's state.
func awaitState(t *testing.T, dir, id, what string, ok func(execution.State) bool) execution.State {
	t.Helper()
	return awaitStateWithin(t, dir, id, what, 30*time.Second, ok)
}

// awaitFinal waits until the execution id has ended, whatever its final
// lifecycle.
func awaitFinal(t *testing.T, dir, id string) execution.State {
	t.Helper()
	return awaitState(t, dir, id, "completion", func(st execution.State) bool { return st.Lifecycle.Final() })
}

// todoCapture is the path of a real Claude Code capture that plans with
// TodoWrite, for the fixture agent to replay.
func todoCapture(t *testing.T) string {
	t.Helper()
	capture, err := filepath.Abs(filepath.Join("..", "..", "runtime", "claude", "testdata", "real", "todo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return capture
}

// awaitStateWithin is awaitState with its own time limit.
func awaitStateWithin(t *testing.T, dir, id, what string, limit time.Duration, ok func(execution.State) bool) execution.State {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st := showState(t, dir, id)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never happened; state:\n%s", id, what, mustJSON(st))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// journalRecords reads an execution's records through the API.
func journalRecords(t *testing.T, url, token, id string) []map[string]any {
	t.Helper()
	code, out := call(t, "GET", url+"/v1/executions/"+id+"/records?limit=1000", token, nil)
	if code != 200 {
		t.Fatalf("records of %s: %d %v", id, code, out)
	}
	var recs []map[string]any
	for _, r := range out["records"].([]any) {
		recs = append(recs, r.(map[string]any))
	}
	return recs
}

func TestClientCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	agent := fixtures.AgentBinary(t)

	id := launched(t, dir, "--owner", "Task/t-7", "--", agent, "ask:r1:Proceed?", "echo:1")
	if !strings.HasPrefix(id, "ae-") || strings.Contains(id, "\n") {
		t.Fatalf("launch printed %q, want the execution id alone", id)
	}
	awaitState(t, dir, id, "the input request r1", func(st execution.State) bool { return st.CurrentInputRequestID == "r1" })

	// Observations: the decision, then the same id again is a duplicate.
	obs := []string{"observe", id, "--signal", "progress", "--id", "p-1", `{"summary":"reading the repo"}`}
	first := mustRun(t, dir, obs...)
	if !strings.HasPrefix(first, "observation p-1 (sequence ") || !strings.Contains(first, "decision ") || strings.Contains(first, "duplicate") {
		t.Fatalf("observe printed %q, want the decision", first)
	}
	var ack observationAck
	if err := json.Unmarshal([]byte(mustRun(t, dir, append(obs, "--json")...)), &ack); err != nil {
		t.Fatal(err)
	}
	if !ack.Duplicate || ack.ObservationID != "p-1" || ack.Decision.Action == "" || !strings.Contains(first, "decision "+string(ack.Decision.Action)) {
		t.Fatalf("observe again: %+v, want a duplicate with the decision printed first (%q)", ack, first)
	}
	if again := mustRun(t, dir, obs...); !strings.Contains(again, "duplicate") {
		t.Fatalf("observe a third time printed %q, want it to say duplicate", again)
	}

	// The answer reaches the agent, which goes on to read one more line.
	answered := mustRun(t, dir, "send", id, "--answer", "r1", "yes")
	if !strings.Contains(answered, "delivered") {
		t.Fatalf("send --answer printed %q, want it delivered", answered)
	}
	if out := mustRun(t, dir, "send", id, "--id", "m-2", "carry", "on"); !strings.HasPrefix(out, "message m-2 (sequence ") || !strings.Contains(out, "delivered") {
		t.Fatalf("send printed %q, want m-2 delivered", out)
	}
	st := awaitState(t, dir, id, "completion", func(st execution.State) bool { return st.Lifecycle == "completed" })
	if st.CurrentInputRequestID != "" || st.OwnerEntity != "Task" || st.OwnerID != "t-7" {
		t.Fatalf("final state %s", mustJSON(st))
	}
	var answers []map[string]any
	for _, r := range journalRecords(t, url, token, id) {
		if r["type"] == "message.accepted" && r["messageType"] == "answer" {
			answers = append(answers, r["payload"].(map[string]any))
		}
	}
	if want := []map[string]any{{"text": "yes", "requestId": "r1"}}; !cmp.Equal(answers, want) {
		t.Fatalf("answer messages in the journal: %v, want %v", answers, want)
	}

	// The views read through the daemon, which holds the data directory.
	if out := mustRun(t, dir, "ls"); !strings.Contains(out, id) || !strings.Contains(out, "Task/t-7") {
		t.Fatalf("ls: %q", out)
	}
	var sum projections.Summary
	if err := json.Unmarshal([]byte(mustRun(t, dir, "ls", "--owner", "Task/t-7", "--json")), &sum); err != nil || sum.ID != id {
		t.Fatalf("ls --json: %+v %v, want %s", sum, err, id)
	}
	if out := mustRun(t, dir, "ls", "--lifecycle", "running"); !strings.Contains(out, "No executions match") || !strings.Contains(out, "launch") {
		t.Fatalf("ls --lifecycle running: %q", out)
	}
	if r := run(t, dir, "ls", "--lifecycle", "awaiting-input"); r.code != exitUsage || !strings.Contains(r.stderr, "running") {
		t.Fatalf("ls with a bad lifecycle: exit %d, %q; want 2 naming the accepted values", r.code, r.stderr)
	}
	if out := mustRun(t, dir, "show", id); !strings.Contains(out, id) || !strings.Contains(out, "completed") {
		t.Fatalf("show: %q", out)
	}
	if r := run(t, dir, "show", "ae-000000000000000000000000"); r.code != exitError || !strings.Contains(r.stderr, "no agent execution") {
		t.Fatalf("show of an unknown id: exit %d %q", r.code, r.stderr)
	}
	tl := mustRun(t, dir, "timeline", id, "--limit", "2")
	if lines := strings.Split(strings.TrimSpace(tl), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "--before") {
		t.Fatalf("timeline --limit 2: %q, want two items and the next page", tl)
	}
	var page struct {
		Items []execution.TimelineItem `json:"items"`
		Next  uint64                   `json:"next"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "timeline", id, "--json")), &page); err != nil || len(page.Items) < 5 {
		t.Fatalf("timeline --json: %d items, %v", len(page.Items), err)
	}

	// tail without -f prints the execution's events up to now.
	tail := mustRun(t, dir, "tail", "--events", "--execution", id)
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	if !strings.Contains(tail, "execution.started") {
		t.Fatalf("tail: %q, want execution.started", tail)
	}
	if !strings.Contains(tail, "execution.completed") {
		t.Fatalf("tail: %q, want execution.completed", tail)
	}
	for _, l := range lines {
		if !strings.Contains(l, id) {
			t.Fatalf("tail --execution %s printed another execution's event: %q", id, l)
		}
	}
	var events []struct {
		ID    uint64          `json:"id"`
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	for _, l := range strings.Split(strings.TrimSpace(mustRun(t, dir, "tail", "--execution", id, "--json")), "\n") {
		var ev struct {
			ID    uint64          `json:"id"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("tail --json line %q: %v", l, err)
		}
		events = append(events, ev)
	}
	if len(events) <= len(lines) || events[len(events)-1].Event != "data.changed" {
		t.Fatalf("tail --json printed %d events for %d lines, want every data.changed too", len(events), len(lines))
	}
	from := events[len(events)-1].ID
	if out := mustRun(t, dir, "tail", "--events", "--from-offset", fmt.Sprint(from)); out != lines[len(lines)-1]+"\n" {
		t.Fatalf("tail --from-offset %d: %q, want the last record's line only, %q", from, out, lines[len(lines)-1])
	}
	if out := mustRun(t, dir, "tail", "--events", "--from-offset", fmt.Sprint(from+1)); out != "" {
		t.Fatalf("tail past the end: %q, want nothing", out)
	}

	// stop cancels a sleeping agent.
	sleeper := launched(t, dir, "--", agent, "sleep:60s")
	if out := mustRun(t, dir, "stop", sleeper); !strings.HasPrefix(out, sleeper+": cancelled") {
		t.Fatalf("stop printed %q, want %q", out, sleeper+": cancelled …")
	}
	if st := showState(t, dir, sleeper); st.Lifecycle != "cancelled" {
		t.Fatalf("after stop: %s, want cancelled", st.Lifecycle)
	}

	// Bad input: the API's message, exit 1.
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown signal", []string{"observe", id, "--signal", "bogus", "{}"}, []string{"invalid_field: ", `"bogus"`, "progress"}},
		{"bad payload field", []string{"observe", id, "--signal", "progress", `{"summary":"s","extra":1}`}, []string{"invalid_field: ", "extra"}},
		{"bad source", []string{"observe", id, "--signal", "progress", "--source", "radio", `{"summary":"s"}`}, []string{"invalid_field: ", "radio", "mcp"}},
		{"unknown agent", []string{"launch", "--agent", "nope", "--", agent}, []string{"launch: invalid_field: ", `"nope"`, "generic, claude-code"}},
		{"bad owner", []string{"launch", "--owner", "Nobody/x", "--", agent}, []string{"invalid_field: ", "Task"}},
		{"no command", []string{"launch"}, []string{`invalid_field: field "command": required`}},
		{"unknown message type", []string{"send", id, "--type", "sing", "la"}, []string{"invalid_field: ", `"sing"`, "prompt, answer, interrupt"}},
		{"send to a finished agent", []string{"send", id, "late"}, []string{"send to " + id + ": message ", "failed via", "not running"}},
		{"send to nobody", []string{"send", "ae-000000000000000000000000", "hi"}, []string{"not_found: "}},
		{"stop a finished agent", []string{"stop", id}, []string{"conflict: ", "completed"}},
		{"stop nobody", []string{"stop", "ae-000000000000000000000000"}, []string{"not_found: "}},
		{"tail a bad id", []string{"tail", "-f", "--execution", strings.Repeat("x", 1000)}, []string{"invalid_field: ", "execution"}},
	} {
		r := run(t, dir, tc.args...)
		if r.code != exitError {
			t.Errorf("%s: exit %d, want 1; stderr %q", tc.name, r.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q does not mention %q", tc.name, r.stderr, w)
			}
		}
	}
}

func TestClientCommandsWithoutDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := fmt.Sprintf("agentjournal: no agentjournal daemon is running for %s (start one with: agentjournal --data %s serve)\n", dir, dir)
	for _, args := range [][]string{
		{"launch", "--", "true"},
		{"send", "ae-x", "hello"},
		{"observe", "ae-x", "--signal", "progress", `{"summary":"s"}`},
		{"stop", "ae-x"},
		{"tail"},
		{"tail", "-f"},
	} {
		r := run(t, dir, args...)
		if r.code != exitError || r.stderr != want {
			t.Errorf("%s without a daemon: exit %d, stderr %q; want 1 and %q", args, r.code, r.stderr, want)
		}
	}

	// A daemon.json left by a daemon that died is no daemon, and the
	// views read the data directory.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(daemon.Info{URL: "http://127.0.0.1:1", PID: dead.Process.Pid, TokenFile: daemon.Layout{Dir: dir}.TokenFile()})
	if err := os.WriteFile(daemon.Layout{Dir: dir}.DaemonInfo(), info, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, dir, "stop", "ae-x"); r.code != exitError || r.stderr != want {
		t.Errorf("stop with a stale daemon.json: exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	demoID(t, dir, "stale")
	if out := mustRun(t, dir, "ls"); !strings.Contains(out, "completed") {
		t.Errorf("ls with a stale daemon.json: %q", out)
	}
}

func TestClientUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"launch argument before --", []string{"launch", "./agent"}, "goes after --"},
		{"launch owner without id", []string{"launch", "--owner", "Task", "--", "x"}, "want ENTITY/ID"},
		{"send without id", []string{"send"}, "missing ID"},
		{"send without text", []string{"send", "ae-x"}, "missing TEXT"},
		{"observe without signal", []string{"observe", "ae-x", "{}"}, "missing --signal TYPE"},
		{"observe without payload", []string{"observe", "ae-x", "--signal", "progress"}, "missing JSON_PAYLOAD"},
		{"observe bad json", []string{"observe", "ae-x", "--signal", "progress", "{summary"}, "not valid JSON"},
		{"stop without id", []string{"stop"}, "missing ID"},
		{"tail with argument", []string{"tail", "ae-x"}, "--execution ID"},
		{"mcp with argument", []string{"mcp", "x"}, "takes only flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, filepath.Join(t.TempDir(), "data"), tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 mentioning %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that a command writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTailFollow follows the events across a restart of the daemon: tail
// -f finds the new daemon and resumes where the stream dropped.
func TestTailFollow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	agent := fixtures.AgentBinary(t)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		done <- m.Run(ctx, []string{"--data", dir, "tail", "-f", "--events", "--from-offset", "1"})
	}()
	await := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(stdout.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("tail -f never printed %s; stdout:\n%s\nstderr:\n%s", what, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	completed := func(id string) func(string) bool {
		return func(out string) bool {
			for l := range strings.Lines(out) {
				if strings.Contains(l, "execution.completed") && strings.Contains(l, id) {
					return true
				}
			}
			return false
		}
	}

	first := launched(t, dir, "--", agent, "say:hi")
	await("the first execution's end", completed(first))
	if !strings.Contains(stdout.String(), "execution.started") {
		t.Fatalf("tail -f: %q, want execution.started", stdout.String())
	}

	if r := stop(); r.code != 0 {
		t.Fatalf("serve exit %d: %s", r.code, r.stderr)
	}
	// Launched while no daemon streams to tail, picked up on resume.
	startServe(t, dir)
	second := launched(t, dir, "--", agent, "say:hi")
	await("the second execution's end", completed(second))

	cancel()
	awaitExitOK(t, done, "tail -f after Ctrl-C", &stderr)
	if !strings.Contains(stderr.String(), "resuming after offset") {
		t.Errorf("stderr %q, want a note that the stream resumed", stderr.String())
	}
	// One line per record: no offset twice.
	seen := map[string]bool{}
	for l := range strings.Lines(stdout.String()) {
		offset := strings.Fields(l)[0]
		if seen[offset] {
			t.Errorf("offset %s printed twice:\n%s", offset, stdout.String())
		}
		seen[offset] = true
	}
}

func TestAPIErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  apiError
		want string
	}{
		{"plain", apiError{Code: "not_found", Message: `no execution "x"`}, `not_found: no execution "x"`},
		{"accepted", apiError{Code: "invalid_field", Message: "required", Accepted: []string{"a", "b"}}, "invalid_field: required (want one of: a, b)"},
		{"accepted in the message", apiError{Code: "invalid_field", Field: "agent", Message: `"c" is not accepted (want one of: a, b)`, Accepted: []string{"a", "b"}},
			`invalid_field: field "agent": "c" is not accepted (want one of: a, b)`},
		{"field in the message", apiError{Code: "invalid_field", Field: "signal.type", Message: `field "signal.type": unknown`}, `invalid_field: field "signal.type": unknown`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReadEvents(t *testing.T) {
	t.Parallel()
	stream := ": agentjournal events\n\n" +
		"id: 7\nevent: execution.started\ndata: {\"offset\":7}\n\n" +
		"id: 8\r\nevent: data.changed\r\ndata: line one\r\ndata: line two\r\n\r\n" +
		": heartbeat\n\n" +
		"event: overflow\ndata:{\"lastEventId\":8}\n\n"
	var got []sseEvent
	var comments []string
	err := readEvents(strings.NewReader(stream), func(ev sseEvent) error {
		got = append(got, ev)
		return nil
	}, func(c string) error {
		comments = append(comments, c)
		return nil
	})
	if !errors.Is(err, errStreamEnded) {
		t.Errorf("readEvents at the end of the stream = %v, want the stream to have ended early", err)
	}
	want := []sseEvent{
		{ID: "7", Name: "execution.started", Data: []byte(`{"offset":7}`)},
		{ID: "8", Name: "data.changed", Data: []byte("line one\nline two")},
		{ID: "8", Name: "overflow", Data: []byte(`{"lastEventId":8}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"agentjournal events", "heartbeat"}, comments); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}

	n := 0
	err = readEvents(strings.NewReader(stream), func(sseEvent) error {
		n++
		return errStopEvents
	}, func(string) error { return nil })
	if err != nil || n != 1 {
		t.Errorf("stopping after the first event: %d events, %v; want 1, nil", n, err)
	}
}
