package bus

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SyncMode says when the embedded server flushes JetStream writes to disk.
type SyncMode string

const (
	// SyncAlways fsyncs every write before it is acknowledged: an acknowledged
	// record survives power loss. The embedded node is the only copy of the
	// log, so this is the default. On a node that only this process writes
	// to (no NATS listener, no cluster), writes acknowledged together share
	// an fsync (a group commit, see Bus.JetStream).
	SyncAlways SyncMode = "always"

	// SyncInterval fsyncs every Config.SyncInterval. It survives a process
	// crash (kill -9) but power loss can lose up to one interval of
	// acknowledged records, in exchange for throughput.
	SyncInterval SyncMode = "interval"
)

const (
	// DefaultStreamName is the name of the one stream that holds every journal.
	DefaultStreamName = "AGENT_JOURNAL"

	// SubjectPrefix is the first token of every journal subject; the stream
	// captures SubjectPrefix + ".>".
	SubjectPrefix = "journal"

	// DefaultSyncInterval matches nats-server's own default.
	DefaultSyncInterval = 2 * time.Minute

	// DuplicateWindow is how long the stream remembers Nats-Msg-Id values, so
	// a retried append with the same record id is a no-op within it.
	DuplicateWindow = 10 * time.Minute
)

// Config says which NATS to use and how to set up the journal stream on it.
// The zero value of every field except DataDir/URL means its default, so
// Config{DataDir: dir} is a complete configuration.
type Config struct {
	// DataDir is the embedded server's directory: JetStream file storage
	// lives in DataDir/nats and the directory lock in DataDir/agentjournal.lock.
	// Required unless URL is set; ignored when it is.
	DataDir string

	// URL connects to an external NATS (a comma-separated list of servers is
	// accepted) instead of embedding one. No server is started and DataDir is
	// not locked.
	URL string

	// Listen is the embedded server's client listener as "host:port"; port 0
	// picks a free port (see Bus.ClientURL). Empty means no listener at all:
	// only this process can reach the server, through an in-process
	// connection; except in a cluster, where nats-server needs a client
	// listener to route and empty means 127.0.0.1 on a free port. Must be
	// empty when URL is set.
	Listen string

	// Sync is when the embedded server fsyncs writes. Empty means SyncAlways.
	Sync SyncMode

	// SyncInterval is the flush period when Sync is SyncInterval. Zero means
	// DefaultSyncInterval.
	SyncInterval time.Duration

	// StreamName names the journal stream. Empty means DefaultStreamName.
	StreamName string

	// Replicas is the stream's replica count: 1 for an embedded server on
	// its own, 3 is usual on a cluster. More than 1 needs Cluster or a URL
	// that reaches a cluster. Open raises an existing stream's count to
	// Replicas but never lowers it. Zero means 1.
	Replicas int

	// Cluster joins the embedded server to a NATS cluster, with JetStream
	// clustered across its nodes. The zero value runs the server on its own.
	Cluster ClusterConfig

	// ServerName names the embedded server. Empty lets nats-server pick one,
	// except in a cluster, where every node needs a name of its own that
	// stays the same across restarts: it is then read from
	// DataDir/server-name, which is created with a random name on first start.
	ServerName string

	// Secret authenticates every connection to an embedded server that
	// listens (Listen or Cluster set): clients, including this process's
	// own, log in as User with it, and cluster routes as RouteUser. With
	// URL it is what this process logs in with ("" for a server without
	// authentication). See LoadOrCreateSecret.
	Secret string

	// owner is the password of OwnerUser, made at Open.
	owner string

	// AllowRemote accepts a Listen or Cluster.Listen that other hosts can
	// reach. The traffic is not encrypted, so it is refused without it.
	AllowRemote bool

	// DiskReserve is the free space, in bytes, an embedded server on its
	// own leaves on the disk that holds DataDir: writes are refused once no
	// more is free, and taken again once space is freed (see
	// Bus.DiskSpace). Zero means DefaultDiskReserve, or a tenth of the disk
	// when that is less.
	DiskReserve int64

	// DiskCheckInterval is how often that free space is measured. Zero
	// means DefaultDiskCheckInterval.
	DiskCheckInterval time.Duration

	// Logger receives the bus's and the embedded server's logs. Nil discards them.
	Logger *slog.Logger
}

