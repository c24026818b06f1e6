package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/workspace"
)

const (
	answer1 = `signal:{"type":"message","payload":{"text":"answer one"}}`
	answer2 = `signal:{"type":"message","payload":{"text":"answer two"}}`
)

// newForkRig is a rig whose runtime has a directory for forks' workspaces.
func newForkRig(t *testing.T) (*rig, string) {
	t.Helper()
	r := newRig(t, 5*time.Second)
	dataDir := t.TempDir()
	r.rt = startRuntime(t, runtime.Config{Store: r.store, StopGrace: 5 * time.Second, WorkspaceDir: dataDir})
	return r, dataDir
}

// twoTurns runs a generic fixture conversation of two turns in dir: prompt
// one, answer one, prompt two, answer two; it returns the parent and the
// sequence of answer one.
func twoTurns(t *testing.T, r *rig, dir string) (eventstore.Reference, uint64) {
	t.Helper()
	ctx := context.Background()
	ref, err := r.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1", Agent: "generic",
		Command: []string{r.agent, "echo:1", answer1, "echo:1", answer2}, Prompt: "prompt one", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var at uint64
	waitFor(t, func() bool {
		at = seqOfMessage(t, r, ref, "answer one")
		return at > 0
	})
	payload, _ := json.Marshal(map[string]string{"text": "prompt two"})
	if _, err := r.rt.SendMessage(ctx, ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Source: eventstore.SourceOperator, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("parent lifecycle %s, want completed", st.Lifecycle)
	}
	if seqOfMessage(t, r, ref, "answer two") == 0 {
		t.Fatal("the parent's second answer is not in its journal")
	}
	ref, err = r.store.Lookup(ctx, ref.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	return ref, at
}

// seqOfMessage is the sequence of the agent message with text, 0 if none.
func seqOfMessage(t *testing.T, r *rig, ref eventstore.Reference, text string) uint64 {
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if m, ok := o.Signal.Payload.(*eventstore.MessageSignal); ok && m.Text == text {
				return o.Sequence
			}
		}
	}
	return 0
}

func firstPrompt(t *testing.T, r *rig, ref eventstore.Reference) string {
	t.Helper()
	for _, rec := range r.records(t, ref) {
		if m, ok := rec.(*eventstore.MessageAccepted); ok && m.MessageType == "prompt" {
			var p struct{ Text string }
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatal(err)
			}
			return p.Text
		}
	}
	t.Fatalf("%s has no prompt", ref.AgentExecutionID)
	return ""
}

func header(t *testing.T, r *rig, ref eventstore.Reference) *eventstore.Header {
	t.Helper()
	h, ok := r.records(t, ref)[0].(*eventstore.Header)
	if !ok {
		t.Fatalf("%s starts without a header", ref.AgentExecutionID)
	}
	return h
}

// inOrder reports whether every part is in s, in the order given.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func TestForkReconstructed(t *testing.T) {
	r, dataDir := newForkRig(t)
	ctx := context.Background()
	parent, at := twoTurns(t, r, t.TempDir())

	ref, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at, Workspace: workspace.ModeDiscard, Prompt: "prompt three"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.rt.Stop(ctx, ref.AgentExecutionID)
	h := header(t, r, ref)
	atRecord := r.records(t, parent)[at-1]
	eid, _ := eventstore.EventID(atRecord)
	want := eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: at, EventID: eid, History: eventstore.HistoryReconstructed}
	if h.ForkedFrom == nil || *h.ForkedFrom != want {
		t.Fatalf("forkedFrom %+v, want %+v", h.ForkedFrom, want)
	}
	if ph := header(t, r, parent); !slices.Equal(h.Command, ph.Command) || h.AgentID != ph.AgentID || len(h.Command) == 0 {
		t.Errorf("fork runs %s %q, want the parent's %s %q", h.AgentID, h.Command, ph.AgentID, ph.Command)
	}
	if want := filepath.Join(workspace.WorktreeRoot(dataDir), ref.AgentExecutionID); h.WorkingDirectory != want {
		t.Errorf("fork's directory %s, want a new one %s", h.WorkingDirectory, want)
	}
	if entries, err := os.ReadDir(h.WorkingDirectory); err != nil || len(entries) != 0 {
		t.Errorf("fork's directory: %v entries, %v; want empty", len(entries), err)
	}
	// What the agent got: the conversation up to the fork point, then
	// the new prompt, and nothing after the point.
	got := firstPrompt(t, r, ref)
	if !inOrder(got, "prompt one", "answer one", "prompt three") || strings.Contains(got, "prompt two") || strings.Contains(got, "answer two") {
		t.Errorf("fork's first message:\n%s\nwant prompt one, answer one, prompt three and nothing of turn two", got)
	}
	// The fork holds only its own records; replay through the link shows
	// the prefix.
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && rec.RecordBase().Sequence < 3 {
			t.Errorf("fork's journal copies a parent record: %+v", rec.RecordBase())
		}
	}
	st, err := execution.ReplayLineage(ctx, r.store, ref)
	if err != nil {
		t.Fatal(err)
	}
	var inherited []string
	for _, it := range st.Timeline {
		if it.Inherited && (it.Kind == execution.ItemMessage || it.Kind == execution.ItemChat) {
			inherited = append(inherited, it.Text)
		}
	}
	if !slices.Equal(inherited, []string{"prompt one", "answer one"}) {
		t.Errorf("inherited timeline %q, want [prompt one answer one]", inherited)
	}
}

