package daemon_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// Launches given to beta go where their placement and the hosts' room say:
// to alpha by its label or name, with their environment; to beta itself by
// name; nowhere, with the reason per host, when no live host fits; and to
// alpha when beta has no room.
func TestLaunchesArePlaced(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha := openHost(t, "alpha", nil, func(c *daemon.Config) {
		c.Labels, c.MaxRunning = map[string]string{"os": "linux", "role": "runner"}, 4
	})
	beta := openHost(t, "beta", alpha, func(c *daemon.Config) {
		c.MaxRunning = 1
	})
	// gamma has no memory to spare: nothing is placed on it.
	openHost(t, "gamma", alpha, func(c *daemon.Config) {
		c.Labels, c.MinFreeMemory = map[string]string{"os": "linux"}, 1<<62
	})
	cb := client.New(beta.URL(), beta.Token())
	defer cb.Close()
	waitHosts(t, cb, func(h client.Hosts) bool { return len(h.Hosts) == 3 })

	launch := func(p *client.Placement, env map[string]string, command ...string) (client.Launched, error) {
		return cb.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-place",
			Agent: "generic", Command: command, Env: env, Placement: p})
	}
	byLabel, err := launch(&client.Placement{On: map[string]string{"role": "runner"}}, map[string]string{"PLACED_SECRET": "s3cret"},
		"/bin/sh", "-c", `echo "secret=$PLACED_SECRET"; exec cat`)
	if err != nil {
		t.Fatal(err)
	}
	if byLabel.State.Host != "alpha" {
		t.Fatalf("placed on role=runner: runs on %q, want alpha", byLabel.State.Host)
	}
	waitOutput(t, beta, byLabel.Reference.AgentExecutionID, "alpha", "secret=s3cret")
	checkNotJournaled(t, beta, byLabel.Reference, "s3cret")

	if l, err := launch(&client.Placement{Host: "beta"}, nil, agent, "wait"); err != nil || l.State.Host != "beta" {
		t.Fatalf("placed on host beta: %+v, %v", l.State.Host, err)
	}
	// beta now runs its one; an unplaced launch goes where there is room.
	if l, err := launch(nil, nil, agent, "wait"); err != nil || l.State.Host != "alpha" {
		t.Fatalf("launched on a full beta: runs on %q (%v), want alpha, which has room", l.State.Host, err)
	}

	var ae *client.Error
	_, err = launch(&client.Placement{On: map[string]string{"gpu": "1"}}, nil, agent, "wait")
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "alpha: it has no label gpu=1") {
		t.Fatalf("placed on gpu=1: %v; want 503 saying alpha has no such label", err)
	}
	_, err = launch(&client.Placement{Host: "gamma"}, nil, agent, "wait")
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "below its floor") {
		t.Fatalf("placed on gamma, short of memory: %v; want 503 saying so", err)
	}
	_, err = launch(&client.Placement{Host: "nobody"}, nil, agent, "wait")
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "no host is named nobody") {
		t.Fatalf("placed on an unknown host: %v", err)
	}
	_, err = launch(&client.Placement{Host: "a.b"}, nil, agent, "wait")
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != "placement.host" {
		t.Fatalf("placed on a bad host name: %v; want 400 naming placement.host", err)
	}
}

// An environment profile lives on the host that defines it: a launch that
// asks for it, taken by another host, runs there with its variables, which
// no record holds; a queued one waits for and starts on such a host; one
// that names a profile no host has is refused.
func TestEnvProfilesStayOnTheirHost(t *testing.T) {
	alpha := openHost(t, "alpha", nil, nil)
	openHost(t, "beta", alpha, func(c *daemon.Config) {
		c.EnvProfiles = map[string][]string{"deploy": {"DEPLOY_TOKEN=t0k-secret"}}
	})
	ca := client.New(alpha.URL(), alpha.Token())
	defer ca.Close()
	waitHosts(t, ca, func(h client.Hosts) bool { return len(h.Hosts) == 2 })
	command := []string{"/bin/sh", "-c", `echo "token=$DEPLOY_TOKEN"; exec cat`}
	now, err := ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-prof",
		Agent: "generic", Command: command, EnvProfile: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	q := queuedLaunch("t-prof-q", nil, command...)
	q.EnvProfile = "deploy"
	later, err := ca.Launch(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []client.Launched{now, later} {
		id := l.Reference.AgentExecutionID
		ex := waitExecution(t, ca, id, "running", func(ex client.Execution) bool { return ex.Lifecycle == eventstore.LifecycleRunning })
		if ex.Host != "beta" {
			t.Fatalf("%s asked for the profile only beta has and runs on %q", id, ex.Host)
		}
		waitOutput(t, alpha, id, "beta", "token=t0k-secret")
		checkNotJournaled(t, alpha, l.Reference, "t0k-secret")
	}
	var ae *client.Error
	_, err = ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-prof",
		Agent: "generic", Command: command, EnvProfile: "nowhere"})
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "has no environment profile nowhere") {
		t.Fatalf("a launch asking for a profile no host has: %v", err)
	}
}
