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
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
	"github.com/agentjournal/agentjournal/runtime/acp"
)

// TestACPRealGeminiResume resumes a real Gemini CLI execution: Gemini CLI
// offers loadSession, so the resumed run sends session/load; the history
// it replays is not journaled again, a failed load falls back to a
// retelling recorded as such, and the model's next request holds the
// earlier turn.
func TestACPRealGeminiResume(t *testing.T) {
	const (
		first  = "Remember the word pineapple."
		noted  = "Noted: the word is pineapple."
		second = "Which word did I ask you to remember?"
		answer = "You asked me to remember pineapple."
	)
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: noted, Usage: modelserver.Usage{InputTokens: 50, OutputTokens: 7}},
		{Text: answer, Usage: modelserver.Usage{InputTokens: 80, OutputTokens: 8}},
	}})
	r := newRig(t, 5*time.Second)
	ctx := context.Background()
	// The same home for both runs: Gemini CLI keeps its sessions there.
	env := realagent.GeminiEnv(t, srv.URL())
	dir := t.TempDir()
	parent, err := r.rt.Launch(ctx, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-gemini",
		Agent: "gemini", Command: []string{realagent.Bin(t, "gemini")}, Env: env, Prompt: first, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r.awaitReal(t, parent, srv, "end of the first turn", func() bool { return r.turnsEnded(t, parent) >= 1 })
	// Gemini CLI writes its session file after the turn's end: stopped
	// before, it has no session to load.
	r.awaitReal(t, parent, srv, "Gemini CLI's session file", func() bool {
		files, _ := filepath.Glob(filepath.Join(homeOf(env), ".gemini", "tmp", "*", "chats", "session-*"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), noted) {
				return true
			}
		}
		return false
	})
	if err := r.rt.Stop(ctx, parent.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, parent)
	session := messageSession(t, r, parent, noted)

	ref, err := r.rt.Resume(ctx, runtime.ResumeRequest{Execution: parent.AgentExecutionID, Prompt: second, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.rt.Stop(context.Background(), ref.AgentExecutionID)
		r.wait(t, ref)
	})
	r.awaitReal(t, ref, srv, "end of the resumed turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if h := header(t, r, ref); h.Resumes == nil || h.Resumes.History != eventstore.HistoryNative {
		t.Fatalf("header resumes %+v, want history native", h.Resumes)
	}
	if got := messages(r, t, ref); !slices.Equal(got, []string{answer}) {
		t.Fatalf("messages %q, want only the new answer (the replayed %q is the parent's); records:\n%s", got, noted, dump(r, t, ref))
	}
	// Gemini CLI 0.61.0 offers loadSession, but a new process's
	// session/load first rewrites the session's record with a fresh
	// context and then looks it up: mostly it finds nothing resumable
	// ("No previous sessions found for this project") and the run falls
	// back to a retelling, recorded so; when the lookup wins, it loads the
	// session and replays it after its answer.
	st := observed[*eventstore.StatusSignal](r, t, ref)
	if len(st) != 1 {
		t.Fatalf("status observations %+v, want one; records:\n%s", st, dump(r, t, ref))
	}
	switch st[0].Phase {
	case acp.PhaseSessionLoaded:
		if got := messageSession(t, r, ref, answer); got != session {
			t.Fatalf("the resumed run's session %q, want the loaded %q", got, session)
		}
	case acp.PhaseHistoryReconstructed:
		if !strings.Contains(st[0].Summary, session) || !slices.Contains(diagnosticCodes(r, t, ref), "acp-load") {
			t.Fatalf("fallback status %+v without an acp-load diagnostic; records:\n%s", st[0], dump(r, t, ref))
		}
	default:
		t.Fatalf("status phase %q", st[0].Phase)
	}
	conv := srv.Conversation()
	if len(conv) != 2 {
		t.Fatalf("conversation requests:\n%s\nwant two", requestsOf(srv))
	}
	// Either way the model's second request holds the earlier turn, then
	// the new prompt: loaded as the session, or retold.
	raw := string(conv[1].Raw)
	if !inOrder(raw, first, noted, second) {
		t.Fatalf("the second model request does not hold the earlier turn, then the new prompt:\n%s", raw)
	}
}

// homeOf is the HOME an environment sets.
func homeOf(env []string) string {
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return home
}