func TestResumeReconstructed(t *testing.T) {
	r, _ := newForkRig(t)
	ctx := context.Background()
	dir := t.TempDir()
	parent, _ := twoTurns(t, r, dir)
	before := header(t, r, parent)
	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "prompt three"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.rt.Stop(ctx, ref.AgentExecutionID)
	h := header(t, r, ref)
	if h.Resumes == nil || h.Resumes.AgentExecutionID != parent.AgentExecutionID || h.Resumes.History != eventstore.HistoryReconstructed {
		t.Fatalf("resumes %+v, want %s reconstructed", h.Resumes, parent.AgentExecutionID)
	}
	if h.SessionID != before.Session() || h.WorkingDirectory != dir || ref.AgentExecutionID == parent.AgentExecutionID {
		t.Errorf("resume: session %s dir %s id %s; want session %s, dir %s, a new id", h.SessionID, h.WorkingDirectory, ref.AgentExecutionID, before.Session(), dir)
	}
	if got := firstPrompt(t, r, ref); !inOrder(got, "prompt one", "answer one", "prompt two", "answer two", "prompt three") {
		t.Errorf("resumed run's first message:\n%s\nwant the whole session then prompt three", got)
	}
	if st := r.replay(t, parent); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Errorf("resumed execution's lifecycle %s, want it untouched (completed)", st.Lifecycle)
	}
}

