package apitest

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/search"
)

// Token is the API token of every stack Start builds.
const Token = "test-token-0123456789abcdef0123456789abcdef"

// Stack is a running daemon stack; t's cleanup stops it.
type Stack struct {
	// Daemon is the stack itself.
	Daemon *daemon.Daemon
	// Bus is the log's NATS, for tests that write around the store.
	Bus     *bus.Bus
	Store   *eventstore.JetStreamStore
	Views   *projections.DB
	Runtime *runtime.Runtime
	Server  *api.Server
	HTTP    *httptest.Server
	// Agent is the fixture agent binary.
	Agent string
}

// PauseProjector stops the projector until resume is called, for tests of
// what answers and reads do while the read models are behind the log.
func (s *Stack) PauseProjector() (resume func()) { return s.Daemon.PauseProjector() }

// Options change what Start builds.
type Options struct {
	// NoPolicy leaves the policy subscriber out, for tests that watch
	// observations wait for a decision that does not come.
	NoPolicy bool
	// Configure edits the API configuration before the server starts.
	Configure []func(*api.Config)
	// MaxRunning is the runtime's limit of running agents before queued
	// launches wait; the runtime's default when 0.
	MaxRunning int
	// Daemon edits the daemon's configuration last, before it opens: for
	// tests of a fleet, a host's name, labels and lease, and a log shared
	// with another stack (Bus.Listen on one, Bus.URL on the other).
	Daemon func(*daemon.Config)
}

// Start opens the daemon on a temporary data directory, serves its API on
// a loopback httptest server, and closes both when t ends.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	cfg := daemon.DefaultConfig(t.TempDir())
	cfg.Token, cfg.Secret = Token, bytes.Repeat([]byte{7}, api.MinSecretSize)
	// What the API's tests ask of the stack: the routes without MCP
	// (/mcp is not found unless a test mounts one) and without the search
	// index (a test gives it its own), forks that keep their parent's
	// directory, agents stopped at once.
	cfg.NoMCP, cfg.NoSearch, cfg.NoWorkspaces = true, true, true
	cfg.StopGrace = time.Second
	cfg.NoPolicy, cfg.MaxRunning = opts.NoPolicy, opts.MaxRunning
	cfg.ConfigureAPI = func(c *api.Config) {
		for _, configure := range opts.Configure {
			configure(c)
		}
	}
	if opts.Daemon != nil {
		opts.Daemon(&cfg)
	}
	s := &Stack{Agent: fixtures.AgentBinary(t)}
	// Registered before Open, so that it runs after the cleanups the
	// Configure functions register: what they started on the store stops
	// before the store closes.
	t.Cleanup(func() {
		if s.Daemon != nil {
			if err := s.Daemon.Close(context.Background()); err != nil {
				t.Errorf("close the daemon: %v", err)
			}
		}
		if s.HTTP != nil {
			s.HTTP.Close()
		}
	})
	d, err := daemon.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Daemon, s.Bus, s.Store, s.Views, s.Runtime, s.Server = d, d.Bus(), d.Store(), d.Views(), d.Runtime(), d.Server()
	s.HTTP = httptest.NewServer(d.Handler())
	return s
}

// WithSearch gives the server a search index following its log, stopped
// when t ends: the stack leaves search out unless a test asks for it.
func WithSearch(t testing.TB) func(*api.Config) {
	return func(c *api.Config) {
		x, err := search.Open(filepath.Join(t.TempDir(), "search"))
		if err != nil {
			t.Fatal(err)
		}
		c.Search = x
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := x.Follow(ctx, c.Store); err != nil {
				t.Errorf("search follow: %v", err)
			}
		})
		t.Cleanup(func() { cancel(); wg.Wait(); x.Close() })
	}
}
