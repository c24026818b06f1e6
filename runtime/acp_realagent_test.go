package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// TestACPRealCopilot runs the real Copilot CLI in ACP mode (copilot --acp,
// the version fixtures/realagent pins) through the copilot-acp adapter,
// against the scripted model server: the model's streamed text is one
// message in the journal, and the turn ends.
func TestACPRealCopilot(t *testing.T) {
	usage := modelserver.Usage{InputTokens: 120, OutputTokens: 17}
	const text = "Hello from the scripted model over ACP. All done."
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: text, Chunks: 5, Usage: usage}}})
	r := newRig(t, 5*time.Second)
	ref, err := r.rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-copilot-acp",
		Agent: "copilot-acp", Command: []string{realagent.Bin(t, "copilot")}, Env: realagent.CopilotEnv(t, srv.URL()),
		Prompt: "Say hello", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for r.turnsEnded(t, ref) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end within 2 minutes; records:\n%s", dump(r, t, ref))
		}
		if st := r.replay(t, ref); st.Lifecycle != eventstore.LifecycleRunning {
			t.Fatalf("lifecycle %s (%s) before the turn ended; records:\n%s", st.Lifecycle, st.LifecycleReason, dump(r, t, ref))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := messages(r, t, ref); len(got) != 1 || got[0] != text {
		t.Fatalf("messages %q, want the model's text as one message; records:\n%s", got, dump(r, t, ref))
	}
	st := r.replay(t, ref)
	// Copilot CLI's prompt response carries the turn's usage: exactly what
	// the model server counted.
	if u := st.Usage; u.InputTokens == nil || *u.InputTokens != usage.InputTokens || u.OutputTokens == nil || *u.OutputTokens != usage.OutputTokens {
		t.Errorf("usage %s, want %d in and %d out; records:\n%s", jsonOf(u), usage.InputTokens, usage.OutputTokens, dump(r, t, ref))
	}
	// The ACP session id is captured like the other provider-native ids.
	for _, rec := range r.records(t, ref) {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil && o.Signal.Type == eventstore.SignalMessage && (o.Native == nil || o.Native.SessionID == "") {
			t.Errorf("message without the ACP session id: %+v", o.Native)
		}
	}
	if err := r.rt.Stop(context.Background(), ref.AgentExecutionID); err != nil {
		t.Fatal(err)
	}
	r.wait(t, ref)
}

func dump(r *rig, t *testing.T, ref eventstore.Reference) string {
	out := ""
	for _, rec := range r.records(t, ref) {
		out += string(rec.Kind()) + " " + describeRecord(rec) + "\n"
	}
	return out
}

func describeRecord(rec eventstore.Record) string {
	switch x := rec.(type) {
	case *eventstore.Observation:
		return string(x.Signal.Type) + " " + jsonOf(x.Signal.Payload)
	case *eventstore.MessageDelivery:
		return string(x.Status) + " " + x.Reason
	case *eventstore.StateChanged:
		return string(x.Lifecycle) + " " + x.Reason
	}
	return ""
}