func TestForkBadInput(t *testing.T) {
	r, dataDir := newForkRig(t)
	ctx := context.Background()
	plain := t.TempDir()
	parent, at := twoTurns(t, r, plain)
	repo, inRepo, atRepo := snapshotTwoTurns(t, r, "one")
	if _, err := workspace.Prune(ctx, repo, workspace.Filter{ExecutionID: inRepo.AgentExecutionID}); err != nil {
		t.Fatal(err)
	}
	running, err := r.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1", Agent: "generic",
		Command: []string{r.agent, "wait"}, Dir: plain})
	if err != nil {
		t.Fatal(err)
	}
	defer r.rt.Stop(ctx, running.AgentExecutionID)

	journals := func() []string {
		all, err := r.store.Journals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range all {
			ids = append(ids, j.AgentExecutionID)
		}
		slices.Sort(ids)
		return ids
	}
	before := journals()
	for _, tc := range []struct {
		name   string
		fork   *runtime.ForkRequest
		resume *runtime.ResumeRequest
		is     error
		says   string
		// field is the ForkError's field ("!" for a conflict); "" for
		// none.
		field string
		// journaled is the restore outcome of a refusal journaled as a
		// failed fork; "" when nothing is journaled.
		journaled eventstore.RestoreOutcome
	}{
		{name: "past the end", fork: &runtime.ForkRequest{Parent: parent.AgentExecutionID, At: parent.LastSequence + 1, Prompt: "p"},
			is: runtime.ErrBadFork, says: "want 1 to", field: "at"},
		{name: "sequence zero", fork: &runtime.ForkRequest{Parent: parent.AgentExecutionID, Prompt: "p"}, is: runtime.ErrBadFork, says: "want 1 to", field: "at"},
		{name: "no such journal", fork: &runtime.ForkRequest{Parent: "ae-00000000000000000000000000", At: 1, Prompt: "p"}, is: eventstore.ErrJournalNotFound},
		{name: "unknown workspace mode", fork: &runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at, Workspace: "copy", Prompt: "p"},
			is: runtime.ErrBadFork, says: "keep, snapshot, discard", field: "workspace"},
		{name: "snapshot of a plain directory", fork: &runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at, Workspace: workspace.ModeSnapshot, Prompt: "p"},
			is: runtime.ErrBadFork, says: "keep or discard", field: "workspace", journaled: eventstore.RestoreUnsupported},
		{name: "pruned snapshot", fork: &runtime.ForkRequest{Parent: inRepo.AgentExecutionID, At: atRepo, Workspace: workspace.ModeSnapshot, Prompt: "p"},
			is: runtime.ErrBadFork, says: "pruned", field: "workspace", journaled: eventstore.RestoreMissing},
		{name: "reconstructed without a prompt", fork: &runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at},
			is: runtime.ErrBadFork, says: "needs a prompt", field: "prompt"},
		{name: "resume of a running execution", resume: &runtime.ResumeRequest{Execution: running.AgentExecutionID, Prompt: "p"},
			is: runtime.ErrBadFork, says: "still running", field: "!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.fork != nil {
				_, err = r.rt.Fork(ctx, *tc.fork)
			} else {
				_, err = r.rt.Resume(ctx, *tc.resume)
			}
			if !errors.Is(err, tc.is) || !strings.Contains(fmtErr(err), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.is, tc.says)
			}
			var fe *runtime.ForkError
			got := ""
			if errors.As(err, &fe) {
				got = fe.Field
				if fe.Conflict {
					got = "!"
				}
			}
			if got != tc.field {
				t.Errorf("refusal names field %q, want %q (\"!\": the execution's state)", got, tc.field)
			}
			if tc.journaled == "" {
				if fe != nil && fe.Execution != "" {
					t.Errorf("refusal journaled as %s, want nothing journaled", fe.Execution)
				}
				return
			}
			if fe == nil || fe.Execution == "" || !strings.Contains(err.Error(), fe.Execution) {
				t.Fatalf("refusal %v names no journaled execution", err)
			}
			before = append(before, fe.Execution)
			ref, err := r.store.Lookup(ctx, fe.Execution)
			if err != nil {
				t.Fatal(err)
			}
			recs := r.records(t, ref)
			h, ok := recs[0].(*eventstore.Header)
			if !ok || h.ForkedFrom == nil || h.ForkedFrom.AgentExecutionID != tc.fork.Parent || h.ForkedFrom.Sequence != tc.fork.At {
				t.Fatalf("journaled refusal starts with %+v, want a fork header linking %s at %d", recs[0], tc.fork.Parent, tc.fork.At)
			}
			var kinds []eventstore.Kind
			for _, rec := range recs[1:] {
				kinds = append(kinds, rec.Kind())
			}
			if want := []eventstore.Kind{eventstore.KindRestore, eventstore.KindStateChanged}; !slices.Equal(kinds, want) {
				t.Fatalf("journaled refusal holds %v after its header, want %v (no process, no prompt)", kinds, want)
			}
			ra := recs[1].(*eventstore.RestoreAttempted)
			if ra.Outcome != tc.journaled || ra.Mode != eventstore.RestoreSnapshot || !strings.Contains(ra.Detail, tc.says) {
				t.Errorf("restore.attempted %+v, want outcome %s, mode snapshot, detail saying %q", ra, tc.journaled, tc.says)
			}
			if sc := recs[2].(*eventstore.StateChanged); sc.Lifecycle != eventstore.LifecycleFailed || !strings.Contains(sc.Reason, string(tc.journaled)) {
				t.Errorf("journaled refusal ends %+v, want failed naming %s", sc, tc.journaled)
			}
		})
	}
	slices.Sort(before)
	if after := journals(); !slices.Equal(after, before) {
		t.Errorf("journals after refused forks %v, want %v: unchanged but for the forks refused for their workspace", after, before)
	}
	if entries, _ := os.ReadDir(workspace.WorktreeRoot(dataDir)); len(entries) != 0 {
		t.Errorf("refused forks left %d directories in %s", len(entries), workspace.WorktreeRoot(dataDir))
	}
}

