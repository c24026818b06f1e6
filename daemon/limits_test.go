package daemon_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// A fleet-wide limit of 3 generic agents holds across two hosts with room
// for many more: of 8 launches at once through both, 3 run and 5 are
// refused; a queued launch waits until one ends, then starts.
func TestFleetWideLimitHolds(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	limits := map[string]int{"generic": 3}
	alpha := openHost(t, "alpha", nil, func(c *daemon.Config) {
		c.MaxRunning, c.Limits = 10, limits
	})
	beta := openHost(t, "beta", alpha, func(c *daemon.Config) {
		c.MaxRunning, c.Limits = 10, limits
	})
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()

	var mu sync.Mutex
	var running []string
	refused := 0
	var wg sync.WaitGroup
	for i := range 8 {
		c := []*client.Client{ca, cb}[i%2]
		wg.Go(func() {
			l, err := c.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: fmt.Sprint("t-lim-", i),
				Agent: "generic", Command: []string{agent, "wait"}})
			mu.Lock()
			defer mu.Unlock()
			var ae *client.Error
			switch {
			case err == nil:
				running = append(running, l.Reference.AgentExecutionID)
			case errors.As(err, &ae) && ae.Status == http.StatusConflict && strings.Contains(ae.Message, "limit (serve --limit generic=3)"):
				refused++
			default:
				t.Errorf("launch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(running) != 3 || refused != 5 {
		t.Fatalf("%d launches ran and %d were refused, want 3 and 5", len(running), refused)
	}
	q, err := cb.Launch(t.Context(), queuedLaunch("t-lim-q", nil, agent, "wait"))
	if err != nil {
		t.Fatal(err)
	}
	id := q.Reference.AgentExecutionID
	time.Sleep(500 * time.Millisecond) // a few dispatch rounds, in which it must not start
	if ex, _ := ca.Execution(t.Context(), id); ex.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("a queued launch over the limit is %s, want starting (waiting)", ex.Lifecycle)
	}
	if _, err := ca.Stop(t.Context(), running[0]); err != nil {
		t.Fatal(err)
	}
	waitExecution(t, ca, id, "started once a slot was free", func(ex client.Execution) bool { return ex.Lifecycle == eventstore.LifecycleRunning })
}
