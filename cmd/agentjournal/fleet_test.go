package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// alphaOnBeta starts two daemon processes as two hosts of one log: beta
// holds the NATS (lease 1s), alpha joins it with the lease given, leaving its
// supervised agents running when it stops.
func alphaOnBeta(t *testing.T, alphaLease string, alphaFlags ...string) (alpha, beta *daemonProc, betaDir string) {
	t.Helper()
	betaDir = t.TempDir()
	beta = startDaemon(t, "beta", betaDir, nil, "--host-name", "beta", "--lease", "1s",
		"--nats-listen", fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0]))
	secret := daemon.Layout{Dir: betaDir}.NATSSecret()
	alpha = startDaemon(t, "alpha", t.TempDir(), []string{"--nats-url", beta.natsURL, "--nats-secret-file", secret},
		append([]string{"--host-name", "alpha", "--lease", alphaLease, "--on-stop=leave"}, alphaFlags...)...)
	return alpha, beta, betaDir
}

// Two daemons as two hosts of one log: beta holds the NATS, alpha joins it.
// An agent on alpha asks; the answer given through beta reaches it. With
// alpha killed, an answer through beta is refused and the question stays
// open; alpha back within its lease attaches to its agent again, and the
// answer through beta gets through.
func TestFleetAnswerThroughAnyDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes")
	}
	a, b, dirB := alphaOnBeta(t, "2m", "--label", "os=linux")

	id := a.launchAgent(t, "t-fleet", askingAgent("r1")...)
	pollUntil(t, procConvergeWait, "beta sees r1 asked", func() (bool, string) {
		st := b.state(t, id)
		return st.CurrentInputRequestID == "r1", fmt.Sprintf("%+v", st)
	})
	var host struct {
		Host string `json:"host"`
	}
	b.get(t, "/v1/executions/"+id, &host)
	if host.Host != "alpha" {
		t.Fatalf("beta says %s runs on %q, want alpha", id, host.Host)
	}
	// Its next heartbeat tells what runs there.
	pollUntil(t, procConvergeWait, "beta lists both hosts and alpha running the agent", func() (bool, string) {
		r := run(t, dirB, "hosts")
		return r.code == exitOK && strings.Contains(r.stdout, "alpha  live") && strings.Contains(r.stdout, "running 1/") &&
			strings.Contains(r.stdout, "os=linux") && strings.Contains(r.stdout, id) && strings.Contains(r.stdout, "* beta  live"), r.stdout + r.stderr
	})

	// alpha dies; its agent lives on under its supervisor, and within
	// alpha's lease beta waits for it.
	a.kill()
	refused := run(t, dirB, "send", id, "--answer", "r1", "main")
	if refused.code == exitOK || !strings.Contains(refused.stderr, "host alpha") || !strings.Contains(refused.stderr, "nothing was recorded") {
		t.Fatalf("answer through beta with alpha gone: exit %d: %s%s", refused.code, refused.stdout, refused.stderr)
	}
	if st := b.state(t, id); st.CurrentInputRequestID != "r1" || st.Attention != "awaiting-operator" {
		t.Fatalf("after the refused answer: %+v; want r1 still open", st)
	}

	// alpha comes back and attaches to its agent; the answer goes through.
	a.restart()
	var sent result
	pollUntil(t, procConvergeWait, "the answer through beta once alpha is back", func() (bool, string) {
		sent = run(t, dirB, "send", id, "--answer", "r1", "main")
		return sent.code == exitOK && strings.Contains(sent.stdout, "delivered"), sent.stdout + sent.stderr
	})
	pollUntil(t, procConvergeWait, "the answer closes r1", func() (bool, string) {
		st := a.state(t, id)
		return st.CurrentInputRequestID == "" && st.Attention == "autonomous", fmt.Sprintf("%+v", st)
	})
	answers := 0
	for _, r := range a.records(t, id) {
		if r.Type == "message.accepted" {
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("%d messages journaled, want the one answer", answers)
	}
	a.stop()
}

// A host killed and back only after its lease: the other host ended its
// execution (host_lost) once the lease was over; the returning host stops
// the agent that ran on, journals that it did, and starts nothing again.
func TestFleetHostBackAfterItsLease(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes")
	}
	a, b, _ := alphaOnBeta(t, "1s")
	id := a.launchAgent(t, "t-back", askingAgent("r1")...)
	pollUntil(t, procConvergeWait, "beta sees r1 asked", func() (bool, string) {
		st := b.state(t, id)
		return st.CurrentInputRequestID == "r1", fmt.Sprintf("%+v", st)
	})
	a.kill()
	pollUntil(t, procConvergeWait, "beta ends alpha's execution", func() (bool, string) {
		st := b.state(t, id)
		return st.Lifecycle == "terminated", fmt.Sprintf("%+v", st)
	})
	a.restart()
	pollUntil(t, procConvergeWait, "alpha journals that it stopped the agent that ran on", func() (bool, string) {
		recs := b.records(t, id)
		for _, r := range recs {
			if strings.HasPrefix(r.ObservationID, "host-returned-") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d records, none host-returned", len(recs))
	})
	running := 0
	for _, r := range b.records(t, id) {
		if r.Type == "state.changed" && (strings.HasPrefix(r.Reason, "process ") || strings.HasPrefix(r.Reason, "attached")) {
			running++
		}
	}
	if running != 1 {
		t.Fatalf("the execution went to running %d times, want once: nothing is started again", running)
	}
	if st := b.state(t, id); st.Lifecycle != "terminated" {
		t.Fatalf("after alpha came back the execution is %s, want it left terminated", st.Lifecycle)
	}
}