func TestForkSnapshotWorkspace(t *testing.T) {
	r, _ := newForkRig(t)
	ctx := context.Background()
	repo, parent, _ := snapshotTwoTurns(t, r, "at the fork point")
	os.WriteFile(filepath.Join(repo, "f.txt"), []byte("later"), 0o600)
	ref, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: parent.LastSequence, Workspace: workspace.ModeSnapshot, Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.rt.Stop(ctx, ref.AgentExecutionID)
	dir := header(t, r, ref).WorkingDirectory
	if got, err := os.ReadFile(filepath.Join(dir, "f.txt")); err != nil || string(got) != "at the fork point" {
		t.Errorf("fork's f.txt %q (%v), want the snapshot's %q", got, err, "at the fork point")
	}
	// The restore is journaled right after the header: which snapshot,
	// from which directory, to which.
	ra, ok := r.records(t, ref)[1].(*eventstore.RestoreAttempted)
	if !ok || ra.Mode != eventstore.RestoreMode(workspace.ModeSnapshot) || ra.Outcome != eventstore.RestoreRestored ||
		ra.Resource != repo || ra.RestoredTo != dir || !strings.HasPrefix(ra.SnapshotRef, "refs/agentjournal/"+parent.AgentExecutionID+"/") || ra.SnapshotCommit == "" {
		t.Errorf("the fork's second record is %+v, want its snapshot restore from %s to %s", r.records(t, ref)[1], repo, dir)
	}
}

