package execution_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// launchGemini runs the real Gemini CLI (gemini --acp, the version
// fixtures/realagent pins) through the gemini preset in dir, against srv.
func (r *rig) launchGemini(t *testing.T, srv *modelserver.Server, dir, prompt string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), execution.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-gemini",
		Agent: "gemini", Command: []string{realagent.Bin(t, "gemini")}, Env: realagent.GeminiEnv(t, srv.URL()),
		Prompt: prompt, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.rt.Stop(context.Background(), ref.AgentExecutionID)
		r.wait(t, ref)
	})
	return ref
}

// awaitReal waits, at most two minutes, until cond holds of the journal,
// failing the test when the execution stops running first.
func (r *rig) awaitReal(t *testing.T, ref eventstore.Reference, srv *modelserver.Server, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 2 minutes; requests:\n%s\nrecords:\n%s", what, requestsOf(srv), dump(r, t, ref))
		}
		if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleRunning {
			t.Fatalf("lifecycle %s (%s) before %s; requests:\n%s\nrecords:\n%s", st.Lifecycle, st.LifecycleReason, what, requestsOf(srv), dump(r, t, ref))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func requestsOf(srv *modelserver.Server) string {
	var b strings.Builder
	for _, req := range srv.Requests() {
		b.WriteString(req.Method + " " + req.Path + "?" + req.Query + " " + string(req.Kind) + " " + req.Reason + req.Error + "\n")
	}
	return b.String()
}

// TestACPRealGemini runs the real Gemini CLI in ACP mode against the
// scripted model server over the Gemini API: the model's streamed text is
// one message in the journal, the turn's usage is the model server's
// counts exactly, and the ACP session id is on the observations.
func TestACPRealGemini(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17}
	const text = "Hello from the scripted model over ACP. All done."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 5, Usage: usage}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchGemini(t, srv, t.TempDir(), "Say hello")
	r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

	if got := messages(r, t, ref); len(got) != 1 || got[0] != text {
		t.Fatalf("messages %q, want the model's text as one message; requests:\n%s\nrecords:\n%s", got, requestsOf(srv), dump(r, t, ref))
	}
	conv := srv.Conversation()
	if len(conv) != 1 || conv[0].API != modelserver.APIGemini || !conv[0].Stream {
		t.Fatalf("conversation requests:\n%s\nwant one streamed Gemini request", requestsOf(srv))
	}
	if users := conv[0].UserTexts(); len(users) == 0 || !strings.Contains(users[len(users)-1], "Say hello") {
		t.Errorf("last user text %q, want the prompt", users)
	}
	st := r.replay(t, ref)
	if u := st.Usage; u.InputTokens == nil || *u.InputTokens != usage.InputTokens || u.OutputTokens == nil || *u.OutputTokens != usage.OutputTokens {
		t.Errorf("usage %s, want %d in and %d out; records:\n%s", jsonOf(u), usage.InputTokens, usage.OutputTokens, dump(r, t, ref))
	}
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
}
