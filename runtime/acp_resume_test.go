package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/acp"
)

// acpParent runs one turn of the scripted ACP agent keeping its sessions
// in sessions ("say answer one"), stops it, and returns it with the ACP
// session its messages name.
func acpParent(t *testing.T, r *rig, dir string, args ...string) (eventstore.Reference, string) {
	t.Helper()
	ref := r.launchACP(t, dir, eventstore.ShapeConversation, "say answer one", args...)
	r.waitTurns(t, ref, 1)
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(t, ref); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("parent lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	return ref, messageSession(t, r, ref, "answer one")
}

// messageSession is the ACP session named by the agent message with text.
func messageSession(t *testing.T, r *rig, ref eventstore.Reference, text string) string {
	t.Helper()
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if m, ok := o.Signal.Payload.(*eventstore.MessageSignal); ok && m.Text == text && o.Native != nil {
				return o.Native.SessionID
			}
		}
	}
	t.Fatalf("%s has no message %q with a session", ref.AgentExecutionID, text)
	return ""
}

func statusPhases(r *rig, t *testing.T, ref eventstore.Reference) []string {
	var out []string
	for _, s := range observed[*eventstore.StatusSignal](r, t, ref) {
		out = append(out, s.Phase)
	}
	return out
}

func TestACPResumeLoadsTheSession(t *testing.T) {
	r := newRig(t, 2*time.Second)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, session := acpParent(t, r, dir, "-sessions", sessions)

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v, want history native", h.Resumes)
	}
	// The agent loaded the parent's session: it holds the parent's prompt
	// and answer, and got nothing retold.
	if got, want := messages(r, t, ref), []string{"history: held 2, retold 0"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q (the replayed %q is the parent's, not journaled again)", got, want, "answer one")
	}
	if got := firstPrompt(t, r, ref); got != "history" {
		t.Fatalf("first prompt %q, want the prompt alone", got)
	}
	loaded := observed[*eventstore.StatusSignal](r, t, ref)
	if len(loaded) != 1 || loaded[0].Phase != acp.PhaseSessionLoaded || !strings.Contains(loaded[0].Summary, session) ||
		!strings.Contains(loaded[0].Summary, "2 updates") {
		t.Fatalf("status observations %+v, want one %s naming %s and its 2 replayed updates", loaded, acp.PhaseSessionLoaded, session)
	}
	if got := messageSession(t, r, ref, "history: held 2, retold 0"); got != session {
		t.Fatalf("the resumed run's session %q, want the loaded %q", got, session)
	}
	if codes := diagnosticCodes(r, t, ref); len(codes) != 0 {
		t.Fatalf("diagnostics %q, want none", codes)
	}

	// The next prompt continues the same session.
	r.send(t, ref, "prompt", map[string]string{"text": "history"})
	r.waitTurns(t, ref, 2)
	if got := messages(r, t, ref); len(got) != 2 || got[1] != "history: held 4, retold 0" {
		t.Fatalf("messages after the second prompt %q, want the session to hold 4", got)
	}
	if err := r.rt.Stop(ctx, ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	if files, _ := filepath.Glob(filepath.Join(sessions, "*.json")); len(files) != 1 {
		t.Fatalf("the agent kept sessions %q, want the one session continued", files)
	}
}

func TestACPResumeWithoutLoadSessionIsReconstructed(t *testing.T) {
	r := newRig(t, 2*time.Second)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, session := acpParent(t, r, dir, "-sessions", sessions, "-no-load-session")

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	// A new session got the parent's prompt and answer retold.
	if got, want := messages(r, t, ref), []string{"history: held 0, retold 2"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if got := messageSession(t, r, ref, "history: held 0, retold 2"); got == session {
		t.Fatalf("the resumed run's session is the parent's %q, want a new one", got)
	}
	// The header, written before the handshake, says native; the record
	// right after the handshake says what happened.
	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v", h.Resumes)
	}
	st := observed[*eventstore.StatusSignal](r, t, ref)
	if len(st) != 1 || st[0].Phase != acp.PhaseHistoryReconstructed || !strings.Contains(st[0].Summary, session) ||
		!strings.Contains(st[0].Summary, "does not offer session/load") {
		t.Fatalf("status observations %+v, want one %s for %s", st, acp.PhaseHistoryReconstructed, session)
	}
	if err := r.rt.Stop(ctx, ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
	files, _ := filepath.Glob(filepath.Join(sessions, "*.json"))
	if len(files) != 2 {
		t.Fatalf("the agent kept sessions %q, want the parent's and a new one", files)
	}
	// The parent's session is as it was.
	b, err := os.ReadFile(filepath.Join(sessions, session+".json"))
	if err != nil || strings.Contains(string(b), "history") {
		t.Fatalf("the parent's session %s: %s %v, want it untouched", session, b, err)
	}
}

func TestACPForkStaysReconstructed(t *testing.T) {
	r, _ := newForkRig(t)
	ctx := context.Background()
	dir, sessions := t.TempDir(), t.TempDir()
	parent, _ := acpParent(t, r, dir, "-sessions", sessions)
	at := seqOfMessage(t, r, parent, "answer one")

	ref, err := r.rt.Fork(ctx, runtime.ForkRequest{Parent: parent.AgentExecutionID, At: at, Prompt: "history"})
	if err != nil {
		t.Fatal(err)
	}
	r.waitTurns(t, ref, 1)
	if h := header(t, r, ref); h.ForkedFrom == nil || h.ForkedFrom.History != eventstore.HistoryReconstructed {
		t.Fatalf("header forkedFrom %+v, want history reconstructed", h.ForkedFrom)
	}
	if got, want := messages(r, t, ref), []string{"history: held 0, retold 2"}; !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if p := statusPhases(r, t, ref); len(p) != 0 {
		t.Fatalf("status phases %q, want none (a fork never loads a session)", p)
	}
	r.rt.Stop(ctx, ref.AgentExecutionID)
	r.wait(t, ref)
}