// snapshotTwoTurns runs twoTurns in a new git repository (no commit yet)
// whose f.txt holds content, and snapshots the repository at answer one;
// it returns the repository, the parent and that sequence.
func snapshotTwoTurns(t *testing.T, r *rig, content string) (string, eventstore.Reference, uint64) {
	t.Helper()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "f.txt"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	parent, at := twoTurns(t, r, repo)
	if _, err := workspace.Snapshot(context.Background(), repo, parent.AgentExecutionID, at); err != nil {
		t.Fatal(err)
	}
	return repo, parent, at
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Forks and resumes of the real CLIs, against the scripted model server:
// what the model receives is the conversation up to the fork point and
// nothing after it, and a resume continues the CLI's own session.

// parentOfTwoTurns runs a real CLI's conversation of two turns, prompt one
// and prompt two, and returns it with the sequence of the end of turn one.
func parentOfTwoTurns(t *testing.T, r *rig, agent, bin string, env []string, dir string) (eventstore.Reference, uint64) {
	t.Helper()
	ctx := context.Background()
	ref, err := r.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-fork-" + agent,
		Agent: agent, Command: []string{bin}, Env: env, Prompt: "prompt one", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitTurnsReal(t, r, ref, 1)
	payload, _ := json.Marshal(map[string]string{"text": "prompt two"})
	if _, err := r.rt.SendMessage(ctx, ref.AgentExecutionID, runtime.SendMessageInput{Type: "prompt", Source: eventstore.SourceOperator, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	waitTurnsReal(t, r, ref, 2)
	var end uint64
	for _, rec := range r.records(t, ref) {
		if st, ok := rec.(*eventstore.StateChanged); ok && strings.HasPrefix(st.Reason, "turn 1 ended") {
			end = st.Sequence
		}
	}
	if end == 0 {
		t.Fatalf("no end of turn one; records:\n%s", dump(r, t, ref))
	}
	return ref, end
}

func waitTurnsReal(t *testing.T, r *rig, ref eventstore.Reference, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for r.turnsEnded(t, ref) < n {
		if time.Now().After(deadline) {
			t.Fatalf("turn %d of %s did not end within 2 minutes; records:\n%s", n, ref.AgentExecutionID, dump(r, t, ref))
		}
		if st := r.replay(t, ref); st.Lifecycle.Final() {
			t.Fatalf("%s ended (%s: %s) before turn %d; records:\n%s", ref.AgentExecutionID, st.Lifecycle, st.LifecycleReason, n, dump(r, t, ref))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lastRequest is the body of the model's last conversation request.
func lastRequest(t *testing.T, srv *modelserver.Server) string {
	t.Helper()
	reqs := srv.Conversation()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	return string(reqs[len(reqs)-1].Raw)
}

// sessionOf is the session the CLI named in an execution's observations.
func sessionOf(t *testing.T, r *rig, ref eventstore.Reference) string {
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Native != nil && o.Native.SessionID != "" {
			return o.Native.SessionID
		}
	}
	return ""
}

// forkReal forks parent at end, the end of its turn one, with "prompt
// three", and waits for the fork's turn: the fork must link to the parent
// with history, hold none of the parent's turn two in its model request,
// and name a session of its own. It returns the fork and that request.
func forkReal(t *testing.T, r *rig, srv *modelserver.Server, parent eventstore.Reference, end uint64, env []string, history eventstore.History) (eventstore.Reference, string) {
	t.Helper()
	fork, err := r.rt.Fork(context.Background(), runtime.ForkRequest{Parent: parent.AgentExecutionID, At: end, Prompt: "prompt three", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, r, fork); h.ForkedFrom == nil || h.ForkedFrom.History != history {
		t.Fatalf("fork's link %+v, want history %s", h.ForkedFrom, history)
	}
	waitTurnsReal(t, r, fork, 1)
	got := lastRequest(t, srv)
	for _, after := range []string{"prompt two", "answer two"} {
		if strings.Contains(got, after) {
			t.Errorf("the fork's model request holds %q, from after the fork point:\n%s", after, got)
		}
	}
	if s, ps := sessionOf(t, r, fork), sessionOf(t, r, parent); s == "" || s == ps {
		t.Errorf("fork's session %q, want a new one (the parent's is %q)", s, ps)
	}
	return fork, got
}

// resumeReal resumes the stopped parent with "prompt four" and waits for
// its turn; it returns the resumed run and its model request.
func resumeReal(t *testing.T, r *rig, srv *modelserver.Server, parent eventstore.Reference, env []string) (eventstore.Reference, string) {
	t.Helper()
	resumed, err := r.rt.Resume(context.Background(), runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "prompt four", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	waitTurnsReal(t, r, resumed, 1)
	return resumed, lastRequest(t, srv)
}

func stopAndWait(t *testing.T, r *rig, ref eventstore.Reference) {
	t.Helper()
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
}

// Claude Code forks its own session at the last message of turn one
// (--resume --fork-session --resume-session-at), and resumes it whole.
func TestForkRealClaude(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "answer one"}, {Text: "answer two"}, {Text: "answer three", Usage: modelserver.Usage{InputTokens: 30, OutputTokens: 7}}, {Text: "answer four"}}})
	r, _ := newForkRig(t)
	ctx := context.Background()
	env, dir := realagent.ClaudeEnv(t, srv.URL()), t.TempDir()
	parent, end := parentOfTwoTurns(t, r, "claude-code", realagent.Bin(t, "claude"), env, dir)

	// The parent still runs, waiting after turn two: a fork at the end of
	// turn one is a completed turn.
	fork, got := forkReal(t, r, srv, parent, end, env, eventstore.HistoryNative)
	for _, want := range []string{"prompt one", "answer one", "prompt three"} {
		if !strings.Contains(got, want) {
			t.Errorf("the fork's model request lacks %q:\n%s", want, got)
		}
	}
	// Usage counts the fork's own turn only, not the parent's turns.
	if st := r.replay(t, fork); st.Usage.OutputTokens == nil || *st.Usage.OutputTokens != 7 {
		t.Errorf("fork's usage %s, want its own turn's 7 output tokens", jsonOf(st.Usage))
	}
	stopAndWait(t, r, fork)

	// Two processes on one session would interleave it.
	if _, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "p", Env: env}); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("resume of the running parent: %v, want it refused as still running", err)
	}
	stopAndWait(t, r, parent)
	resumed, got := resumeReal(t, r, srv, parent, env)
	for _, want := range []string{"prompt one", "answer one", "prompt two", "answer two", "prompt four"} {
		if !strings.Contains(got, want) {
			t.Errorf("the resumed run's model request lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "prompt three") {
		t.Errorf("the resumed run's model request holds the fork's prompt:\n%s", got)
	}
	h := header(t, r, resumed)
	if h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative || h.SessionID != header(t, r, parent).Session() {
		t.Errorf("resumed run's header: resumes %+v session %q, want native in %q", h.Resumes, h.SessionID, parent.AgentExecutionID)
	}
	if s, ps := sessionOf(t, r, resumed), sessionOf(t, r, parent); s != ps {
		t.Errorf("resumed run's Claude Code session %q, want the parent's %q", s, ps)
	}
	stopAndWait(t, r, resumed)
}

// Codex cannot fork a thread at a turn from exec: its fork is
// reconstructed. It resumes a thread whole with exec resume.
func TestForkRealCodex(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "answer one"}, {Text: "answer two"}, {Text: "answer three"}, {Text: "answer four"}}})
	r, _ := newForkRig(t)
	env, dir := realagent.CodexEnv(t, srv.URL()), t.TempDir()
	parent, end := parentOfTwoTurns(t, r, "codex", realagent.Bin(t, "codex"), env, dir)

	fork, got := forkReal(t, r, srv, parent, end, env, eventstore.HistoryReconstructed)
	if !inOrder(got, "prompt one", "answer one", "prompt three") {
		t.Errorf("the fork's model request lacks turn one then prompt three:\n%s", got)
	}
	stopAndWait(t, r, fork)
	stopAndWait(t, r, parent)

	resumed, got := resumeReal(t, r, srv, parent, env)
	if !inOrder(got, "prompt one", "answer one", "prompt two", "answer two", "prompt four") {
		t.Errorf("the resumed run's model request lacks the whole thread then prompt four:\n%s", got)
	}
	if h := header(t, r, resumed); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Errorf("resumed run's link %+v, want history native", h.Resumes)
	}
	if s, ps := sessionOf(t, r, resumed), sessionOf(t, r, parent); s != ps {
		t.Errorf("resumed run's thread %q, want the parent's %q", s, ps)
	}
	stopAndWait(t, r, resumed)
}

