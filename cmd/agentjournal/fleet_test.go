package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// Two daemons as two hosts of one log: beta holds the NATS, alpha joins it.
// An agent on alpha asks; the answer given through beta reaches it. With
// alpha killed, an answer through beta is refused and the question stays
// open; once alpha is back and attached to its agent again, the answer
// through beta gets through.
func TestFleetAnswerThroughAnyDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes")
	}
	dirB := t.TempDir()
	b := startDaemon(t, "beta", dirB, nil, "--host-name", "beta", "--lease", "1s",
		"--nats-listen", fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0]))
	secret := daemon.Layout{Dir: dirB}.NATSSecret()
	a := startDaemon(t, "alpha", t.TempDir(), []string{"--nats-url", b.natsURL, "--nats-secret-file", secret},
		"--host-name", "alpha", "--label", "os=linux", "--lease", "1s", "--on-stop=leave")

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

	// alpha dies; its agent lives on under its supervisor.
	a.kill()
	pollUntil(t, procConvergeWait, "beta takes alpha for lost", func() (bool, string) {
		r := run(t, dirB, "hosts")
		return strings.Contains(r.stdout, "alpha  lost"), r.stdout + r.stderr
	})
	refused := run(t, dirB, "send", id, "--answer", "r1", "main")
	if refused.code == exitOK || !strings.Contains(refused.stderr, "host alpha") || !strings.Contains(refused.stderr, "nothing was recorded") {
		t.Fatalf("answer through beta with alpha gone: exit %d: %s%s", refused.code, refused.stdout, refused.stderr)
	}
	if st := b.state(t, id); st.CurrentInputRequestID != "r1" || st.Attention != "awaiting-operator" {
		t.Fatalf("after the refused answer: %+v; want r1 still open", st)
	}

	// alpha comes back and attaches to its agent; the answer goes through.
	a.restart()
	pollUntil(t, procConvergeWait, "beta sees alpha live again", func() (bool, string) {
		r := run(t, dirB, "hosts")
		return strings.Contains(r.stdout, "alpha  live"), r.stdout + r.stderr
	})
	sent := run(t, dirB, "send", id, "--answer", "r1", "main")
	if sent.code != exitOK || !strings.Contains(sent.stdout, "delivered") {
		t.Fatalf("answer through beta once alpha is back: exit %d: %s%s", sent.code, sent.stdout, sent.stderr)
	}
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
