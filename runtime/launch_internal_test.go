package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestLaunchPromptEndedBeforeItsDeliveryStartsNoTurn: a CLI given its
// prompt on the command line may end the turn before the launch records
// that prompt's delivery. The execution then waits for the operator; the
// delivery must not read as the start of a next turn, which would leave it
// looking autonomous with no turn running.
func TestLaunchPromptEndedBeforeItsDeliveryStartsNoTurn(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	turn := filepath.Join(t.TempDir(), "capture.jsonl")
	if err := os.WriteFile(turn, []byte(strings.Join([]string{
		`{"type":"thread.started","thread_id":"th-7"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}`,
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	turnEnded := func(ref eventstore.Reference) (*execution.State, bool) {
		st, err := execution.ReplayLineage(ctx, s, ref)
		if err != nil {
			t.Error(err)
			return nil, true
		}
		return st, st.Attention == eventstore.AttentionAwaitingOperator
	}
	// The launch records the delivery only once the turn's end is in the
	// journal: the order a fast agent on a busy machine can bring.
	cfg := Config{Store: s, StopGrace: time.Second, beforeLaunchDelivery: func(p *process) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, ok := turnEnded(p.ref); ok {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("turn 1 did not end before the launch recorded its delivery")
	}}
	rt := internalRuntime(t, cfg)
	ref, err := rt.Launch(ctx, LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-fast",
		Agent: "codex", Prompt: "first", Command: []string{fixtures.AgentBinary(t), "replay:" + turn}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx, ref.AgentExecutionID)
	// Launch returns once the delivery is recorded.
	st, ok := turnEnded(ref)
	if !ok || st.Lifecycle != eventstore.LifecycleRunning {
		var reasons []string
		for e, err := range s.ReadJournal(ctx, ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			if sc, ok := e.Record.(*eventstore.StateChanged); ok {
				reasons = append(reasons, sc.Reason)
			}
		}
		t.Fatalf("after the launch: %s/%s, want running and waiting for the operator; states %q", st.Lifecycle, st.Attention, reasons)
	}
}
