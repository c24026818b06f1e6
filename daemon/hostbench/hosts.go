package hostbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
)

// The hosts' names in the fleet.
const (
	hostAlpha = "alpha"
	hostBeta  = "beta"
)

const (
	// stopGrace is how long a stopped agent gets before SIGKILL.
	stopGrace = 2 * time.Second
	// stopTimeout bounds the stop of the agent the messages went to: a
	// stop that comes to SIGKILL takes two grace periods.
	stopTimeout = 2*stopGrace + 3*time.Second
	// requestTimeout bounds one request of the benchmark, so that a stuck
	// host fails the run instead of hanging it.
	requestTimeout = time.Minute
	// seeTimeout bounds the wait for one host to see what the other did:
	// its heartbeat, or an execution it runs.
	seeTimeout = time.Minute
	// pollInterval is how often that wait asks again.
	pollInterval = 20 * time.Millisecond
)

// hosts are two daemons on one log, opened as `serve --nats-listen` and
// `serve --nats-url` open them, each in a data directory of its own under
// one scratch directory, with a client of each one's API.
type hosts struct {
	alpha, beta *daemon.Daemon
	// ca and cb are clients of alpha's and beta's API.
	ca, cb *client.Client

	// closes run in reverse order on Close.
	closes []func() error
	closed bool
}

// openFleet opens alpha on an embedded NATS that listens on loopback, and
// beta joined to it by URL, in a fresh subdirectory of dir, and waits until
// alpha sees beta live, so that a launch can be placed on it.
func openFleet(ctx context.Context, dir string) (_ *hosts, err error) {
	h := &hosts{}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("hostbench: open the hosts: %w", err), h.Close())
		}
	}()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return h, err
	}
	scratch, err := os.MkdirTemp(dir, "hostbench-")
	if err != nil {
		return h, err
	}
	h.onClose(func() error { return os.RemoveAll(scratch) })

	alphaDir := filepath.Join(scratch, hostAlpha)
	if err := os.Mkdir(alphaDir, 0o700); err != nil {
		return h, err
	}
	// A NATS that listens lets in only those who have the secret, kept
	// where serve keeps it.
	secret, err := bus.LoadOrCreateSecret(daemon.Layout{Dir: alphaDir}.NATSSecret())
	if err != nil {
		return h, err
	}
	if h.alpha, err = h.open(ctx, alphaDir, hostAlpha, func(c *bus.Config) { c.Listen = "127.0.0.1:0" }, secret); err != nil {
		return h, err
	}
	url := h.alpha.Bus().ClientURL()
	if h.beta, err = h.open(ctx, filepath.Join(scratch, hostBeta), hostBeta, func(c *bus.Config) { c.URL = url }, secret); err != nil {
		return h, err
	}
	h.ca, h.cb = client.New(h.alpha.URL(), h.alpha.Token()), client.New(h.beta.URL(), h.beta.Token())
	h.onClose(h.ca.Close)
	h.onClose(h.cb.Close)
	err = poll(ctx, "alpha to see beta live", func(ctx context.Context) (bool, error) {
		hs, err := h.ca.Hosts(ctx)
		if err != nil {
			return false, err
		}
		for _, host := range hs.Hosts {
			if host.Name == hostBeta && host.State == "live" {
				return true, nil
			}
		}
		return false, nil
	})
	return h, err
}

// open opens one host, with its bus as join says, and has Close close it.
func (h *hosts) open(ctx context.Context, dir, name string, join func(*bus.Config), secret string) (*daemon.Daemon, error) {
	cfg := daemon.DefaultConfig(dir)
	cfg.Listen, cfg.HostName, cfg.StopGrace = "127.0.0.1:0", name, stopGrace
	cfg.Bus.Secret = secret
	join(&cfg.Bus)
	// The figures are forwarding's: the search index's indexing would
	// compete with it for the CPU.
	cfg.NoSearch = true
	d, err := daemon.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	h.onClose(func() error {
		stop, cancel := context.WithTimeout(context.Background(), d.CloseTimeout())
		defer cancel()
		if err := d.Close(stop); err != nil {
			return fmt.Errorf("close %s: %w", name, err)
		}
		return nil
	})
	return d, nil
}

func (h *hosts) onClose(fn func() error) { h.closes = append(h.closes, fn) }

// Close closes the clients, beta, then alpha, whose NATS beta's log is
// on, and removes the directory. It is safe to call twice.
func (h *hosts) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for i := len(h.closes) - 1; i >= 0; i-- {
		errs = append(errs, h.closes[i]())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hostbench: close the hosts: %w", err)
	}
	return nil
}

// poll calls done every pollInterval until it says so, for at most
// seeTimeout. An error of done is kept for the failure's message, not
// returned at once: a host may answer 503 while it catches up.
func poll(ctx context.Context, what string, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, seeTimeout)
	defer cancel()
	var last error
	for {
		ok, err := done(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			if last != nil {
				return fmt.Errorf("wait for %s: %w (last: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}
