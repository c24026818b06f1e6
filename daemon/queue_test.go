package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// fullHosts opens alpha and beta on one log, each running at most one
// agent.
func fullHosts(t *testing.T) (alpha, beta *daemon.Daemon) {
	t.Helper()
	alpha = openHost(t, "alpha", nil, func(c *daemon.Config) {
		c.MaxRunning = 1
	})
	beta = openHost(t, "beta", alpha, func(c *daemon.Config) {
		c.MaxRunning = 1
	})
	return alpha, beta
}

func queuedLaunch(owner string, env map[string]string, command ...string) client.LaunchRequest {
	return client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: owner, Agent: "generic", Command: command, Env: env,
		DispatchContext: &eventstore.DispatchContext{OriginSurface: eventstore.OriginDesktop, OriginProductID: "test",
			DispatchMode: eventstore.DispatchQueued, InitiatedAt: time.Now().UTC().Format(time.RFC3339)}}
}

// A launch queued through a full host is started by the other host, which
// has room, with the environment the first one kept; the queue the hosts
// list is one.
func TestQueuedRunStartsOnAHostWithRoom(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha, beta := fullHosts(t)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	// alpha is full.
	if _, err := ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-busy", Agent: "generic",
		Command: []string{agent, "wait"}}); err != nil {
		t.Fatal(err)
	}
	q, err := ca.Launch(t.Context(), queuedLaunch("t-queued", map[string]string{"QUEUED_SECRET": "q-s3cret"},
		"/bin/sh", "-c", `echo "secret=$QUEUED_SECRET"; exec cat`))
	if err != nil {
		t.Fatal(err)
	}
	id := q.Reference.AgentExecutionID
	ran := waitExecution(t, ca, id, "started", func(ex client.Execution) bool { return ex.Lifecycle == eventstore.LifecycleRunning })
	if ran.Host != "beta" {
		t.Fatalf("the queued run started on %q, want beta, the host with room", ran.Host)
	}
	waitOutput(t, alpha, id, "beta", "secret=q-s3cret")
	checkNotJournaled(t, alpha, q.Reference, "q-s3cret")
}

// Both hosts full: queued runs wait in one queue, in order, seen alike by
// both; each starts once, where room is made; a stop through either host
// cancels one that waits.
func TestTheFleetHasOneQueue(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha, beta := fullHosts(t)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	var busy []string
	for _, c := range []*client.Client{ca, cb} {
		l, err := c.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-busy", Agent: "generic",
			Command: []string{agent, "wait"}})
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, l.Reference.AgentExecutionID)
	}
	var queued []string
	for i, c := range []*client.Client{ca, cb, ca} {
		l, err := c.Launch(t.Context(), queuedLaunch(fmt.Sprint("t-q", i), nil, agent, "wait"))
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, l.Reference.AgentExecutionID)
	}
	for _, c := range []*client.Client{ca, cb} {
		q, err := c.Queue(t.Context())
		if err != nil || len(q.Queued) != 3 {
			t.Fatalf("queue: %+v, %v; want the 3 runs", q, err)
		}
		for i, r := range q.Queued {
			if r.AgentExecutionID != queued[i] || r.Position != i+1 {
				t.Fatalf("queue position %d: %s, want %s", i+1, r.AgentExecutionID, queued[i])
			}
		}
	}
	// The second is stopped through beta while it waits: cancelled.
	if ex, err := cb.Stop(t.Context(), queued[1]); err != nil || ex.Lifecycle != eventstore.LifecycleCancelled {
		t.Fatalf("stop of a queued run through beta: %s, %v", ex.Lifecycle, err)
	}
	// Room on beta: the first queued starts there; then on alpha the last.
	if _, err := cb.Stop(t.Context(), busy[1]); err != nil {
		t.Fatal(err)
	}
	first := waitExecution(t, ca, queued[0], "started", func(ex client.Execution) bool { return ex.Lifecycle == eventstore.LifecycleRunning })
	if first.Host != "beta" {
		t.Fatalf("the first queued run started on %q, want beta", first.Host)
	}
	if ex, _ := ca.Execution(t.Context(), queued[2]); ex.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("the last queued run is %s with no room anywhere, want starting", ex.Lifecycle)
	}
	if _, err := ca.Stop(t.Context(), busy[0]); err != nil {
		t.Fatal(err)
	}
	last := waitExecution(t, ca, queued[2], "started", func(ex client.Execution) bool { return ex.Lifecycle == eventstore.LifecycleRunning })
	if last.Host != "alpha" {
		t.Fatalf("the last queued run started on %q, want alpha", last.Host)
	}
	// beta hears of the start as the bucket tells it, a moment later.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		q, err := cb.Queue(t.Context())
		if err == nil && len(q.Queued) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue once all started: %+v, %v", q, err)
		}
	}
}

// Many queued runs and two hosts with room racing for them: every run
// starts exactly once.
func TestQueuedRunsStartOnce(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha := openHost(t, "alpha", nil, func(c *daemon.Config) {
		c.MaxRunning = 40
	})
	beta := openHost(t, "beta", alpha, func(c *daemon.Config) {
		c.MaxRunning = 40
	})
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	const runs = 30
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		c := []*client.Client{ca, cb}[i%2]
		wg.Go(func() {
			l, err := c.Launch(t.Context(), queuedLaunch(fmt.Sprint("t-race-", i), nil, agent, "say:hello", "exit:0"))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = l.Reference.AgentExecutionID
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	hosts := map[string]int{}
	for _, id := range ids {
		ex := waitExecution(t, ca, id, "ended", func(ex client.Execution) bool { return ex.Lifecycle.Final() })
		if ex.Lifecycle != eventstore.LifecycleCompleted {
			t.Errorf("%s ended %s (%s), want completed", id, ex.Lifecycle, ex.LifecycleReason)
		}
		hosts[ex.Host]++
		ref, err := alpha.Store().Lookup(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		placed, running := 0, 0
		for e, err := range alpha.Store().ReadJournal(t.Context(), ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			if sc, ok := e.Record.(*eventstore.StateChanged); ok && sc.Host != "" {
				if sc.Lifecycle == eventstore.LifecycleRunning {
					running++
				} else {
					placed++
				}
			}
		}
		if placed != 1 || running != 1 {
			t.Errorf("%s: placed %d times and started %d times, want once each", id, placed, running)
		}
	}
	t.Logf("runs started per host: %v", hosts)
}
