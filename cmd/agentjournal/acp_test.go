package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/acpserver"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// acpLine is one line the ACP client fixture prints.
type acpLine struct {
	Type   string          `json:"type"`
	Step   int             `json:"step"`
	Op     string          `json:"op"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Params  json.RawMessage `json:"params"`
	Outcome json.RawMessage `json:"outcome"`
	Message string          `json:"message"`
}

// acpUpdate is the part of a session/update the tests compare.
type acpUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		Kind    string `json:"sessionUpdate"`
		Content *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		ToolCallID string            `json:"toolCallId"`
		Status     string            `json:"status"`
		Entries    []json.RawMessage `json:"entries"`
	} `json:"update"`
}

// shown is an update reduced to what the journal decides: its kind and
// its text, tool call id or number of plan entries.
type shown struct{ Kind, What string }

func (u acpUpdate) shown() shown {
	switch {
	case u.Update.Content != nil:
		return shown{u.Update.Kind, u.Update.Content.Text}
	case u.Update.ToolCallID != "":
		return shown{u.Update.Kind, u.Update.ToolCallID + " " + u.Update.Status}
	case u.Update.Kind == "plan":
		return shown{u.Update.Kind, strings.Repeat("*", len(u.Update.Entries))}
	}
	return shown{Kind: u.Update.Kind}
}

// journalShown is what docs/acp.md says an editor is shown of a journal,
// derived from its records.
func journalShown(t *testing.T, records []eventstore.Record) []shown {
	t.Helper()
	var out []shown
	for _, rec := range records {
		switch r := rec.(type) {
		case *eventstore.MessageAccepted:
			if r.MessageType == "prompt" || r.MessageType == "answer" {
				var p struct{ Text string }
				if err := json.Unmarshal(r.Payload, &p); err != nil {
					t.Fatal(err)
				}
				out = append(out, shown{"user_message_chunk", p.Text})
			}
		case *eventstore.Header:
			// The server tells the editor the commands the execution offers.
			out = append(out, shown{Kind: "available_commands_update"})
		case *eventstore.Observation:
			if r.Payload[execution.AdvertisedCommandsKey] != nil {
				out = append(out, shown{Kind: "available_commands_update"})
			}
			if r.Signal == nil {
				continue
			}
			switch p := r.Signal.Payload.(type) {
			case *eventstore.MessageSignal:
				out = append(out, shown{"agent_message_chunk", p.Text})
			case *eventstore.NeedsInputSignal:
				if len(p.Choices) == 0 && p.Kind != string(eventstore.InputPermission) {
					out = append(out, shown{"agent_message_chunk", p.Question})
				}
			case *eventstore.PlanSignal:
				n := 0
				for _, it := range p.Items {
					if it.Status != eventstore.PlanItemDropped {
						n++
					}
				}
				out = append(out, shown{"plan", strings.Repeat("*", n)})
			}
		case *eventstore.ActivityUpdated:
			if tc := r.ToolCall; tc != nil {
				switch tc.Status {
				case eventstore.ToolCallStarted:
					out = append(out, shown{"tool_call", tc.ID + " in_progress"})
				case eventstore.ToolCallSucceeded:
					out = append(out, shown{"tool_call_update", tc.ID + " completed"})
				default:
					out = append(out, shown{"tool_call_update", tc.ID + " failed"})
				}
			}
		}
	}
	return out
}

// runACPClient runs the ACP client fixture (the official TypeScript SDK)
// against "agentjournal acp ARGS" of the daemon in dir, through steps.
func runACPClient(t *testing.T, dir string, steps []map[string]any, args ...string) []acpLine {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed for the ACP client (go tool task agents installs it)")
	}
	modules, _ := filepath.Abs(filepath.Join("..", "..", ".agents", "node_modules"))
	if _, err := os.Stat(filepath.Join(modules, "@agentclientprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the ACP client SDK is not installed (run go tool task agents): %v", err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "fixtures", "acpclient", "client.mjs"))
	scenario, _ := json.Marshal(steps)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmdArgs := append([]string{script, modules, string(scenario), "--", agentjournalBinary(t), "--data", dir, "acp"}, args...)
	cmd := exec.CommandContext(ctx, node, cmdArgs...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ACP client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var lines []acpLine
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l acpLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("ACP client printed %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	t.Logf("agentjournal acp stderr:\n%s", stderr.String())
	return lines
}

// response is the answer to step i; it fails the test when there is none.
func response(t *testing.T, lines []acpLine, step int) (acpLine, int) {
	t.Helper()
	for i, l := range lines {
		if l.Type == "response" && l.Step == step {
			return l, i
		}
	}
	t.Fatalf("no response to step %d in %+v", step, lines)
	return acpLine{}, 0
}

func acpResult[T any](t *testing.T, l acpLine) T {
	t.Helper()
	var v T
	if l.Error != nil {
		t.Fatalf("%s: error %d %s", l.Op, l.Error.Code, l.Error.Message)
	}
	if err := json.Unmarshal(l.Result, &v); err != nil {
		t.Fatalf("%s: %s: %v", l.Op, l.Result, err)
	}
	return v
}

// updatesBefore are the session/update notifications printed before line
// index end.
func updatesBefore(t *testing.T, lines []acpLine, end int) []shown {
	t.Helper()
	var out []shown
	for _, l := range lines[:end] {
		if l.Type != "update" {
			continue
		}
		var u acpUpdate
		if err := json.Unmarshal(l.Params, &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u.shown())
	}
	return out
}

// serveClient starts the daemon on dir and returns a client of it; both
// end with the test.
func serveClient(t *testing.T, dir string) *client.Client {
	t.Helper()
	url, token, _ := startServe(t, dir)
	cl := client.New(url, token)
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestACPServesExecutionsToAnEditor(t *testing.T) {
	dir := t.TempDir()
	cl := serveClient(t, dir)
	agent := fixtures.ACPAgentBinary(t)
	work := t.TempDir()

	lines := runACPClient(t, dir, []map[string]any{
		{"op": "initialize"},
		{"op": "new", "cwd": work},
		{"op": "prompt", "text": "say hello from the agent"},
		{"op": "answer", "option": "allow"},
		{"op": "prompt", "text": "ask t1\nplan completed:look|in_progress:answer"},
		{"op": "prompt", "text": "tool t2 execute ok\nwait", "async": true},
		{"op": "waitUpdate", "kind": "tool_call", "id": "t2"},
		{"op": "cancel"},
		{"op": "await"},
		{"op": "list"},
	}, "--agent", "acp", "--", agent)

	init := acpResult[struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
		AgentInfo struct{ Name string } `json:"agentInfo"`
	}](t, lines[0])
	if init.ProtocolVersion != 1 || !init.AgentCapabilities.LoadSession || init.AgentInfo.Name != "agentjournal" {
		t.Fatalf("initialize: got %+v, want protocol 1, loadSession, agentjournal", init)
	}
	l, _ := response(t, lines, 1)
	id := acpResult[struct {
		SessionID string `json:"sessionId"`
	}](t, l).SessionID
	ex, err := cl.Execution(context.Background(), id)
	if err != nil {
		t.Fatalf("the session id %q is no execution: %v", id, err)
	}
	if ex.AgentID != "acp" || ex.WorkingDirectory != work {
		t.Fatalf("launched: agent %q dir %q, want acp in %s", ex.AgentID, ex.WorkingDirectory, work)
	}

	type stop struct {
		StopReason string `json:"stopReason"`
	}
	l, end := response(t, lines, 2)
	if got := acpResult[stop](t, l).StopReason; got != "end_turn" {
		t.Fatalf("first prompt: stopReason %q, want end_turn", got)
	}
	if got := updatesBefore(t, lines, end); !contains(got, shown{"agent_message_chunk", "hello from the agent"}) {
		t.Fatalf("updates before the first turn's end: %v, want the agent's message", got)
	}

	// The agent's permission request reached the editor, and its pick is
	// the operator's answer in the journal.
	var perm acpLine
	for _, l := range lines {
		if l.Type == "permission" {
			perm = l
		}
	}
	var permParams struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if perm.Params == nil || json.Unmarshal(perm.Params, &permParams) != nil {
		t.Fatalf("no session/request_permission reached the editor: %+v", lines)
	}
	if permParams.SessionID != id || permParams.ToolCall.ToolCallID != "t1" || len(permParams.Options) != 3 ||
		permParams.Options[0].OptionID != "allow" || permParams.Options[2].Kind != "reject_once" {
		t.Fatalf("permission request: got %+v, want t1 with allow, allow-always, deny", permParams)
	}
	l, end = response(t, lines, 4)
	if got := acpResult[stop](t, l).StopReason; got != "end_turn" {
		t.Fatalf("prompt with a permission: stopReason %q, want end_turn", got)
	}
	if got := updatesBefore(t, lines, end); !contains(got, shown{"agent_message_chunk", "permission: yes"}) || !contains(got, shown{"plan", "**"}) {
		t.Fatalf("updates before the second turn's end: %v, want the agent saying it was allowed, and its plan", got)
	}
	records := journal(t, cl, id)
	answered := false
	for _, rec := range records {
		if m, ok := rec.(*eventstore.MessageAccepted); ok && m.MessageType == "answer" {
			answered = m.Source == eventstore.SourceOperator && strings.Contains(string(m.Payload), `"requestId":"t1"`) &&
				strings.Contains(string(m.Payload), `"text":"allow"`)
		}
	}
	if !answered {
		t.Fatalf("the journal holds no operator's answer allow to t1")
	}

	l, _ = response(t, lines, 5)
	if got := acpResult[stop](t, l).StopReason; got != "cancelled" {
		t.Fatalf("cancelled prompt: stopReason %q, want cancelled", got)
	}
	l, _ = response(t, lines, 9)
	list := acpResult[struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
		} `json:"sessions"`
	}](t, l)
	listed := false
	for _, s := range list.Sessions {
		listed = listed || s.SessionID == id && s.Cwd == work
	}
	if !listed {
		t.Fatalf("session/list: %+v, want %s in %s", list, id, work)
	}

	// A finished execution loads as its journal has it, and takes no
	// prompt.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	lines = runACPClient(t, dir, []map[string]any{
		{"op": "initialize"},
		{"op": "load", "session": id, "cwd": work},
		{"op": "prompt", "text": "say again"},
		{"op": "load", "session": "ae-00000000000000000000000000", "cwd": work},
	})
	l, end = response(t, lines, 1)
	if l.Error != nil {
		t.Fatalf("session/load: %+v", l.Error)
	}
	want := journalShown(t, journal(t, cl, id))
	if diff := cmp.Diff(want, updatesBefore(t, lines, end)); diff != "" {
		t.Fatalf("session/load updates differ from the journal (-journal +updates):\n%s", diff)
	}
	if !contains(want, shown{"user_message_chunk", "allow"}) || !contains(want, shown{"tool_call", "t2 in_progress"}) {
		t.Fatalf("the journal lacks what the session did: %v", want)
	}
	l, _ = response(t, lines, 2)
	if l.Error == nil || !strings.Contains(l.Error.Message, "has ended") {
		t.Fatalf("prompt to a finished execution: %+v, want an error saying it has ended", l)
	}
	l, _ = response(t, lines, 3)
	if l.Error == nil || !strings.Contains(l.Error.Message, "unknown session") {
		t.Fatalf("load of an unknown session: %+v, want an error naming it unknown", string(l.Error.Data))
	}
}

func contains(list []shown, s shown) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func journal(t *testing.T, cl *client.Client, id string) []eventstore.Record {
	t.Helper()
	var out []eventstore.Record
	for e, err := range cl.Entries(context.Background(), id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Record)
	}
	return out
}

// A question without choices is shown as the agent's message, and the
// editor's next prompt answers it.
func TestACPNextPromptAnswersAQuestion(t *testing.T) {
	dir := t.TempDir()
	cl := serveClient(t, dir)
	lines := runACPClient(t, dir, []map[string]any{
		{"op": "initialize"},
		{"op": "new", "cwd": t.TempDir()},
		{"op": "waitUpdate", "kind": "agent_message_chunk", "text": "Which color?"},
		{"op": "prompt", "text": "blue"},
	}, "--", fixtures.AgentBinary(t), "ask:q1:Which color?", `signal:{"type":"message","payload":{"text":"thanks"}}`)
	l, _ := response(t, lines, 1)
	id := acpResult[struct {
		SessionID string `json:"sessionId"`
	}](t, l).SessionID
	l, end := response(t, lines, 3)
	if got := acpResult[struct {
		StopReason string `json:"stopReason"`
	}](t, l).StopReason; got != "end_turn" {
		t.Fatalf("stopReason %q, want end_turn (the execution ended)", got)
	}
	if got := updatesBefore(t, lines, end); !contains(got, shown{"user_message_chunk", "blue"}) || !contains(got, shown{"agent_message_chunk", "thanks"}) {
		t.Fatalf("updates: %v, want the answer and the agent's message after it", got)
	}
	answered := false
	for _, rec := range journal(t, cl, id) {
		if m, ok := rec.(*eventstore.MessageAccepted); ok {
			answered = answered || m.MessageType == "answer" && m.Source == eventstore.SourceOperator && strings.Contains(string(m.Payload), `"requestId":"q1"`)
		}
	}
	if !answered {
		t.Fatal("the journal holds no operator's answer to q1")
	}
}

// Bad input and a daemon gone get JSON-RPC errors that say what is
// accepted, and the server goes on answering.
func TestACPBadInput(t *testing.T) {
	dir := t.TempDir()
	url, token, stopServe := startServe(t, dir)
	cl := client.New(url, token)
	defer cl.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- acpserver.Serve(ctx, cl, acpserver.Config{}, inR, outW) }()
	defer func() {
		inW.Close()
		cancel()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop")
		}
		outW.Close() // ends the reader of the answers
	}()
	answers := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				answers <- m
			}
		}
	}()
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-answers:
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %s", line)
		}
		return nil
	}
	errorOf := func(m map[string]any) (float64, string) {
		e, _ := m["error"].(map[string]any)
		if e == nil {
			t.Fatalf("got %v, want an error", m)
		}
		msg, _ := json.Marshal(e)
		return e["code"].(float64), string(msg)
	}
	for _, tc := range []struct {
		name, line string
		code       float64
		says       string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`, -32700, "Parse error"},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"session/bogus","params":{}}`, -32601, "session/bogus"},
		{"unknown session", `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, -32602, "open it with session/new or session/load"},
		{"no agent", `{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, -32602, "--agent NAME"},
		{"bad _meta", `{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[],"_meta":{"agentjournal":{"agnt":"x"}}}}`, -32602, "want {"},
		{"unknown agent", `{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[],"_meta":{"agentjournal":{"agent":"nope"}}}}`, -32602, "claude-code"},
	} {
		code, msg := errorOf(ask(tc.line))
		if code != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: got %v %s, want %v saying %q", tc.name, code, msg, tc.code, tc.says)
		}
	}
	stopServe()
	code, msg := errorOf(ask(`{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}`))
	if code != -32603 || !strings.Contains(msg, "reach the daemon") {
		t.Errorf("daemon gone: got %v %s, want -32603 saying it cannot reach the daemon", code, msg)
	}
	if m := ask(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}`); m["result"] == nil {
		t.Errorf("initialize after the errors: %v, want a result", m)
	}
}
