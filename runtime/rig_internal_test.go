package runtime

import (
	"context"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// internalStore opens the journal store on a fresh embedded server.
func internalStore(t *testing.T) *eventstore.JetStreamStore {
	t.Helper()
	return fixtures.OpenStore(t, fixtures.StartNATS(t))
}

// internalRuntime runs a runtime on cfg, closed when the test ends.
func internalRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	rt := New(cfg)
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// liveProcess returns the process of an execution live in rt.
func liveProcess(t *testing.T, rt *Runtime, id string) *process {
	t.Helper()
	rt.mu.Lock()
	p := rt.live[id]
	rt.mu.Unlock()
	if p == nil {
		t.Fatalf("execution %s is not live", id)
	}
	return p
}