// A Claude Code execution that ran on host alpha, resumed by the runtime
// of host beta (whose machine lacks alpha's session files), gets its
// conversation retold instead of a native resume.
func TestResumeOnAnotherHostRetells(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "answer one"}, {Text: "answer two"}, {Text: "answer four"}}})
	r, _ := newForkRig(t)
	r.rt = startRuntime(t, runtime.Config{Store: r.store, StopGrace: 5 * time.Second, Host: "alpha"})
	env, dir := realagent.ClaudeEnv(t, srv.URL()), t.TempDir()
	parent, _ := parentOfTwoTurns(t, r, "claude-code", realagent.Bin(t, "claude"), env, dir)
	if st := r.replay(t, parent); st.Host != "alpha" {
		t.Fatalf("the parent ran on %q, want alpha", st.Host)
	}
	stopAndWait(t, r, parent)
	if _, err := r.rt.Resume(context.Background(), runtime.ResumeRequest{Execution: parent.AgentExecutionID, Env: env}); err != nil {
		t.Fatalf("resume without a prompt on the host it ran on (native): %v", err)
	}
	r.rt = startRuntime(t, runtime.Config{Store: r.store, StopGrace: 5 * time.Second, Host: "beta"})
	if _, err := r.rt.Resume(context.Background(), runtime.ResumeRequest{Execution: parent.AgentExecutionID, Env: env}); err == nil || !strings.Contains(err.Error(), "ran on host alpha") {
		t.Fatalf("resume on beta without a prompt: %v; want it refused, saying the session is on alpha", err)
	}
	resumed, got := resumeReal(t, r, srv, parent, env)
	if h := header(t, r, resumed); h.Resumes == nil || h.Resumes.History != eventstore.HistoryReconstructed {
		t.Fatalf("the resume on beta: link %+v, want history reconstructed", h.Resumes)
	}
	if !inOrder(got, "prompt one", "answer one", "prompt two", "answer two", "prompt four") {
		t.Errorf("the resumed run's model request lacks the retold conversation then prompt four:\n%s", got)
	}
	stopAndWait(t, r, resumed)
}
