package bus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
)

// clusterNode is one node's configuration in a test cluster.
type clusterNode struct {
	dir string
	cfg bus.Config
}

// clusterConfigs returns the configurations of an n-node cluster on loopback,
// each on its own data directory, every node routing to all of them.
func clusterConfigs(t *testing.T, n int) []clusterNode {
	t.Helper()
	ports := fixtures.FreePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	nodes := make([]clusterNode, n)
	for i := range nodes {
		dir := t.TempDir()
		cfg := config(dir)
		cfg.Replicas = 3
		cfg.Cluster = bus.ClusterConfig{Name: "journal-test", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes}
		nodes[i] = clusterNode{dir: dir, cfg: cfg}
	}
	return nodes
}

// openCluster opens every node at once.
func openCluster(t *testing.T, nodes []clusterNode) []*bus.Bus {
	t.Helper()
	cfgs := make([]bus.Config, len(nodes))
	for i, n := range nodes {
		cfgs[i] = n.cfg
	}
	return fixtures.OpenNATSCluster(t, cfgs)
}

func TestClusterReplicatesTheStream(t *testing.T) {
	nodes := clusterConfigs(t, 3)
	buses := openCluster(t, nodes)
	ctx := t.Context()

	names := map[string]bool{}
	for i, b := range buses {
		if !b.Clustered() {
			t.Errorf("node %d: Clustered() = false, want true", i)
		}
		data, err := os.ReadFile(filepath.Join(nodes[i].dir, "server-name"))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if got, want := b.ServerName(), strings.TrimSpace(string(data)); got != want {
			t.Errorf("node %d: ServerName() = %q, want %q from its data directory", i, got, want)
		}
		names[b.ServerName()] = true
	}
	if len(names) != 3 {
		t.Fatalf("server names %v, want 3 distinct ones", names)
	}

	// Every node set the stream up at the same moment; they share one.
	created := map[time.Time]bool{}
	for i, b := range buses {
		info, err := b.Stream().Info(ctx)
		if err != nil {
			t.Fatalf("node %d: stream info: %v", i, err)
		}
		created[info.Created] = true
	}
	if len(created) != 1 {
		t.Errorf("stream creation times %v, want one stream", created)
	}
	info, err := buses[1].Stream().Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	if got, want := info.Config.Replicas, 3; got != want {
		t.Errorf("replicas = %d, want %d", got, want)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Errorf("cluster info %+v, want a leader and 2 more replicas", info.Cluster)
	}

	ack := publish(t, buses[0].JetStream(), testSubject, "replicated", "rec-1")
	if ack.Sequence != 1 {
		t.Errorf("ack sequence = %d, want 1", ack.Sequence)
	}
	for i, b := range buses {
		checkLast(t, b, fmt.Sprintf("node %d", i), "replicated")
	}

	// A process joining with the default of 1 replica does not take copies
	// of the log away.
	joined, err := bus.Open(ctx, bus.Config{URL: buses[0].ClientURL(), Secret: fixtures.NATSSecret})
	if err != nil {
		t.Fatalf("join the cluster with a URL: %v", err)
	}
	info, err = joined.Stream().Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	if got, want := info.Config.Replicas, 3; got != want {
		t.Errorf("replicas after a process joined asking for 1 = %d, want %d", got, want)
	}
	if err := joined.Close(); err != nil {
		t.Fatalf("close the joined bus: %v", err)
	}

	// A node that restarts comes back under its name and catches up with
	// what was written while it was away.
	name := buses[2].ServerName()
	if err := buses[2].Close(); err != nil {
		t.Fatalf("close node 2: %v", err)
	}
	publish(t, buses[0].JetStream(), testSubject, "while away", "rec-2")
	back, err := bus.Open(ctx, nodes[2].cfg)
	if err != nil {
		t.Fatalf("reopen node 2: %v", err)
	}
	t.Cleanup(func() { back.Close() })
	if got := back.ServerName(); got != name {
		t.Errorf("reopened node 2 is named %q, want %q as before", got, name)
	}
	msg, err := back.Stream().GetMsg(ctx, 2)
	if err != nil {
		t.Fatalf("read through the reopened node: %v", err)
	}
	if got, want := string(msg.Data), "while away"; got != want {
		t.Errorf("data = %q, want %q", got, want)
	}
}

func TestClusterWaitsForAMajority(t *testing.T) {
	nodes := clusterConfigs(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		b, err := bus.Open(ctx, nodes[0].cfg)
		if err == nil {
			b.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("open one node of three returned %v, want it to wait for a peer", err)
	case <-time.After(time.Second):
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("open after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("open did not return after its context was cancelled")
	}
}
