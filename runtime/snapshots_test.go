package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/workspace"
)

// newSnapshotRig is a rig whose runtime takes workspace snapshots.
func newSnapshotRig(t *testing.T) *rig {
	t.Helper()
	return storeRig(t, runtime.Config{StopGrace: 5 * time.Second, Snapshots: true})
}

// launchShell launches a generic agent that runs script with sh in dir.
func launchShell(t *testing.T, r *rig, ownerID, dir, script string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: ownerID,
		Agent: "generic", Command: []string{"sh", "-c", script}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// waitCompleted waits for the execution's end and fails the test unless
// it completed.
func waitCompleted(t *testing.T, r *rig, ref eventstore.Reference) {
	t.Helper()
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
}

func snapshotRecords(t *testing.T, r *rig, ref eventstore.Reference) []*eventstore.SnapshotCreated {
	t.Helper()
	var out []*eventstore.SnapshotCreated
	for _, rec := range r.records(t, ref) {
		if s, ok := rec.(*eventstore.SnapshotCreated); ok {
			out = append(out, s)
		}
	}
	return out
}

func diagnostics(t *testing.T, r *rig, ref eventstore.Reference, code string) []*eventstore.DiagnosticSignal {
	t.Helper()
	var out []*eventstore.DiagnosticSignal
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok && d.Code == code {
				out = append(out, d)
			}
		}
	}
	return out
}

// restoredStates restores every snapshot and returns the files of each,
// dropping a state equal to the one before it.
func restoredStates(t *testing.T, dir string, snaps []*eventstore.SnapshotCreated) []map[string]string {
	t.Helper()
	var states []map[string]string
	var last uint64
	for i, s := range snaps {
		if s.AtSequence <= last {
			t.Errorf("snapshot %d at sequence %d after one at %d, want increasing", i, s.AtSequence, last)
		}
		last = s.AtSequence
		if want := workspace.RefPrefix; !strings.HasPrefix(s.Ref, want) || s.Resource != dir {
			t.Errorf("snapshot %d: ref %s of %s, want under %s of %s", i, s.Ref, s.Resource, want, dir)
		}
		dst := filepath.Join(t.TempDir(), "fork")
		got, err := workspace.Restore(context.Background(), workspace.ModeSnapshot, dir, s.Commit, dst)
		if err != nil {
			t.Fatalf("restore snapshot %d (%s): %v", i, s.Ref, err)
		}
		files := map[string]string{}
		for name, f := range fixtures.ReadTree(t, got) {
			files[name] = f.Content
		}
		if len(states) == 0 || cmp.Diff(states[len(states)-1], files) != "" {
			states = append(states, files)
		}
	}
	return states
}

// A generic agent has no turns: its snapshots are taken before it starts
// and when its process ends, and each restores exactly the files then.
func TestSnapshotsOfAGenericAgent(t *testing.T) {
	r := newSnapshotRig(t)
	initial := map[string]string{"kept.txt": "kept\n", "gone.txt": "gone\n"}
	dir := fixtures.GitRepo(t, initial)
	fixtures.WriteFiles(t, dir, map[string]string{"untracked.txt": "before\n"})
	script := `read l; echo one > a.txt; rm gone.txt; read l; echo two > a.txt; echo new > b.txt; echo done`
	ref := launchShell(t, r, "t-1", dir, script)
	for _, text := range []string{"first", "second"} {
		payload, _ := json.Marshal(map[string]string{"text": text})
		if _, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt",
			Source: eventstore.SourceOperator, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	waitCompleted(t, r, ref)
	snaps := snapshotRecords(t, r, ref)
	if len(snaps) != 2 {
		t.Fatalf("%d snapshot records, want 2 (start, exit): %+v", len(snaps), snaps)
	}
	want := []map[string]string{
		{"kept.txt": "kept\n", "gone.txt": "gone\n", "untracked.txt": "before\n"},
		{"kept.txt": "kept\n", "untracked.txt": "before\n", "a.txt": "two\n", "b.txt": "new\n"},
	}
	if diff := cmp.Diff(want, restoredStates(t, dir, snaps)); diff != "" {
		t.Errorf("restored files (-want +got):\n%s", diff)
	}
	end := snaps[1]
	if end.Added != 3 || end.Deleted != 1 || end.Modified != 0 || end.Files != 4 {
		t.Errorf("exit snapshot counts files %d added %d modified %d deleted %d, want 4, 3, 0, 1 (against HEAD)", end.Files, end.Added, end.Modified, end.Deleted)
	}
	// The user's index is untouched: git status still shows the agent's
	// work as unstaged and untracked.
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), " D gone.txt\n?? a.txt\n?? b.txt\n?? untracked.txt\n"; got != want {
		t.Errorf("git status:\n%s\nwant:\n%s", got, want)
	}
}

