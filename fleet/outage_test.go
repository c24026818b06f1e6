package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fleet"
)

// TestWatchesComeBackAfterAnOutage stops the log's server for longer than
// the watches' own activity check and starts it again on the same store
// and port: a member that was joined before must then hear of a host that
// joins after and of a run queued after, as a daemon that outlived a NATS
// restart must, or its views of the hosts and the queue stay frozen.
func TestWatchesComeBackAfterAnOutage(t *testing.T) {
	dir := t.TempDir()
	port := fixtures.FreePorts(t, 1)[0]
	listen := func(c *bus.Config) { c.Listen = fmt.Sprintf("127.0.0.1:%d", port) }
	cfg := bus.DefaultConfig()
	cfg.DataDir, cfg.Secret = dir, fixtures.NATSSecret
	listen(&cfg)
	b, err := bus.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := b.ClientURL()
	connect := func() (*nats.Conn, jetstream.JetStream) {
		nc, err := nats.Connect(url, nats.UserInfo(bus.User, fixtures.NATSSecret), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	member := func(name string) *fleet.Fleet {
		nc, js := connect()
		f, err := fleet.Join(t.Context(), fleet.Config{Conn: nc, JS: js, Stream: b.StreamName(), Name: name, Lease: time.Second})
		if err != nil {
			t.Fatalf("join %s: %v", name, err)
		}
		t.Cleanup(func() { f.Close(context.Background()) })
		return f
	}
	alpha := member("alpha")
	beta := member("beta")
	waitMember(t, alpha, "beta", fleet.Live)

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Longer than twice a watch's idle heartbeat, so that the client
	// takes its consumers for gone while the server is away.
	time.Sleep(12 * time.Second)
	b2 := fixtures.StartNATSAt(t, dir, listen)
	if b2.ClientURL() != url {
		t.Fatalf("the server came back on %s, not %s", b2.ClientURL(), url)
	}

	back := time.Now()
	gamma := member("gamma")
	waitMember(t, alpha, "gamma", fleet.Live)
	waitMember(t, alpha, "beta", fleet.Live)
	t.Logf("alpha heard of gamma %s after the server came back", time.Since(back).Round(time.Millisecond))

	now := time.Now().UTC()
	if err := beta.Enqueue(t.Context(), fleet.Queued{ID: "ae-after-outage", Agent: "command", QueuedAt: now, Eligible: now.Add(time.Hour),
		Launch: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		found := false
		for _, q := range alpha.Queue() {
			found = found || q.ID == "ae-after-outage"
		}
		if found {
			t.Logf("alpha heard of the run %s after it was queued", time.Since(now).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alpha never heard of the run queued after the outage: its queue is %v", alpha.Queue())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Closed while the server they last heartbeat to is there.
	for _, f := range []*fleet.Fleet{gamma, beta, alpha} {
		if err := f.Close(t.Context()); err != nil {
			t.Errorf("close %s: %v", f.Name(), err)
		}
	}
}
