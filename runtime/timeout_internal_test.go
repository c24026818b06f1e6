package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestTimeoutTimerStopsWithTheRun: the timer of a run that ends within its
// limit is stopped when it ends, not left to fire.
func TestTimeoutTimerStopsWithTheRun(t *testing.T) {
	rt := internalRuntime(t, Config{Store: internalStore(t), StopGrace: time.Second})
	// The agent waits for its input to close: it is live until the test
	// has its process.
	ref, err := rt.Launch(context.Background(), LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1",
		Agent: "generic", Command: []string{fixtures.AgentBinary(t), "wait"}, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := liveProcess(t, rt, ref.AgentExecutionID)
	p.mu.Lock()
	limit := p.limit
	p.mu.Unlock()
	if limit == nil {
		t.Fatal("no timer for a launch with a timeout")
	}
	p.current().closeInput()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit")
	}
	// Stop reports whether it stopped the timer: false once the run's end
	// has stopped it (an hour is far from passing).
	if limit.Stop() {
		t.Fatal("the timer was still running after the execution ended")
	}
}
