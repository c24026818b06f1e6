package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestResumeAnEndingAlreadyRecorded: an execution whose final lifecycle is
// in its journal, while its process here is still letting go of its files,
// is resumed, not refused as still running. A client that saw the run end
// must be able to resume it.
func TestResumeAnEndingAlreadyRecorded(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	rt := internalRuntime(t, Config{Store: s, StopGrace: time.Second})
	ref, err := rt.Launch(ctx, LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Command: []string{fixtures.AgentBinary(t), "wait"}, Prompt: "one"})
	if err != nil {
		t.Fatal(err)
	}
	p := liveProcess(t, rt, ref.AgentExecutionID)
	// The ending stops after its record, where it closes the output: the
	// window a client reading the journal can see. (This runtime keeps no
	// output files, so nothing else takes the lock.)
	p.outputMu.Lock()
	held := true
	defer func() {
		if held {
			p.outputMu.Unlock()
		}
	}()
	p.current().closeInput()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := execution.ReplayLineage(ctx, s, ref)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lifecycle.Final() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ending was not recorded: lifecycle %s", st.Lifecycle)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rt.Done(ref.AgentExecutionID) == nil {
		t.Fatal("the process let go before the test could hold it: the window is not under test")
	}

	resumed, err := rt.Resume(ctx, ResumeRequest{Execution: ref.AgentExecutionID, Prompt: "two"})
	if err != nil {
		t.Fatalf("resume while the ended process lets go: %v", err)
	}
	if resumed.AgentExecutionID == ref.AgentExecutionID {
		t.Fatalf("resume returned the resumed execution %s", resumed.AgentExecutionID)
	}
	rt.Stop(ctx, resumed.AgentExecutionID)
	p.outputMu.Unlock()
	held = false
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the ended process did not let go once its output could close")
	}
}
