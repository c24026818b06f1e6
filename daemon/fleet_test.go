package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fleet"
)

// openHost opens a daemon as a host of a fleet named name with a lease of
// 2 s and an API listener: on an embedded NATS that listens when join is
// nil, joined to join's NATS otherwise; edit, when set, edits the rest.
func openHost(t testing.TB, name string, join *daemon.Daemon, edit func(*daemon.Config)) *daemon.Daemon {
	t.Helper()
	return openDaemon(t, func(c *daemon.Config) {
		c.Listen, c.HostName, c.Lease = "127.0.0.1:0", name, 2*time.Second
		c.Bus.Secret = fixtures.NATSSecret
		if join == nil {
			c.Bus.Listen = "127.0.0.1:0"
		} else {
			c.Bus.URL = join.Bus().ClientURL()
		}
		if edit != nil {
			edit(c)
		}
	})
}

// twoHosts opens two daemons on one log: alpha on an embedded NATS that
// listens, beta joined to it by URL, as `serve --nats-url` joins.
func twoHosts(t testing.TB) (alpha, beta *daemon.Daemon) {
	t.Helper()
	alpha = openHost(t, "alpha", nil, func(c *daemon.Config) {
		c.Labels = map[string]string{"role": "runner"}
	})
	beta = openHost(t, "beta", alpha, nil)
	return alpha, beta
}

// waitExecution polls c until ok holds of the execution.
func waitExecution(t *testing.T, c *client.Client, id, what string, ok func(client.Execution) bool) client.Execution {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ex, err := c.Execution(t.Context(), id)
		if err == nil && ok(ex) {
			return ex
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never %s (last %+v, %v)", id, what, ex.State, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent launched on one host asks a question; the answer sent through
// the other host reaches it, and the caller gets the running host's
// acknowledgement.
func TestAnswerThroughAnotherHost(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha, beta := twoHosts(t)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()

	l, err := ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-fleet",
		Agent: "generic", Command: []string{agent, "ask:r1:which branch?", "say:done", "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	asked := waitExecution(t, cb, id, "asked r1 as beta sees it", func(ex client.Execution) bool { return ex.CurrentInputRequestID == "r1" })
	if asked.Host != "alpha" || asked.Live.Running {
		t.Fatalf("beta sees host %q, running here %v; want alpha, not here", asked.Host, asked.Live.Running)
	}

	// Through beta, by hand, to see who answered.
	body, _ := json.Marshal(client.Message{MessageID: "a-1", Type: "answer", Payload: json.RawMessage(`{"requestId":"r1","text":"main"}`)})
	status, host, answered := call(t, beta, "POST", "/v1/executions/"+id+"/messages", body)
	var ack client.MessageAck
	json.Unmarshal([]byte(answered), &ack)
	if status != http.StatusOK || ack.Delivery != eventstore.DeliveryDelivered || host != "alpha" {
		t.Fatalf("answer through beta: %d %s from host %q; want delivered by alpha", status, answered, host)
	}
	// A retry through either host gets the first acknowledgement, and
	// the journal holds the answer once.
	again, err := ca.SendMessage(t.Context(), id, client.Message{MessageID: "a-1", Type: "answer", Payload: json.RawMessage(`{"requestId":"r1","text":"main"}`)})
	if err != nil || !again.Duplicate || again.Sequence != ack.Sequence {
		t.Fatalf("retried answer: %+v, %v; want the first acknowledgement %+v", again, err, ack)
	}
	waitExecution(t, cb, id, "took the answer", func(ex client.Execution) bool {
		return ex.CurrentInputRequestID == "" && ex.Attention == eventstore.AttentionAutonomous
	})
	// Its output is kept on alpha, and read through beta.
	waitOutput(t, beta, id, "alpha", "answer r1: ")

	// Both hosts know each other, and alpha runs the execution.
	hosts, err := cb.Hosts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if hosts.Self != "beta" || len(hosts.Hosts) != 2 {
		t.Fatalf("hosts seen by beta: %+v", hosts)
	}
	waitHosts(t, cb, func(h client.Hosts) bool {
		a := h.Hosts[0]
		return a.Name == "alpha" && a.State == "live" && slices.Contains(a.Executions, id) && a.Labels["role"] == "runner" && !a.Self
	})

	// A stop through beta stops it on alpha.
	stopped, err := cb.Stop(t.Context(), id)
	if err != nil {
		t.Fatalf("stop through beta: %v", err)
	}
	if !stopped.Lifecycle.Final() {
		t.Fatalf("stopped through beta: %s", stopped.Lifecycle)
	}
	var answers int
	for e, err := range alpha.Store().ReadJournal(t.Context(), l.Reference, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := e.Record.(*eventstore.MessageAccepted); ok && m.MessageType == "answer" {
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("%d answers journaled, want 1", answers)
	}
}

// call sends a request to d's API with its token and returns the status,
// the host that answered (fleet.HostHeader) and the body.
func call(t *testing.T, d *daemon.Daemon, method, path string, body []byte) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, d.URL()+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.Token())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get(fleet.HostHeader), b.String()
}

// waitOutput waits until the output of execution id, read through d, holds
// want, written by host ("" for any).
func waitOutput(t *testing.T, d *daemon.Daemon, id, host, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, from, out := call(t, d, "GET", "/v1/executions/"+id+"/output", nil)
		if status == http.StatusOK && (host == "" || from == host) && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's output read through %s: %d from %q: %s; want %q from %q", id, d.Fleet().Name(), status, from, out, want, host)
		}
	}
}

