package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/sandbox"
	"github.com/agentjournal/agentjournal/supervisor"
)

const (
	// DefaultStopGrace is how long a stopped agent gets between SIGTERM
	// and SIGKILL.
	DefaultStopGrace = 5 * time.Second
	// DefaultShutdownTimeout bounds the wait for the API's requests in
	// flight when the daemon closes.
	DefaultShutdownTimeout = 10 * time.Second
	// stopMargin is how long the runtime's close may take beyond the
	// grace: the SIGKILL and the last records (Daemon.CloseTimeout).
	stopMargin = 5 * time.Second
	// DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultIdleTimeout and
	// DefaultMaxConns bound the API listener's connections (listen.go).
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 1024
)

// Config says what Open opens. Every zero value is documented and usable:
// Config{DataDir: dir} is a daemon on an embedded NATS of its own, with the
// API served by Handler only.
type Config struct {
	// DataDir is the data directory; Layout{DataDir} names everything in
	// it. Required.
	DataDir string
	// Bus is the log's NATS: an embedded server (the zero value), one to
	// join (URL), or a node of a cluster (Cluster). Its DataDir is
	// Layout.Bus() and its Logger this Config's when left empty.
	Bus bus.Config
	// Logger receives what the daemon's parts log; discarded when nil.
	Logger *slog.Logger

	// Listen is the API's address, host:port (port 0 picks a free one).
	// Empty opens no listener: the caller serves Handler (a test's
	// httptest server, say), no DaemonInfo file is written, and launched
	// agents get their token but no address.
	Listen string
	// TokenFile is the API token's file, created 0600 when missing;
	// Layout.TokenFile() when empty. Unused when Token is set.
	TokenFile string
	// Token, when set, is the API token instead of TokenFile's.
	Token string
	// Secret, when set, signs the execution-scoped tokens instead of the
	// one kept in Layout.ScopedTokenSecret(); at least api.MinSecretSize
	// bytes.
	Secret []byte
	// ConfigureAPI, when set, edits the API's configuration last, before
	// the server is built.
	ConfigureAPI func(*api.Config)
	// WrapHandler, when set, wraps the API's handler; it is given the API
	// token, for a wrapper that answers some of the operator's requests
	// itself (run refuses launches).
	WrapHandler func(next http.Handler, token string) http.Handler
	// AllowedHosts are the names, besides loopback ones and the listener's
	// own address, that a request's Host header may give (listen.go):
	// any other is refused, which defends a loopback daemon from pages
	// that rebind their DNS name to it. Each is a host name or address,
	// without a port.
	AllowedHosts []string
	// ReadHeaderTimeout bounds the reading of a request's headers on the
	// listener, ReadTimeout that of its headers and body (a stream or a
	// long poll then runs as long as it needs), IdleTimeout how long a
	// connection may wait for its next request, and MaxConns how many
	// connections it holds at once (more wait to be accepted). Each takes
	// its Default when 0.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxConns          int
	// ShutdownTimeout bounds the wait for the API's requests in flight
	// when the daemon closes, within Close's context; those still running
	// then have their context cancelled. DefaultShutdownTimeout when 0.
	ShutdownTimeout time.Duration

	// NoMCP leaves the MCP server out of the API: /mcp is not found.
	NoMCP bool
	// NoSearch leaves the full-text index out: GET /v1/search answers that
	// there is none.
	NoSearch bool
	// NoPolicy leaves the policy subscriber out: observations wait for a
	// decision another process makes.
	NoPolicy bool
	// PolicyPartitions, 2 to eventstore.MaxPartitions, shares the deciding
	// among the daemons of one log (policy.SubscriberConfig.Partitions);
	// 0 has one daemon decide at a time.
	PolicyPartitions int

	// StopGrace is how long a stopped agent or terminal lane gets between
	// SIGTERM and SIGKILL; DefaultStopGrace when 0.
	StopGrace time.Duration
	// Supervisor, when set, runs every agent that keeps one process for
	// its whole execution under a supervisor process that outlives the
	// daemon (Layout.Supervised()); without it the daemon's own process
	// holds every agent's pipes.
	Supervisor *supervisor.Config
	// LeaveRunning makes Close leave supervised agents running, for the
	// next daemon on the data directory to attach to.
	LeaveRunning bool
	// Snapshots snapshots the working directory of every execution in a
	// git work tree at its turn boundaries (runtime.Config.Snapshots).
	Snapshots bool
	// NoWorkspaces gives forks no directory of their own: a fork can only
	// keep its parent's (workspace keep).
	NoWorkspaces bool
	// NoQueue keeps no launch queue in the data directory: queued launches
	// wait in memory only, and those a daemon left there are not taken up.
	NoQueue bool
	// MaxRunning is how many agents may run before a queued launch waits;
	// the number of CPUs when 0.
	MaxRunning int
	// Output, TerminalOutput, TerminalSize and OnInputRequest are handed
	// to the runtime as they are (runtime.Config): the run command shows
	// its agent and answers its questions with them. Nil when unused.
	Output         io.Writer
	TerminalOutput io.Writer
	TerminalSize   func() (cols, rows uint16)
	OnInputRequest func(ref eventstore.Reference, req *eventstore.NeedsInputSignal)
	// HostName is this daemon's name in the fleet of daemons sharing its
	// log (fleet.ValidName); fleet.DefaultName(DataDir) when empty.
	HostName string
	// Labels are this host's labels, for placing launches.
	Labels map[string]string
	// EnvProfiles are this host's environment profiles by name
	// (runtime.Config.EnvProfiles).
	EnvProfiles map[string][]string
	// Sandbox is which launches run sandboxed and how
	// (runtime.Config.Sandbox). The daemon hides its data directory and
	// its token file from every sandboxed agent itself; Sandbox.Hidden
	// adds the secret files it does not know of (a NATS secret or an
	// environment profile kept elsewhere).
	Sandbox runtime.SandboxConfig
	// Limits are fleet-wide limits of running executions per agent kind
	// (fleet.Config.Limits); give the same on every daemon of the log.
	Limits map[string]int
	// MinFreeMemory is the free memory below which this host starts no
	// agent; 0 for no floor.
	MinFreeMemory uint64
	// Lease is how long this host may go unheard before the others take
	// it for lost; fleet.DefaultLease when 0.
	Lease time.Duration
	// Recovered hears of every execution that Open found left running by a
	// host that is gone and marked terminated; when nil, each is logged as
	// a warning.
	Recovered func(executionID string)
}