// The users of an embedded server that listens: every agentjournal
// process logs in as User, cluster routes as RouteUser, both with Secret.
const (
	User      = "agentjournal"
	RouteUser = "agentjournal-route"
	// OwnerUser is how the process that runs the embedded server logs in
	// to it, in process, with a password it never writes down: the only
	// login that may set up and change the log's streams.
	OwnerUser = "agentjournal-owner"
)

// ClusterConfig says how the embedded server reaches the other nodes of its
// cluster. Every node of one cluster has the same Name, its own Listen and
// DataDir, and Routes to the others; listing a node's own route among them is
// harmless, so every node may be given the same list.
type ClusterConfig struct {
	// Name is the cluster's name. Empty, with Listen and Routes empty too,
	// means no cluster.
	Name string

	// Listen is where this node accepts routes from its peers, "host:port".
	// Port 0 picks a free port, which peers then learn only from the routes
	// this node dials itself.
	Listen string

	// Routes are the peers' route URLs, "nats-route://host:port".
	Routes []string
}

// enabled reports whether any cluster setting is present.
func (c ClusterConfig) enabled() bool {
	return c.Name != "" || c.Listen != "" || len(c.Routes) > 0
}

// DefaultConfig returns the configuration for an embedded server with every
// default spelled out; callers set DataDir (or URL).
func DefaultConfig() Config {
	return Config{
		Sync:         SyncAlways,
		SyncInterval: DefaultSyncInterval,
		StreamName:   DefaultStreamName,
		Replicas:     1,
		// DiskReserve stays 0: its default depends on the disk's size.
		DiskCheckInterval: DefaultDiskCheckInterval,
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("bus: "+format, args...))
	}

	if c.DataDir == "" && c.URL == "" {
		add("no DataDir and no URL: set DataDir to run an embedded server or URL to connect to an existing NATS")
	}
	if c.URL != "" && c.Listen != "" {
		add("Listen %q is set together with URL: a listener applies only to an embedded server; leave Listen empty when connecting to %s", c.Listen, c.URL)
	}
	if c.Listen != "" {
		if host, _, err := splitListen(c.Listen); err != nil {
			add("Listen %q: %v (want host:port, e.g. 127.0.0.1:4222, or port 0 for a free one)", c.Listen, err)
		} else if !loopbackHost(host) && !c.AllowRemote {
			add("Listen %q is reachable from other hosts, and NATS traffic is not encrypted: listen on 127.0.0.1 (or ::1), or set AllowRemote to accept that", c.Listen)
		}
	}
	if c.URL == "" && (c.Listen != "" || c.Cluster.enabled()) && len(c.Secret) < MinSecretLength {
		add("a server that listens needs a Secret of at least %d characters to authenticate its clients and routes (see LoadOrCreateSecret)", MinSecretLength)
	}
	switch c.Sync {
	case "", SyncAlways, SyncInterval:
	default:
		add("unknown Sync %q (want %q or %q)", c.Sync, SyncAlways, SyncInterval)
	}
	if c.SyncInterval < 0 {
		add("SyncInterval %s is negative (want a positive duration, or 0 for %s)", c.SyncInterval, DefaultSyncInterval)
	}
	if c.StreamName != "" && strings.ContainsAny(c.StreamName, " \t\r\n.*>/\\") {
		add("StreamName %q contains a space, '.', '*', '>', '/' or '\\' (want a plain name such as %s)", c.StreamName, DefaultStreamName)
	}
	if c.DiskReserve < 0 {
		add("DiskReserve %d is negative (want a size in bytes, or 0 for the default)", c.DiskReserve)
	}
	if c.DiskCheckInterval < 0 {
		add("DiskCheckInterval %s is negative (want a duration, or 0 for %s)", c.DiskCheckInterval, DefaultDiskCheckInterval)
	}
	if c.Replicas < 0 {
		add("Replicas %d is negative (want 1 or more; 0 means 1)", c.Replicas)
	}
	if c.URL == "" && c.Cluster.Name == "" && c.Replicas > 1 {
		add("Replicas %d needs a NATS cluster: an embedded server on its own holds 1 replica (want 1, set Cluster to run in one, or set URL to connect to one)", c.Replicas)
	}
	if c.Cluster.enabled() {
		errs = append(errs, c.Cluster.validate(c.URL, c.AllowRemote)...)
	}
	if c.Replicas > 5 {
		add("Replicas %d is above the JetStream maximum (want 1 to 5)", c.Replicas)
	}
	if strings.ContainsAny(c.ServerName, " \t\r\n") {
		add("ServerName %q contains whitespace (want a single word)", c.ServerName)
	}
	return errors.Join(errs...)
}

