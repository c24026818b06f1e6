package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
	"github.com/agentjournal/agentjournal/terminal"
)

// outputRig is a runtime that keeps plain output, with a limit of limit
// bytes a file.
func outputRig(t *testing.T, limit int64) (*rig, string) {
	t.Helper()
	data := t.TempDir()
	out := filepath.Join(data, "agent-output")
	return storeRig(t, runtime.Config{StopGrace: time.Second, Terminals: terminal.NewRegistry(nil),
		RecordingDir: filepath.Join(data, "terminal-recordings"), OutputDir: out, OutputLimit: limit}), out
}

// kept reads an execution's kept lines as "stream line", per stream: the
// order between the two streams is the order the runtime read them in.
func kept(t *testing.T, dir, id string) map[string][]string {
	t.Helper()
	p, err := outputlog.Read(dir, id, 1, 100000, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for i, e := range p.Entries {
		if e.N != uint64(i+1) {
			t.Errorf("entry %d is numbered %d", i+1, e.N)
		}
		got[e.Stream] = append(got[e.Stream], e.Line)
	}
	return got
}

// A generic agent's output is kept but for its markers: a marker with the
// right nonce, one with a wrong nonce and a malformed one are journaled.
func TestPlainOutputOfAGenericAgentIsKept(t *testing.T) {
	r, dir := outputRig(t, 0)
	ref := r.launch(t, "say:starting", "err:warning: low disk",
		`signal:{"type":"status","payload":{"summary":"a marker"}}`,
		`badnonce:{"type":"status","payload":{"summary":"a forged marker"}}`,
		"say:\x1b[2Jdone", "err:fatal: cannot continue", "exit:3")
	st := r.wait(t, ref)
	if st.Lifecycle != eventstore.LifecycleFailed {
		t.Fatalf("lifecycle %s, want failed", st.Lifecycle)
	}
	want := map[string][]string{
		outputlog.Stdout: {"starting", "\x1b[2Jdone"},
		outputlog.Stderr: {"warning: low disk", "fatal: cannot continue"},
	}
	if diff := cmp.Diff(want, kept(t, dir, ref.AgentExecutionID)); diff != "" {
		t.Errorf("kept output (-want +got):\n%s", diff)
	}
}

// An agent CLI's provider events are journaled and not kept; the lines of
// its stdout that are not JSON, and its stderr, are.
func TestPlainOutputOfAProviderAgentIsKept(t *testing.T) {
	r, dir := outputRig(t, 0)
	capture := filepath.Join(t.TempDir(), "capture.ndjson")
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s-1","model":"m","tools":[]}`,
		`npm warn deprecated something@1.0.0`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hello"}]},"parent_tool_use_id":null,"session_id":"s-1","uuid":"u-1"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"hello","session_id":"s-1","usage":{"input_tokens":1,"output_tokens":1}}`,
	}
	if err := os.WriteFile(capture, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "claude-code", Command: []string{r.agent, "err:Error: rate limited", "replay:" + capture}, Prompt: "go", Shape: eventstore.ShapeOneShot})
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	want := map[string][]string{
		outputlog.Stdout: {"npm warn deprecated something@1.0.0"},
		outputlog.Stderr: {"Error: rate limited"},
	}
	if diff := cmp.Diff(want, kept(t, dir, ref.AgentExecutionID)); diff != "" {
		t.Errorf("kept output (-want +got):\n%s", diff)
	}
	var messages int
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage {
			messages++
		}
	}
	if messages != 1 {
		t.Errorf("%d message observations, want the assistant's one journaled", messages)
	}
}

// An agent that prints far more than the limit leaves two files within
// it, holding the newest lines.
func TestKeptOutputIsRotated(t *testing.T) {
	const limit = 16 << 10
	r, dir := outputRig(t, limit)
	ref := r.launch(t, "flood:500000", "say:the last words")
	r.wait(t, ref)
	cur, old, _ := outputlog.Paths(dir, ref.AgentExecutionID)
	for _, path := range []string{cur, old} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > limit {
			t.Errorf("%s is %d bytes, want at most %d", filepath.Base(path), info.Size(), limit)
		}
	}
	p, err := outputlog.Tail(dir, ref.AgentExecutionID, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	// 500000 bytes in 100-byte lines, and the last one.
	const written = 5000 + 1
	if len(p.Entries) != 2 || p.Last != written || p.Entries[1].Line != "the last words" {
		t.Fatalf("the newest lines are %+v (last %d), want line %d to be the last words", p.Entries, p.Last, written)
	}
	if p.First < written-500 || p.First > written-100 {
		t.Errorf("the oldest kept line is %d, want the last 100 to 500 of %d", p.First, written)
	}
}

// A terminal lane's output is in its recording; nothing is kept twice.
func TestTerminalLaneOutputIsNotKept(t *testing.T) {
	r, dir := outputRig(t, 0)
	ref := r.launchAs(t, eventstore.PostureStructuredInteractive, "say:on the terminal", "err:also on the terminal")
	r.wait(t, ref)
	cur, _, _ := outputlog.Paths(dir, ref.AgentExecutionID)
	if _, err := os.Stat(cur); !os.IsNotExist(err) {
		data, _ := os.ReadFile(cur)
		t.Errorf("a terminal lane's output was kept: %v %s", err, data)
	}
	if got := fmt.Sprint(kept(t, dir, ref.AgentExecutionID)); got != "map[]" {
		t.Errorf("kept %s, want nothing", got)
	}
}