// DefaultConfig returns the configuration of a daemon on dataDir with
// every default spelled out: an embedded NATS syncing every write, the API
// served by Handler only, the policy, the search index and MCP included.
func DefaultConfig(dataDir string) Config {
	b := bus.DefaultConfig()
	b.DataDir = Layout{Dir: dataDir}.Bus()
	return Config{DataDir: dataDir, Bus: b, StopGrace: DefaultStopGrace, ShutdownTimeout: DefaultShutdownTimeout}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("daemon: "+format, args...)) }
	if c.DataDir == "" {
		add("no DataDir (want the data directory)")
	}
	if err := c.withDefaults().Bus.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			add("Listen %q: %v (want host:port, e.g. 127.0.0.1:7600, or empty for no listener)", c.Listen, err)
		}
	}
	if c.Secret != nil && len(c.Secret) < api.MinSecretSize {
		add("Secret is %d bytes (want at least %d random bytes, or nil for the data directory's)", len(c.Secret), api.MinSecretSize)
	}
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": c.ReadHeaderTimeout, "ReadTimeout": c.ReadTimeout, "IdleTimeout": c.IdleTimeout} {
		if d < 0 {
			add("%s %s is negative (want a duration, or 0 for its default)", name, d)
		}
	}
	if c.MaxConns < 0 {
		add("MaxConns %d is negative (want 1 or more, or 0 for %d)", c.MaxConns, DefaultMaxConns)
	}
	for _, h := range c.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			add("AllowedHosts: %v", err)
		}
	}
	if c.ShutdownTimeout < 0 {
		add("ShutdownTimeout %s is negative (want a duration, or 0 for %s)", c.ShutdownTimeout, DefaultShutdownTimeout)
	}
	if p := c.PolicyPartitions; p < 0 || p == 1 || p > eventstore.MaxPartitions {
		add("PolicyPartitions %d: want 2 to %d, or 0 for one daemon deciding at a time", p, eventstore.MaxPartitions)
	}
	if c.StopGrace < 0 {
		add("StopGrace %s is negative (want a duration, or 0 for %s)", c.StopGrace, DefaultStopGrace)
	}
	if c.Supervisor != nil {
		if err := c.Supervisor.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.HostName != "" {
		if err := fleet.ValidName(c.HostName); err != nil {
			add("%v", err)
		}
	}
	for agent, n := range c.Limits {
		if n < 1 {
			add("Limits: %s=%d: want 1 or more", agent, n)
		}
	}
	if c.Lease < 0 {
		add("Lease %s is negative (want a duration, or 0 for %s)", c.Lease, fleet.DefaultLease)
	}
	if m := c.Sandbox.Mode; !slices.Contains(runtime.SandboxModes, m) {
		add("Sandbox.Mode %q: want %q (launches that ask), %q or %q", m, runtime.SandboxOnRequest, runtime.SandboxDefault, runtime.SandboxRequired)
	}
	if _, err := sandbox.ParseNetwork(string(c.Sandbox.Network)); err != nil {
		add("Sandbox.Network: %v", err)
	}
	if c.MaxRunning < 0 {
		add("MaxRunning %d is negative (want 1 or more, or 0 for the number of CPUs)", c.MaxRunning)
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	l := Layout{Dir: c.DataDir}
	if c.Bus.DataDir == "" {
		c.Bus.DataDir = l.Bus()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Bus.Logger == nil {
		c.Bus.Logger = c.Logger
	}
	if c.TokenFile == "" {
		c.TokenFile = l.TokenFile()
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.StopGrace == 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.HostName == "" {
		c.HostName = fleet.DefaultName(c.DataDir)
	}
	return c
}
