package execution

import (
	"context"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestResumeWaitsOutAnEndingAlreadyRecorded: an execution whose final
// lifecycle is in its journal, while its process here is still letting go,
// is resumed once it has, not refused as still running. A client that saw
// the run end must be able to resume it.
func TestResumeWaitsOutAnEndingAlreadyRecorded(t *testing.T) {
	b := fixtures.StartNATS(t)
	ctx := context.Background()
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	rt := NewRuntime(Config{Store: s, StopGrace: time.Second})
	t.Cleanup(func() { rt.Close(context.Background()) })
	ref, err := rt.Launch(ctx, LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Command: []string{fixtures.AgentBinary(t), "wait"}, Prompt: "one"})
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	p := rt.live[ref.AgentExecutionID]
	rt.mu.Unlock()
	if p == nil {
		t.Fatal("the execution is not live")
	}
	// The ending stops after its record, where it lets go of its host
	// file: the window a client reading the journal can see.
	rt.hostMu.Lock()
	held := true
	defer func() {
		if held {
			rt.hostMu.Unlock()
		}
	}()
	p.current().closeInput()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := ReplayLineage(ctx, s, ref)
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

	type result struct {
		ref eventstore.Reference
		err error
	}
	resumed := make(chan result, 1)
	go func() {
		r, err := rt.Resume(ctx, ResumeRequest{Execution: ref.AgentExecutionID, Prompt: "two"})
		resumed <- result{r, err}
	}()
	select {
	case r := <-resumed:
		t.Fatalf("resume answered while the process was still letting go: %v", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	rt.hostMu.Unlock()
	held = false
	select {
	case r := <-resumed:
		if r.err != nil {
			t.Fatalf("resume after the ending: %v", r.err)
		}
		if r.ref.AgentExecutionID == ref.AgentExecutionID {
			t.Fatalf("resume returned the resumed execution %s", r.ref.AgentExecutionID)
		}
		rt.Stop(ctx, r.ref.AgentExecutionID)
	case <-time.After(30 * time.Second):
		t.Fatal("resume did not answer once the process had let go")
	}
}