// An agent with turns is snapshotted at the start and at each turn end;
// the next turn starts only once the last turn's files are captured.
func TestSnapshotsAtTurnEnds(t *testing.T) {
	r := newSnapshotRig(t)
	dir := fixtures.GitRepo(t, map[string]string{"a.txt": "zero\n", "c.txt": "c\n"})
	result := `{"type":"result","subtype":"success","result":"ok"}`
	script := `read l; echo one > a.txt; echo '` + result + `'; read l; echo two > a.txt; echo new > b.txt; rm c.txt; echo '` + result + `'; read l; exit 0`
	// The adapter puts its flags after the program: a script file ignores
	// them.
	program := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(program, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-2",
		Agent: "claude-code", Command: []string{program}, Dir: dir, Prompt: "first"})
	if err != nil {
		t.Fatal(err)
	}
	turnEnded := func(n int) {
		waitFor(t, func() bool {
			st := r.replay(t, ref)
			return st.Attention == eventstore.AttentionAwaitingOperator && len(snapshotRecords(t, r, ref)) >= n+1
		})
	}
	turnEnded(1)
	payload, _ := json.Marshal(map[string]string{"text": "second"})
	if _, err := r.rt.SendMessage(context.Background(), ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt",
		Source: eventstore.SourceOperator, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	turnEnded(2)
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, r, ref)
	want := []map[string]string{
		{"a.txt": "zero\n", "c.txt": "c\n"},
		{"a.txt": "one\n", "c.txt": "c\n"},
		{"a.txt": "two\n", "b.txt": "new\n"},
	}
	if diff := cmp.Diff(want, restoredStates(t, dir, snapshotRecords(t, r, ref))); diff != "" {
		t.Errorf("restored files at start, turn 1, turn 2 (-want +got):\n%s", diff)
	}
	refs, err := workspace.List(context.Background(), dir, ref.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(snapshotRecords(t, r, ref)) {
		t.Errorf("%d refs in the repository, want one per snapshot record (%d)", len(refs), len(snapshotRecords(t, r, ref)))
	}
}

// Outside a git work tree there are no snapshots, one diagnostic saying
// so, and the execution runs as usual.
func TestNoSnapshotsOutsideAWorkTree(t *testing.T) {
	r := newSnapshotRig(t)
	dir := t.TempDir()
	ref := launchShell(t, r, "t-3", dir, "echo x > a.txt; echo done")
	waitCompleted(t, r, ref)
	if n := len(snapshotRecords(t, r, ref)); n != 0 {
		t.Errorf("%d snapshot records outside a work tree, want 0", n)
	}
	if d := diagnostics(t, r, ref, runtime.CodeSnapshotsUnsupported); len(d) != 1 || !strings.Contains(d[0].Message, "not in a git work tree") {
		t.Errorf("diagnostics %s: %+v, want one saying the directory is not in a git work tree", runtime.CodeSnapshotsUnsupported, d)
	}
	if d := diagnostics(t, r, ref, runtime.CodeSnapshotFailed); len(d) != 0 {
		t.Errorf("snapshot failures %+v, want none", d)
	}
}

// A snapshot that cannot be written is a diagnostic; the execution
// completes.
func TestSnapshotFailureIsADiagnostic(t *testing.T) {
	r := newSnapshotRig(t)
	dir := fixtures.GitRepo(t, map[string]string{"a.txt": "a\n"})
	// A file where the snapshot refs' directory should be: no ref can be
	// created under it, whoever runs the test.
	if err := os.WriteFile(filepath.Join(dir, ".git", "refs", "agentjournal"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	ref := launchShell(t, r, "t-4", dir, "echo b > b.txt; echo done")
	waitCompleted(t, r, ref)
	if n := len(snapshotRecords(t, r, ref)); n != 0 {
		t.Errorf("%d snapshot records, want 0", n)
	}
	d := diagnostics(t, r, ref, runtime.CodeSnapshotFailed)
	if len(d) != 2 {
		t.Fatalf("%d %s diagnostics, want 2 (start, exit): %+v", len(d), runtime.CodeSnapshotFailed, d)
	}
	if !strings.Contains(d[0].Message, "snapshot at start") || !strings.Contains(d[1].Message, "snapshot at exit") {
		t.Errorf("diagnostics %q, %q; want them to name the start and the exit", d[0].Message, d[1].Message)
	}
}

// Snapshots off: nothing is snapshotted or said, even in a work tree.
func TestSnapshotsOff(t *testing.T) {
	r := newRig(t, time.Second)
	dir := fixtures.GitRepo(t, map[string]string{"a.txt": "a\n"})
	ref := launchShell(t, r, "t-5", dir, "echo b > b.txt")
	r.wait(t, ref)
	if n := len(snapshotRecords(t, r, ref)); n != 0 {
		t.Errorf("%d snapshot records with snapshots off, want 0", n)
	}
	if refs, err := workspace.List(context.Background(), dir); err != nil || len(refs) != 0 {
		t.Errorf("refs %v (%v), want none", refs, err)
	}
}