// checkNotJournaled fails when a record of ref holds secret.
func checkNotJournaled(t *testing.T, d *daemon.Daemon, ref eventstore.Reference, secret string) {
	t.Helper()
	for e, err := range d.Store().ReadJournal(t.Context(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := eventstore.Encode(e.Record); strings.Contains(string(b), secret) {
			t.Fatalf("a secret of the launch is in the journal: %s", b)
		}
	}
}

func waitHosts(t *testing.T, c *client.Client, ok func(client.Hosts) bool) client.Hosts {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := c.Hosts(t.Context())
		if err == nil && ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosts never as wanted: %+v, %v", h, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// An answer for an execution whose host is gone is refused, and its
// request stays open: nothing is recorded that the agent never heard.
func TestAnswerForALostHostIsRefused(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha, beta := twoHosts(t)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	l, err := ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-lost",
		Agent: "generic", Command: []string{agent, "ask:r1:which branch?", "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	waitExecution(t, cb, id, "asked r1", func(ex client.Execution) bool { return ex.CurrentInputRequestID == "r1" })
	// alpha stops taking forwarded requests and beating, as when its
	// machine drops off the network; its agent runs on.
	if err := alpha.Fleet().Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = cb.SendMessage(t.Context(), id, client.Message{Type: "answer", Payload: json.RawMessage(`{"requestId":"r1","text":"main"}`)})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "host alpha") || !strings.Contains(ae.Message, "nothing was recorded") {
		t.Fatalf("answer for a host that left: %v; want 503 naming host alpha", err)
	}
	ex, err := cb.Execution(t.Context(), id)
	if err != nil || ex.CurrentInputRequestID != "r1" || ex.Attention != eventstore.AttentionAwaitingOperator {
		t.Fatalf("after the refused answer: request %q attention %s (%v); want r1 still open", ex.CurrentInputRequestID, ex.Attention, err)
	}
	// The host itself still takes it.
	if ack, err := ca.SendMessage(t.Context(), id, client.Message{Type: "answer", Payload: json.RawMessage(`{"requestId":"r1","text":"main"}`)}); err != nil || ack.Delivery != eventstore.DeliveryDelivered {
		t.Fatalf("answer on alpha: %+v, %v", ack, err)
	}
}

// A host that dies (its connection to the log gone, as with its process)
// is lost once its lease passes; the other host then ends what it ran,
// once, and the execution can be resumed there.
func TestALostHostsExecutionsEnd(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	alpha, beta := twoHosts(t)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	l, err := ca.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-gone",
		Agent: "generic", Command: []string{agent, "ask:r1:which branch?", "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	waitExecution(t, cb, id, "asked r1", func(ex client.Execution) bool { return ex.CurrentInputRequestID == "r1" })
	alpha.Bus().Conn().Close()
	ended := waitExecution(t, cb, id, "ended by beta", func(ex client.Execution) bool { return ex.Lifecycle.Final() })
	if ended.Lifecycle != eventstore.LifecycleTerminated || ended.LifecycleReason != "host_lost" || ended.Interrupted == nil ||
		!strings.Contains(ended.Interrupted.Detail, "host alpha") || ended.CurrentInputRequestID != "" {
		t.Fatalf("ended as %s (%s), interrupted %+v, request %q", ended.Lifecycle, ended.LifecycleReason, ended.Interrupted, ended.CurrentInputRequestID)
	}
	var interruptions, ends int
	for e, err := range beta.Store().ReadJournal(t.Context(), l.Reference, 1) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := e.Record.(type) {
		case *eventstore.Interruption:
			interruptions++
		case *eventstore.StateChanged:
			if r.Lifecycle.Final() {
				ends++
			}
		}
	}
	if interruptions != 1 || ends != 1 {
		t.Fatalf("%d interruptions and %d ends journaled, want one each", interruptions, ends)
	}
	// Resumed on beta, it runs there.
	r, err := cb.Resume(t.Context(), id, client.ResumeRequest{Prompt: "go on"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State.Host != "beta" {
		t.Fatalf("the resume runs on %q, want beta", r.State.Host)
	}
}
