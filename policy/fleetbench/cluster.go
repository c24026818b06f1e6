package fleetbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
)

// cluster is one round's three nodes, each with the journal store on it.
type cluster struct {
	dir string
	// secret is what clients log in to its nodes with.
	secret string
	buses  []*bus.Bus
	stores []*eventstore.JetStreamStore
}

// openCluster starts Nodes clustered servers on loopback in a fresh
// subdirectory of parent, the journal stream at 3 replicas. On error it
// leaves nothing behind.
func openCluster(ctx context.Context, parent string) (_ *cluster, err error) {
	dir, err := os.MkdirTemp(parent, "fleet-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	c.secret = secret
	ports, err := freePorts(Nodes)
	if err != nil {
		return nil, err
	}
	routes := make([]string, Nodes)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	c.buses = make([]*bus.Bus, Nodes)
	errs := make([]error, Nodes)
	var wg sync.WaitGroup
	// Every Open waits for a majority of the cluster: one after the other
	// they would never finish.
	for i := range Nodes {
		cfg := bus.DefaultConfig()
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("node-%d", i))
		cfg.Replicas = Nodes
		cfg.Secret = secret
		cfg.Cluster = bus.ClusterConfig{Name: "fleetbench", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes}
		wg.Go(func() { c.buses[i], errs[i] = bus.Open(ctx, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("open cluster: %w", err)
	}
	for i, b := range c.buses {
		s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		c.stores = append(c.stores, s)
	}
	return c, nil
}

// Close closes every store and node, at once, and removes the cluster's
// directory.
func (c *cluster) Close() error {
	var errs []error
	for _, s := range c.stores {
		errs = append(errs, s.Close())
	}
	closed := make([]error, len(c.buses))
	var wg sync.WaitGroup
	for i, b := range c.buses {
		if b != nil {
			wg.Go(func() { closed[i] = b.Close() })
		}
	}
	wg.Wait()
	errs = append(errs, closed...)
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Routes name their peers' ports up front, so port 0 will not do.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	// Each listener is held until all are picked, so the ports are
	// distinct.
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// newSecret is a fresh secret for the round's servers: a listening server
// refuses to run without one, and the round's cluster is nobody else's.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
