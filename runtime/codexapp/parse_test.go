package codexapp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestCodexAppCapture pins what a real app-server conversation becomes: a
// turn with a plan, an approved command, a failing command and an answer,
// then a second turn, each message carrying its turn as the id a fork
// goes through.
func TestCodexAppCapture(t *testing.T) {
	caps := agenttest.CapturesByName(t)
	evs := agenttest.Parse(t, Agent{}, caps["real/approval-two-turns.jsonl"]...)
	want := []string{
		"session 01a252e9-b87d-7430-8a51-98a9a6e85f01 ",
		"message: I will plan.",
		"plan: [ ] Write the file; [ ] Run the tests",
		"usage = in=90 out=9 total=99",
		"activity executing command:/bin/bash -lc 'touch made-by-tool' tool=command_execution call=command_execution:started active=true",
		"needs permission: Allow Codex to run: /bin/bash -lc 'touch made-by-tool'? (The file must be made) [allow deny allow-always]",
		"activity call=command_execution:succeeded active=false",
		"usage = in=190 out=29 total=219",
		"activity executing command:/bin/bash -lc 'echo hi; exit 3' tool=command_execution call=command_execution:started active=true",
		`activity call=command_execution:failed exit=3 error="hi" active=false`,
		"usage = in=310 out=49 total=359",
		"message: Finished.",
		"usage = in=440 out=54 total=494",
		"completed: Finished.",
		"turn end",
		"message: Second answer.",
		"usage = in=590 out=74 total=664",
		"completed: Second answer.",
		"turn end",
	}
	if diff := cmp.Diff(want, agenttest.DescribeAll(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	turns := map[string]string{
		"I will plan.":   "01a252e9-b88d-7513-b6bc-9be92e9854a0",
		"Second answer.": "01a252e9-ba62-71c1-a079-e7430e33b79d",
	}
	for _, e := range evs {
		o := e.Observation
		if o == nil {
			continue
		}
		switch p := o.Signal.Payload.(type) {
		case *eventstore.MessageSignal:
			n := agenttest.NativeOf(o)
			if w, ok := turns[p.Text]; ok && (n.MessageID != w || n.TurnID != w) {
				t.Errorf("message %q: native %+v, want its turn %s as turnId and messageId", p.Text, n, w)
			}
		case *eventstore.NeedsInputSignal:
			if p.RequestID != "call_cap_1" || p.Tool == nil || p.Tool.Name != "command_execution" || p.Tool.Input["command"] != "/bin/bash -lc 'touch made-by-tool'" {
				t.Errorf("needs-input %+v, want request call_cap_1 for the command", p)
			}
			if n := agenttest.NativeOf(o); n.RequestID != "0" {
				t.Errorf("needs-input native %+v, want the JSON-RPC id 0 as requestId", n)
			}
		}
	}
}

// TestCodexAppLines pins what the lines no capture holds become.
func TestCodexAppLines(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"interrupted turn", []string{
			`{"method":"turn/started","params":{"threadId":"th","turn":{"id":"t1","status":"inProgress"}}}`,
			`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"t1","status":"interrupted","items":[]}}}`,
		}, []string{"turn end"}},
		{"failed turn, its error reported twice", []string{
			`{"method":"error","params":{"threadId":"th","turnId":"t1","willRetry":false,"error":{"message":"unexpected status 400: prompt is too long"}}}`,
			`{"method":"turn/completed","params":{"threadId":"th","turn":{"id":"t1","status":"failed","items":[],"error":{"message":"unexpected status 400: prompt is too long"}}}}`,
		}, []string{"failed: unexpected status 400: prompt is too long", "turn failed: unexpected status 400: prompt is too long"}},
		{"a retry, then the turn goes on", []string{
			`{"method":"error","params":{"threadId":"th","turnId":"t1","willRetry":true,"error":{"message":"Reconnecting... 1/5"}}}`,
			`{"method":"item/completed","params":{"threadId":"th","turnId":"t1","item":{"type":"agentMessage","id":"m","text":"Done."}}}`,
		}, []string{"diagnostic provider-error", "message: Done."}},
		{"file change", []string{
			`{"method":"item/started","params":{"threadId":"th","turnId":"t1","item":{"type":"fileChange","id":"fc","status":"inProgress","changes":[{"path":"/w/a.txt","kind":{"type":"add"},"diff":""},{"path":"/w/b.txt","kind":{"type":"update","move_path":null},"diff":""}]}}}`,
			`{"method":"item/fileChange/requestApproval","id":3,"params":{"threadId":"th","turnId":"t1","itemId":"fc","startedAtMs":1,"reason":"outside the workspace"}}`,
			`{"method":"item/completed","params":{"threadId":"th","turnId":"t1","item":{"type":"fileChange","id":"fc","status":"declined","changes":[{"path":"/w/a.txt","kind":{"type":"add"},"diff":""}]}}}`,
		}, []string{
			"activity editing file:/w/a.txt (2 files) tool=file_change call=file_change:started active=true",
			"needs permission: Allow Codex to change files? (outside the workspace) [allow deny allow-always]",
			`activity call=file_change:failed error="the file change was declined" active=false`,
		}},
		{"request this client does not answer", []string{
			`{"method":"item/tool/requestUserInput","id":4,"params":{"threadId":"th","turnId":"t1","itemId":"q","questions":[]}}`,
		}, []string{"diagnostic codex-app-refused"}},
		{"not JSON-RPC, of a known method's name", []string{`{"type":"turn/started"}`}, []string{"diagnostic bad-event"}},
		{"unknown notification, twice", []string{
			`{"method":"thread/hologram","params":{}}`, `{"method":"thread/hologram","params":{}}`,
		}, []string{"diagnostic unknown-event"}},
		{"quiet notifications", []string{
			`{"method":"thread/status/changed","params":{"threadId":"th","status":{"type":"idle"}}}`,
			`{"method":"account/rateLimits/updated","params":{"rateLimits":{}}}`,
			`{"method":"item/completed","params":{"threadId":"th","turnId":"t1","item":{"type":"userMessage","id":"u","content":[]}}}`,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := agenttest.Parse(t, Agent{}, agenttest.Lines(tt.lines...)...)
			if diff := cmp.Diff(tt.want, agenttest.DescribeAll(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// peer is the Codex side of a driver's conversation: what the driver
// writes, line by line.
type peer struct {
	t     *testing.T
	d     *Driver
	wrote chan map[string]any
}

func newPeer(t *testing.T, c *agent.Continuation) *peer {
	t.Helper()
	d := Agent{}.NewDriver(nil, eventstore.ShapeConversation).(*Driver)
	if c != nil {
		if err := d.Continue(*c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Output("p"); err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, d: d, wrote: make(chan map[string]any, 16)}
	d.Converse(agent.Conversation{Dir: "/work", Write: func(b []byte) error {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || !strings.HasSuffix(string(b), "\n") {
			t.Errorf("the driver wrote %q, want one JSON object and a line feed", b)
		}
		p.wrote <- m
		return nil
	}, Note: func(code, message string) {}, EndTurn: func(bool, string) {}, Status: func(string, string) {}})
	t.Cleanup(d.Hangup)
	return p
}

// next is the next message the driver wrote; it must have the method.
func (p *peer) next(method string) map[string]any {
	p.t.Helper()
	select {
	case m := <-p.wrote:
		if got, _ := m["method"].(string); got != method {
			p.t.Fatalf("the driver wrote %v, want %s", m, method)
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatalf("the driver wrote nothing; want %s", method)
	}
	return nil
}

// reply answers the request m with result, as Codex's line.
func (p *peer) reply(m map[string]any, result string) {
	id, _ := json.Marshal(m["id"])
	p.d.Parse([]byte(`{"id":` + string(id) + `,"result":` + result + `}`))
}

// open runs the handshake up to the thread request, which it returns.
func (p *peer) open(method string) map[string]any {
	p.t.Helper()
	p.reply(p.next("initialize"), `{"userAgent":"codex"}`)
	p.next("initialized")
	req := p.next(method)
	p.reply(req, `{"thread":{"id":"th-new"}}`)
	return req
}

func message(typ, text, requestID string) *eventstore.MessageAccepted {
	payload, _ := json.Marshal(map[string]string{"text": text, "requestId": requestID})
	return &eventstore.MessageAccepted{MessageID: "m", MessageType: typ, Payload: payload}
}

// TestCodexAppHandshake: a new execution starts a thread in its working
// directory under the policy; a resume resumes the thread, a fork forks it
// through the turn it is forked at.
func TestCodexAppHandshake(t *testing.T) {
	tests := []struct {
		name   string
		cont   *agent.Continuation
		method string
		want   map[string]any
	}{
		{"new", nil, "thread/start", map[string]any{"cwd": "/work", "approvalPolicy": "on-request", "sandbox": "workspace-write"}},
		{"resume", &agent.Continuation{Session: "th-1"}, "thread/resume",
			map[string]any{"cwd": "/work", "approvalPolicy": "on-request", "sandbox": "workspace-write", "threadId": "th-1"}},
		{"fork", &agent.Continuation{Session: "th-1", Fork: true, At: "turn-1"}, "thread/fork",
			map[string]any{"cwd": "/work", "approvalPolicy": "on-request", "sandbox": "workspace-write", "threadId": "th-1", "lastTurnId": "turn-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPeer(t, tt.cont)
			req := p.open(tt.method)
			if diff := cmp.Diff(tt.want, req["params"]); diff != "" {
				t.Errorf("%s params (-want +got):\n%s", tt.method, diff)
			}
		})
	}
}

// TestCodexAppEncode: a prompt between turns is turn/start; one during a
// turn is turn/steer naming the turn, and turn/start when Codex refuses
// the steer; an answer is the decision its words mean; an interrupt is
// turn/interrupt.
func TestCodexAppEncode(t *testing.T) {
	p := newPeer(t, nil)
	p.open("thread/start")
	deliver := func(m *eventstore.MessageAccepted) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, ok, err := p.d.Encode(m)
			if err == nil && !ok {
				t.Errorf("Encode(%s) did not deliver", m.MessageType)
			}
			done <- err
		}()
		return done
	}
	wait := func(done <-chan error) {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatalf("Encode: %v", err)
		}
	}

	done := deliver(message("prompt", "First", ""))
	start := p.next("turn/start")
	if diff := cmp.Diff(map[string]any{"threadId": "th-new", "input": []any{map[string]any{"type": "text", "text": "First"}}}, start["params"]); diff != "" {
		t.Errorf("turn/start params (-want +got):\n%s", diff)
	}
	p.reply(start, `{"turn":{"id":"t1","status":"inProgress","items":[]}}`)
	wait(done)

	done = deliver(message("prompt", "Also this", ""))
	steer := p.next("turn/steer")
	if diff := cmp.Diff(map[string]any{"threadId": "th-new", "expectedTurnId": "t1", "input": []any{map[string]any{"type": "text", "text": "Also this"}}}, steer["params"]); diff != "" {
		t.Errorf("turn/steer params (-want +got):\n%s", diff)
	}
	p.reply(steer, `{"turnId":"t1"}`)
	wait(done)

	for _, tt := range []struct{ answer, decision string }{{"allow", "accept"}, {"allow-always", "acceptForSession"}, {"deny", "decline"}, {"not now", "decline"}} {
		p.d.Parse([]byte(`{"method":"item/commandExecution/requestApproval","id":7,"params":{"threadId":"th-new","turnId":"t1","itemId":"call_1","command":"touch x"}}`))
		wait(deliver(message("answer", tt.answer, "call_1")))
		select {
		case m := <-p.wrote:
			if diff := cmp.Diff(map[string]any{"id": float64(7), "result": map[string]any{"decision": tt.decision}}, m); diff != "" {
				t.Errorf("answer %q (-want +got):\n%s", tt.answer, diff)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("answer %q wrote nothing", tt.answer)
		}
	}
	if err := <-deliver(message("answer", "allow", "call_1")); err == nil {
		t.Errorf("a second answer to an answered request was delivered, want an error")
	}

	done = deliver(message("interrupt", "", ""))
	in := p.next("turn/interrupt")
	if diff := cmp.Diff(map[string]any{"threadId": "th-new", "turnId": "t1"}, in["params"]); diff != "" {
		t.Errorf("turn/interrupt params (-want +got):\n%s", diff)
	}
	p.reply(in, `{}`)
	wait(done)

	// The turn ended as the steer went out: Codex refuses it, and the
	// message starts a turn of its own.
	done = deliver(message("prompt", "Late", ""))
	steer = p.next("turn/steer")
	p.d.Parse([]byte(`{"method":"turn/completed","params":{"threadId":"th-new","turn":{"id":"t1","status":"interrupted","items":[]}}}`))
	id, _ := json.Marshal(steer["id"])
	p.d.Parse([]byte(`{"id":` + string(id) + `,"error":{"code":-32600,"message":"no active turn to steer"}}`))
	start = p.next("turn/start")
	p.reply(start, `{"turn":{"id":"t2","status":"inProgress","items":[]}}`)
	wait(done)

	p.d.Parse([]byte(`{"method":"turn/completed","params":{"threadId":"th-new","turn":{"id":"t2","status":"completed","items":[]}}}`))
	if err := <-deliver(message("interrupt", "", "")); err == nil {
		t.Errorf("an interrupt between turns was delivered, want an error")
	}
}