// validate reports the problems with a cluster configuration; url is the
// Config's URL, which excludes a cluster of embedded servers.
func (c ClusterConfig) validate(url string, allowRemote bool) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("bus: "+format, args...))
	}
	if url != "" {
		add("Cluster is set together with URL: a cluster joins embedded servers; leave Cluster empty when connecting to %s", url)
	}
	switch {
	case c.Name == "":
		add("Cluster has Listen or Routes but no Name (want the name every node of the cluster shares)")
	case strings.ContainsAny(c.Name, " \t\r\n.*>"):
		add("Cluster.Name %q contains whitespace, '.', '*' or '>' (want a single word such as agentjournal)", c.Name)
	}
	if c.Listen == "" {
		add("Cluster has no Listen (want the host:port where peers reach this node, e.g. 127.0.0.1:6222)")
	} else if host, _, err := splitListen(c.Listen); err != nil {
		add("Cluster.Listen %q: %v (want host:port, e.g. 127.0.0.1:6222)", c.Listen, err)
	} else if !loopbackHost(host) && !allowRemote {
		add("Cluster.Listen %q is reachable from other hosts, and NATS traffic is not encrypted: listen on 127.0.0.1 (or ::1), or set AllowRemote to accept that", c.Listen)
	}
	for _, r := range c.Routes {
		if err := checkRoute(r); err != nil {
			add("Cluster.Routes %q: %v (want nats-route://host:port)", r, err)
		}
	}
	return errs
}

// checkRoute reports what is wrong with a route URL.
func checkRoute(route string) error {
	u, err := url.Parse(route)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "nats-route" && u.Scheme != "nats" {
		return fmt.Errorf("scheme %q is not nats-route", u.Scheme)
	}
	if u.Port() == "" || u.Hostname() == "" {
		return errors.New("no host and port")
	}
	_, port, err := splitListen(u.Host)
	switch {
	case err != nil:
		return err
	case port == 0:
		return errors.New("port 0 names no listener")
	}
	return nil
}

// withDefaults fills the zero fields that have a default.
func (c Config) withDefaults() Config {
	c.Sync = cmp.Or(c.Sync, SyncAlways)
	c.SyncInterval = cmp.Or(c.SyncInterval, DefaultSyncInterval)
	c.StreamName = cmp.Or(c.StreamName, DefaultStreamName)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.DiskCheckInterval = cmp.Or(c.DiskCheckInterval, DefaultDiskCheckInterval)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

// splitListen parses a Listen address into the host and port nats-server
// wants.
func splitListen(listen string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return host, port, nil
}

// groupCommit says whether the stream's writes are made durable by the
// process's group commit instead of the server's fsync of each one: only
// when the embedded server syncs always and no other process can publish to
// it, since another process's publish would be acknowledged before its
// fsync. A cluster's durability is its replicas'.
func (c Config) groupCommit() bool {
	return c.Sync == SyncAlways && !c.shared()
}

// shared reports whether other processes may use the log: it is another
// server's, or the embedded server listens for clients or routes.
func (c Config) shared() bool {
	return c.URL != "" || c.Listen != "" || c.Cluster.enabled()
}
