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
)

// launchGemini runs the real Gemini CLI (gemini --acp, the version
// fixtures/realagent pins) through the gemini preset in dir, against srv.
func (r *rig) launchGemini(t *testing.T, srv *modelserver.Server, dir, prompt string) eventstore.Reference {
	t.Helper()
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-gemini",
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
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
}

// TestACPRealGeminiTools has the model read a file of the working
// directory, then overwrite another: the read runs at once; the write waits
// for a permission request answered through the journal, and goes through
// the client's fs/write_text_file when allowed. (Gemini CLI 0.61.0 cannot
// create a new file through the client: it takes no error answer to its
// existence check as "not found", so the file is there beforehand.)
func TestACPRealGeminiTools(t *testing.T) {
	for _, tt := range []struct {
		answer, content string
		denied          bool
	}{
		{eventstore.AnswerAllow, "written by the model\n", false},
		{eventstore.AnswerDeny, "old\n", true},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{
				{ToolCalls: []modelserver.ToolCall{{ID: "call_read", Name: "read_file", Input: map[string]any{"file_path": "notes.txt"}}},
					Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: "I will write it down.", ToolCalls: []modelserver.ToolCall{{ID: "call_write", Name: "write_file",
					Input: map[string]any{"file_path": "out.txt", "content": "written by the model\n"}}},
					Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 20}},
				{Text: "Done.", Usage: modelserver.Usage{InputTokens: 300, OutputTokens: 3}},
			}})
			dir := t.TempDir()
			for name, text := range map[string]string{"notes.txt": "the secret is 42\n", "out.txt": "old\n"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := newRig(t, 5*time.Second)
			ref := r.launchGemini(t, srv, dir, "Copy the notes")
			r.awaitReal(t, ref, srv, "permission request", func() bool {
				if r.turnsEnded(t, ref) > 0 {
					t.Fatalf("the turn ended before a permission request; requests:\n%s\nrecords:\n%s", requestsOf(srv), dump(r, t, ref))
				}
				return len(observed[*eventstore.NeedsInputSignal](r, t, ref)) > 0
			})

			// Gemini CLI names the call after the tool and the model's call id.
			req := observed[*eventstore.NeedsInputSignal](r, t, ref)[0]
			if req.RequestID != "write_file__call_write" || req.Kind != string(eventstore.InputPermission) ||
				!slices.Contains(req.Choices, eventstore.AnswerAllow) || !slices.Contains(req.Choices, eventstore.AnswerDeny) {
				t.Fatalf("permission request %s, want one for write_file__call_write offering allow and deny", jsonOf(req))
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "old\n" {
				t.Fatalf("out.txt is %q before the answer, want it untouched", b)
			}
			if ack := r.send(t, ref, "answer", map[string]string{"requestId": req.RequestID, "text": tt.answer}); ack.Delivery != eventstore.DeliveryDelivered {
				t.Fatalf("answer: %+v", ack)
			}
			r.awaitReal(t, ref, srv, "end of the turn", func() bool { return r.turnsEnded(t, ref) >= 1 })

			if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != tt.content {
				t.Errorf("out.txt is %q, want %q", b, tt.content)
			}
			if got, want := messages(r, t, ref), []string{"I will write it down.", "Done."}; !slices.Equal(got, want) {
				t.Errorf("messages %q, want %q", got, want)
			}
			var calls []eventstore.ToolCall
			reviewed, edited := false, false
			for _, rec := range r.records(t, ref) {
				a, ok := rec.(*eventstore.ActivityUpdated)
				if !ok {
					continue
				}
				if a.ToolCall != nil && a.ToolCall.ID == "read_file__call_read" {
					calls = append(calls, *a.ToolCall)
				}
				if a.CurrentTarget != nil && a.CurrentTarget.Path == filepath.Join(dir, "notes.txt") && a.Activity == eventstore.ActivityReviewing {
					reviewed = true
				}
				if a.CurrentTarget != nil && a.CurrentTarget.Path == filepath.Join(dir, "out.txt") && a.Activity == eventstore.ActivityEditing {
					edited = true
				}
			}
			if len(calls) != 2 || calls[0].Status != eventstore.ToolCallStarted || calls[1].Status != eventstore.ToolCallSucceeded || !reviewed {
				t.Errorf("read_file calls %+v (notes.txt reviewed: %v), want started then succeeded, reviewing notes.txt", calls, reviewed)
			}
			if edited == tt.denied {
				t.Errorf("out.txt edited through the client: %v, want %v", edited, !tt.denied)
			}

			conv := srv.Conversation()
			if len(conv) != 3 || srv.Exhausted() {
				t.Fatalf("conversation requests:\n%s\nwant 3, the script played to its end", requestsOf(srv))
			}
			if res, ok := conv[1].ToolResult("call_read"); !ok || res.IsError || res.Content != "the secret is 42\n" {
				t.Errorf("read_file result %+v (found %v), want the file's text", res, ok)
			}
			if res, ok := conv[2].ToolResult("call_write"); !ok || res.IsError != tt.denied {
				t.Errorf("write_file result %+v (found %v), want is-error %v", res, ok, tt.denied)
			}
			// The turn's usage is the sum of its three model calls.
			if u := r.replay(t, ref).Usage; u.InputTokens == nil || *u.InputTokens != 600 || u.OutputTokens == nil || *u.OutputTokens != 33 {
				t.Errorf("usage %s, want 600 in and 33 out", jsonOf(u))
			}
		})
	}
}
