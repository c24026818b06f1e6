package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/narrative"
	"github.com/agentjournal/agentjournal/supervisor"
)

// TestDispatchedRunResumedAfterDaemonKill is the runtime contract's (004)
// acceptance case: a run dispatched from another product, interrupted by
// its daemon's SIGKILL (with the agent: the machine went down), is resumed
// without losing audit continuity: the same session, a new run, the
// interruption told by the session's narrative and recorded on the
// interrupted run, its todos and its checkpoint still readable, all from
// the journals alone.
func TestDispatchedRunResumedAfterDaemonKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A Claude Code turn that plans, then hangs before its result: the
	// capture's first four lines (init with the session id, a message, a
	// TodoWrite and its result), then a sleep the power cut ends.
	capture, err := os.ReadFile(filepath.Join("..", "..", "runtime", "claude", "testdata", "real", "todo.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(capture), "\n")
	partial := filepath.Join(dir, "partial.jsonl")
	if err := os.WriteFile(partial, []byte(strings.Join(lines[:4], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	fixtures.KillSupervised(t, filepath.Join(dir, "data"))
	d := startDaemon(t, "acc", filepath.Join(dir, "data"), nil)
	defer d.stop()
	initiated := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	code, out, err := d.do("POST", "/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-acc", "agent": "claude-code",
		"shape": "one-shot", "prompt": "write the file\nthen run the tests",
		"command":         []string{fixtures.AgentBinary(t), "replay:" + partial, "sleep:5m"},
		"dispatchContext": map[string]any{"originSurface": "web", "originProductId": "acme-console", "dispatchMode": "remote", "initiatedAt": initiated}})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("launch: %d %v %s", code, err, out)
	}
	var launched client.Launched
	if err := json.Unmarshal(out, &launched); err != nil {
		t.Fatal(err)
	}
	first := launched.Reference.AgentExecutionID
	pollUntil(t, procConvergeWait, "the plan journaled", func() (bool, string) {
		var todos struct{ Todos []contract.AgentTodo }
		d.get(t, "/v1/executions/"+first+"/todos", &todos)
		var kinds []string
		for _, r := range d.records(t, first) {
			kinds = append(kinds, r.Type+" "+r.Reason)
		}
		return len(todos.Todos) == 2, strings.Join(kinds, "; ")
	})

	code, out, err = d.do("POST", "/v1/executions/"+first+"/checkpoints", map[string]any{"id": "before-the-cut"})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("checkpoint: %d %v %s", code, err, out)
	}

	// The machine goes down: the daemon, and the agent with the
	// supervisor that would have kept it running across a daemon restart.
	d.kill()
	killSupervisedNow(t, filepath.Join(dir, "data"))
	d.restart()
	var run contract.AgentRun
	pollUntil(t, procConvergeWait, "the interrupted run ended", func() (bool, string) {
		d.get(t, "/v1/executions/"+first+"/run", &run)
		return run.Status.Final(), string(run.Status)
	})
	if run.Status != eventstore.RunFailed || run.Interruption != string(eventstore.InterruptSystemRestart) || run.Lifecycle != eventstore.LifecycleTerminated {
		t.Fatalf("interrupted run %+v, want failed by system_restart", run)
	}

	code, out, err = d.do("POST", "/v1/executions/"+first+"/resume", map[string]any{"prompt": "go on"})
	if err != nil || code != http.StatusCreated {
		t.Fatalf("resume: %d %v %s", code, err, out)
	}
	if err := json.Unmarshal(out, &launched); err != nil {
		t.Fatal(err)
	}
	second := launched.Reference.AgentExecutionID
	var sess client.Session
	pollUntil(t, procConvergeWait, "the resumed run in the session", func() (bool, string) {
		d.get(t, "/v1/sessions/"+first, &sess)
		return len(sess.Runs) == 2, "runs"
	})
	s := sess.Session
	if s.SessionID != first || s.RunIDs[0] != first || s.RunIDs[1] != second || sess.Runs[1].Resumes != first ||
		sess.Runs[1].SessionID != first || second == first {
		t.Fatalf("session %+v runs %+v: want the resumed run second in the same session", s, sess.Runs)
	}
	if d := s.DispatchContext; s.ProductID != "acme-console" || d == nil || d.OriginSurface != "web" || d.DispatchMode != "remote" || d.InitiatedAt != initiated || !s.Resumable {
		t.Errorf("session product %q dispatch %+v resumable %v", s.ProductID, d, s.Resumable)
	}
	if len(sess.Todos) < 2 || sess.Todos[0].Text != "Write the file" || sess.Todos[0].SessionID != first {
		t.Errorf("todos %+v", sess.Todos)
	}
	var cut *contract.AgentCheckpoint
	for i, cp := range sess.Checkpoints {
		if cp.CheckpointID == "before-the-cut" {
			cut = &sess.Checkpoints[i]
		}
	}
	if cut == nil || cut.RunID != first || cut.StatusAtCapture != eventstore.RunRunning || cut.ResumeToken == nil ||
		*cut.ResumeToken != "8a243273-2810-4ecd-994a-3c74139616b3" || len(cut.TodoIDs) != 2 || cut.StateSummary.Title != "write the file" {
		t.Errorf("checkpoint before the cut: %+v", cut)
	}

	// The narrative of the session, from the journals alone, tells the
	// interruption between the runs.
	code, out, err = d.do("GET", "/v1/sessions/"+first+"/narrative?format=json", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("narrative: %d %v %s", code, err, out)
	}
	var n narrative.Narrative
	if err := json.Unmarshal(out, &n); err != nil {
		t.Fatal(err)
	}
	if len(n.Runs) != 2 || len(n.Between) != 1 || !strings.Contains(n.Between[0].Text, "system_restart") {
		t.Fatalf("session narrative: %d runs, between %+v: want the interruption told between them", len(n.Runs), n.Between)
	}
	told := false
	for _, l := range n.Runs[0].Lines {
		told = told || (l.Section == narrative.Interruption && l.Marker == narrative.Observed && strings.Contains(l.Text, "system_restart"))
	}
	if !told {
		t.Errorf("the first run's narrative has no observed interruption line: %+v", n.Runs[0].Lines)
	}
	if code, _, _ := d.do("POST", "/v1/executions/"+second+"/stop", map[string]any{}); code != http.StatusOK {
		t.Errorf("stop the resumed run: %d", code)
	}
}

// killSupervisedNow kills with SIGKILL every agent left under a supervisor
// on dataDir and its supervisor, as a power cut would.
func killSupervisedNow(t *testing.T, dataDir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(daemon.Layout{Dir: dataDir}.Supervised(), "*", "pids.json"))
	if len(paths) == 0 {
		t.Fatalf("no supervised agent under %s", dataDir)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var pids struct {
			Supervisor int `json:"supervisor"`
			Agent      int `json:"agent"`
		}
		if err := json.Unmarshal(data, &pids); err != nil || pids.Agent <= 0 || pids.Supervisor <= 0 {
			t.Fatalf("%s: %s (%v)", path, data, err)
		}
		// The supervisor first, so that it cannot record the agent's
		// death as an exit of its own.
		_ = syscall.Kill(pids.Supervisor, syscall.SIGKILL)
		_ = syscall.Kill(-pids.Agent, syscall.SIGKILL)
		// A kill is delivered, not done: until the supervisor has exited
		// it holds its lock, and a daemon started meanwhile attaches to it
		// and then sees it die (a crash, not the machine going down).
		waitLockReleased(t, filepath.Dir(path))
	}
}

// waitLockReleased waits until the supervisor of state directory dir no
// longer holds its lock: what a restarted daemon asks before it attaches.
func waitLockReleased(t *testing.T, dir string) {
	t.Helper()
	h, err := supervisor.Attach(dir)
	if err != nil && !errors.Is(err, supervisor.ErrLost) {
		t.Fatal(err)
	}
	defer h.Close()
	deadline := time.Now().Add(30 * time.Second)
	for h.Alive() {
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor in %s held its lock 30s after SIGKILL", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
