package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

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
	fork, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: end, Prompt: "prompt three", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, r, fork); h.ForkedFrom == nil || h.ForkedFrom.History != eventstore.HistoryNative {
		t.Fatalf("fork's link %+v, want history native", h.ForkedFrom)
	}
	waitTurnsReal(t, r, fork, 1)
	got := lastRequest(t, srv)
	for _, want := range []string{"prompt one", "answer one", "prompt three"} {
		if !strings.Contains(got, want) {
			t.Errorf("the fork's model request lacks %q:\n%s", want, got)
		}
	}
	for _, after := range []string{"prompt two", "answer two"} {
		if strings.Contains(got, after) {
			t.Errorf("the fork's model request holds %q, from after the fork point:\n%s", after, got)
		}
	}
	if s, ps := sessionOf(t, r, fork), sessionOf(t, r, parent); s == "" || s == ps {
		t.Errorf("fork's session %q, want a new one (the parent's is %q)", s, ps)
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
	resumed, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "prompt four", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	waitTurnsReal(t, r, resumed, 1)
	got = lastRequest(t, srv)
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
	ctx := context.Background()
	env, dir := realagent.CodexEnv(t, srv.URL()), t.TempDir()
	parent, end := parentOfTwoTurns(t, r, "codex", realagent.Bin(t, "codex"), env, dir)

	fork, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: end, Prompt: "prompt three", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, r, fork); h.ForkedFrom == nil || h.ForkedFrom.History != eventstore.HistoryReconstructed {
		t.Fatalf("fork's link %+v, want history reconstructed", h.ForkedFrom)
	}
	waitTurnsReal(t, r, fork, 1)
	got := lastRequest(t, srv)
	if !inOrder(got, "prompt one", "answer one", "prompt three") {
		t.Errorf("the fork's model request lacks turn one then prompt three:\n%s", got)
	}
	for _, after := range []string{"prompt two", "answer two"} {
		if strings.Contains(got, after) {
			t.Errorf("the fork's model request holds %q, from after the fork point:\n%s", after, got)
		}
	}
	if s, ps := sessionOf(t, r, fork), sessionOf(t, r, parent); s == "" || s == ps {
		t.Errorf("fork's thread %q, want a new one (the parent's is %q)", s, ps)
	}
	stopAndWait(t, r, fork)
	stopAndWait(t, r, parent)

	resumed, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "prompt four", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	waitTurnsReal(t, r, resumed, 1)
	got = lastRequest(t, srv)
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
