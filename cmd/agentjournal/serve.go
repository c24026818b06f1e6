package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/policy"
	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// ServeCommand runs the daemon.
type ServeCommand struct{ env *Env }

var serveSpec = cmdSpec{
	Name: "serve",
	Args: "[--listen ADDR] [--nats-listen ADDR] [--cluster-name NAME --cluster-listen ADDR --routes URLS] [--replicas N] [--token-file PATH] [--grace DURATION] [--max-running N] [--policy-partitions N]",
	Summary: `Run the daemon: the journal log (an embedded NATS JetStream server on the
data directory, or the NATS of --nats-url), the read models, the observation
policy, the agent runtime, and the HTTP API with live events (SSE) and the MCP
signal server, on 127.0.0.1 by default. Nothing else needs installing.

The API token is created on first start in the token file (mode 0600); every
request needs it as "Authorization: Bearer TOKEN". Launched agents get the API
and MCP addresses and a token that can only signal their own execution
(AGENTJOURNAL_URL, AGENTJOURNAL_MCP_URL, AGENTJOURNAL_TOKEN). The daemon writes
its address to daemon.json in the data directory, where the client commands
(launch, send, observe, stop, tail, ls, show, timeline) find it.

--nats-listen lets other daemons join this one's log with --nats-url; several
daemons on one log converge on the same read models, and exactly one of them
decides on each observation at a time. By default one daemon decides on every
journal while the others stand by; with --policy-partitions N (the same N on
every daemon of the log, 12 say) the journals are hashed into N partitions
that the daemons share evenly, so that adding daemons adds decisions. A daemon
that stops hands its partitions over at once; one that dies, within seconds.
Daemons restarted one by one with partitions start deciding once the last
one without them has stopped. To change N, or to go back to one daemon
deciding, stop every daemon of the log and start them again with the new
setting: the first to start regroups the log, and the deciding resumes from
the lowest progress any partition saved (a daemon started while another with
the old setting still runs is refused, and says which).

--cluster-name, --cluster-listen and --routes make the embedded NATS one node
of a cluster, each node a daemon with its own data directory; the log is then
kept on --replicas nodes (3 by default in a cluster) and outlives any one of
them. A node waits for a majority of the cluster before it serves.

Agents that keep one process for their whole execution (Claude Code, a
generic program) run under a supervisor process of their own, which holds
their pipes and spools their output under DATA/supervised: they outlive the
daemon, whether it stops cleanly (an upgrade) or is killed, and the next
daemon on the data directory attaches to them, journaling what they printed
meanwhile, once. Conversations with CLIs that run a process per turn
(Codex, Copilot CLI) are taken over between turns: the next message resumes
their session; a turn that ran while the daemon went is recorded lost.

A non-loopback --listen is refused unless --token-file names the token
explicitly. SIGTERM or Ctrl-C stops new requests and closes everything in
order. With --on-stop=leave (the default) supervised agents run on; with
--on-stop=stop every agent is stopped (SIGTERM, then SIGKILL after --grace).

Launches with dispatch mode queued or scheduled (launch --dispatch-mode) wait
in the daemon's queue until fewer than --max-running agents run here (the
number of CPUs by default); what they need to start is kept in DATA/queue
(0600), so they wait again after a restart. 'agentjournal queue' lists them.`,
	Example: "agentjournal serve\nagentjournal serve --listen 127.0.0.1:7700 --nats-listen 127.0.0.1:4222\nagentjournal --nats-url nats://127.0.0.1:4222 --data /tmp/second serve --listen 127.0.0.1:7701\n" +
		"agentjournal --data /srv/aj1 serve --cluster-name aj --cluster-listen 10.0.0.1:6222 --routes nats-route://10.0.0.2:6222,nats-route://10.0.0.3:6222 --token-file /srv/aj1/token",
}

// daemonFile names the file in the data directory that tells clients where
// the daemon listens.
const daemonFile = "daemon.json"

// daemonInfo is the content of daemon.json.
type daemonInfo struct {
	URL       string    `json:"url"`
	PID       int       `json:"pid"`
	TokenFile string    `json:"tokenFile"`
	NATSURL   string    `json:"natsUrl,omitempty"`
	Started   time.Time `json:"started"`
}

// Run implements Command.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := serveSpec.newFlagSet()
	listen := fs.String("listen", "127.0.0.1:7600", "serve the API on `ADDR` (host:port; port 0 picks a free one)")
	natsListen := fs.String("nats-listen", "", "also let other processes reach the embedded NATS at `ADDR` (e.g. 127.0.0.1:4222); they log in with the NATS secret (see --nats-secret-file)")
	allowRemote := fs.Bool("nats-allow-remote", false, "accept a --nats-listen or --cluster-listen address that other hosts can reach, although NATS traffic is not encrypted")
	tokenFile := fs.String("token-file", "", "the API token `PATH` (default DATA/api-token, created 0600 on first start)")
	grace := fs.Duration("grace", 5*time.Second, "how long stopping agents get between SIGTERM and SIGKILL")
	onStop := fs.String("on-stop", "leave", "what the daemon's stop does to supervised agents: `leave` them running for the next daemon to attach to, or stop them")
	clusterName := fs.String("cluster-name", "", "make the embedded NATS a node of the cluster `NAME` (with --cluster-listen and --routes)")
	clusterListen := fs.String("cluster-listen", "", "accept routes from the other cluster nodes at `ADDR` (host:port)")
	routes := fs.String("routes", "", "the cluster nodes' route `URLS`, comma-separated nats-route://host:port (this node's own may be listed)")
	snapshots := snapshotsFlag(fs)
	maxRunning := fs.Int("max-running", 0, "start queued and scheduled launches only while fewer than `N` agents run here (0: the number of CPUs); interactive launches start at once and count toward it")
	partitions := fs.Int("policy-partitions", 0, "share the policy's deciding among the daemons on this log by hashing the journals into `N` partitions (2 to 1024, the same on every daemon); 0: one daemon decides at a time")
	replicas := fs.Int("replicas", 0, "keep the log on `N` nodes: 1 on its own, 3 in a cluster unless given; more than 1 needs a cluster")
	pos, err := serveSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return serveSpec.usageErr(fs, "unexpected argument %q (serve takes only flags)", pos[0])
	}
	if *maxRunning < 0 {
		return serveSpec.usageErr(fs, "--max-running %d: want 1 or more, or 0 for the number of CPUs", *maxRunning)
	}
	if *partitions < 0 || *partitions == 1 || *partitions > eventstore.MaxPartitions {
		return serveSpec.usageErr(fs, "--policy-partitions %d: want 2 to %d, or 0 for one daemon deciding at a time", *partitions, eventstore.MaxPartitions)
	}
	if *onStop != "leave" && *onStop != "stop" {
		return serveSpec.usageErr(fs, "--on-stop %q: want leave or stop", *onStop)
	}
	cluster, err := clusterFlags(*clusterName, *clusterListen, *routes, c.env.NATSURL)
	if err != nil {
		return serveSpec.usageErr(fs, "%v", err)
	}
	n, err := replicaCount(fs, *replicas, cluster, c.env.NATSURL)
	if err != nil {
		return serveSpec.usageErr(fs, "%v", err)
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return serveSpec.usageErr(fs, "--listen %q: %v (want host:port, e.g. 127.0.0.1:7600)", *listen, err)
	}
	if !loopback(host) && *tokenFile == "" {
		return serveSpec.usageErr(fs, "refusing to listen on %s, which is not a loopback address, without an explicit --token-file", host)
	}
	if *natsListen != "" && c.env.NATSURL != "" {
		return serveSpec.usageErr(fs, "--nats-listen needs the embedded NATS; with --nats-url the daemon joins another one")
	}
	if *tokenFile == "" {
		*tokenFile = filepath.Join(c.env.DataDir, "api-token")
	}
	if err := os.MkdirAll(c.env.DataDir, 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d := &daemon{env: c.env, logger: logger, grace: *grace, cluster: cluster, replicas: n, allowRemote: *allowRemote, leaveAgents: *onStop == "leave"}
	d.snapshots = bool(*snapshots)
	d.maxRunning = *maxRunning
	d.partitions = *partitions
	return d.run(ctx, *listen, *natsListen, *tokenFile)
}

// clusterFlags checks --cluster-name, --cluster-listen and --routes and turns
// them into the bus's cluster configuration.
func clusterFlags(name, listen, routes, natsURL string) (bus.ClusterConfig, error) {
	c := bus.ClusterConfig{Name: name, Listen: listen}
	for r := range strings.SplitSeq(routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Routes = append(c.Routes, r)
		}
	}
	if name == "" && listen == "" && len(c.Routes) == 0 {
		return c, nil
	}
	var given string
	switch {
	case name != "":
		given = "--cluster-name"
	case listen != "":
		given = "--cluster-listen"
	default:
		given = "--routes"
	}
	switch {
	case natsURL != "":
		return c, fmt.Errorf("%s needs the embedded NATS; with --nats-url the daemon joins another one (drop --nats-url to run a cluster node)", given)
	case name == "":
		return c, fmt.Errorf("%s needs --cluster-name (the name every node of the cluster shares)", given)
	case strings.ContainsAny(name, " \t\r\n.*>"):
		return c, fmt.Errorf("--cluster-name %q contains whitespace, '.', '*' or '>' (want a single word such as agentjournal)", name)
	case listen == "":
		return c, errors.New("--cluster-name needs --cluster-listen (the host:port where the other nodes reach this one, e.g. 127.0.0.1:6222)")
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return c, fmt.Errorf("--cluster-listen %q: %v (want host:port, e.g. 127.0.0.1:6222)", listen, err)
	}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Hostname() == "" || u.Port() == "" {
			return c, fmt.Errorf("--routes: %q is not a route URL (want nats-route://host:port, comma-separated)", r)
		}
	}
	return c, nil
}

// replicaCount is the --replicas value, defaulted: 3 for a cluster node, 1
// otherwise.
func replicaCount(fs *flag.FlagSet, n int, cluster bus.ClusterConfig, natsURL string) (int, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "replicas" })
	switch {
	case !given && cluster.Name != "":
		return 3, nil
	case !given:
		return 1, nil
	case n < 1 || n > 5:
		return 0, fmt.Errorf("--replicas %d is out of range (want 1 to 5)", n)
	case n > 1 && cluster.Name == "" && natsURL == "":
		return 0, fmt.Errorf("--replicas %d needs a cluster: an embedded NATS on its own holds 1 copy (add --cluster-name, --cluster-listen and --routes, or join a cluster with --nats-url)", n)
	}
	return n, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// daemon holds the parts of a running daemon, closed in reverse order.
type daemon struct {
	env    *Env
	logger *slog.Logger
	grace  time.Duration
	// snapshots turns on the runtime's workspace snapshots (--snapshots).
	snapshots bool
	cluster   bus.ClusterConfig
	replicas  int
	// allowRemote accepts NATS listeners other hosts can reach.
	allowRemote bool
	// leaveAgents leaves supervised agents running when the daemon stops.
	leaveAgents bool
	// maxRunning is the runtime's limit of running agents before queued
	// launches wait (--max-running).
	maxRunning int
	// partitions is the policy's partition count, 0 for none.
	partitions int
	closes     []func() error
}

func (d *daemon) onClose(fn func() error) { d.closes = append(d.closes, fn) }

func (d *daemon) close() error {
	var errs []error
	for i := len(d.closes) - 1; i >= 0; i-- {
		errs = append(errs, d.closes[i]())
	}
	return errors.Join(errs...)
}

func (d *daemon) run(ctx context.Context, listen, natsListen, tokenFile string) (err error) {
	defer func() { err = errors.Join(err, d.close()) }()
	// The parts run on their own context, cancelled in order at shutdown
	// after the signal cancelled ctx.
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var wg sync.WaitGroup

	cfg := bus.DefaultConfig()
	cfg.DataDir, cfg.Sync, cfg.URL, cfg.Listen = d.env.DataDir, d.env.Sync, d.env.NATSURL, natsListen
	cfg.Cluster, cfg.Replicas = d.cluster, d.replicas
	cfg.Logger = d.logger
	cfg.AllowRemote = d.allowRemote
	if cfg.URL != "" || cfg.Listen != "" || cfg.Cluster.Name != "" {
		// A NATS that listens lets in only those who have the secret.
		if cfg.Secret, err = d.env.natsSecret(cfg.URL == ""); err != nil {
			return err
		}
	}
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return err
	}
	d.onClose(b.Close)
	store, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		return err
	}
	d.onClose(store.Close)

	views, err := openViews(ctx, d.env, d.logger, store, d.onClose)
	if err != nil {
		return err
	}
	index, err := openSearch(ctx, d.env, d.logger, store, d.onClose)
	if err != nil {
		return err
	}
	// Registered after the views so that it stops first.
	d.onClose(func() error { cancel(); wg.Wait(); return nil })
	// The API's requests that wait for a decision hear of this daemon's
	// at once.
	decisions := &api.Decisions{}
	pc := policy.SubscriberConfig{Logger: d.logger, Decided: decisions.Deliver, Partitions: d.partitions}
	if b.Shared() {
		// An observation recorded here may be decided by another daemon's
		// policy, and one recorded elsewhere by this one's: each tells
		// the others, so that no request waits to find its decision by
		// reading the journal.
		if err := store.SubscribeDecided(work, decisions.Waits, decisions.Deliver); err != nil {
			return err
		}
		pc.Decided = func(dec eventstore.Decided) {
			decisions.Deliver(dec)
			if err := store.PublishDecided(dec); err != nil {
				d.logger.Warn("decision notice not sent", "decision", dec.Decision.DecisionID, "err", err)
			}
		}
	}
	if d.partitions > 0 {
		if pc.Member, err = b.NodeName(); err != nil {
			return err
		}
	}
	var share func() api.PolicyShare
	if d.partitions > 0 {
		var mu sync.Mutex
		owned := []int{}
		pc.Owns = func(parts []int) {
			mu.Lock()
			defer mu.Unlock()
			owned = parts
		}
		share = func() api.PolicyShare {
			mu.Lock()
			defer mu.Unlock()
			return api.PolicyShare{Member: pc.Member, Partitions: slices.Clone(owned), Of: d.partitions}
		}
	}
	pol := policy.NewSubscriber(store, pc)
	wg.Go(func() { keepRunning(work, d.logger, "policy subscriber", pol.Run) })

	ep, err := listenAPI(d.env, d.logger, listen, tokenFile, d.onClose)
	if err != nil {
		return err
	}

	terms := terminal.NewRegistry(d.logger)
	terms.KillGrace = d.grace
	d.onClose(terms.Close)
	sup, err := supervisor.DefaultConfig("supervise")
	if err != nil {
		return err
	}
	rt := runtime.New(runtime.Config{
		Supervisor: &sup, SupervisedDir: filepath.Join(d.env.DataDir, "supervised"), LeaveRunning: d.leaveAgents, Store: store, Terminals: terms, StopGrace: d.grace, Logger: d.logger,
		RecordingDir: filepath.Join(d.env.DataDir, "terminal-recordings"),
		OutputDir:    d.env.outputDir(),
		HostDir:      d.env.hostedDir(),
		WorkspaceDir: d.env.DataDir,
		Snapshots:    d.snapshots,
		QueueDir:     filepath.Join(d.env.DataDir, "queue"),
		MaxRunning:   d.maxRunning,
		Processed:    views.ProcessedID,
		LaunchEnv:    ep.launchEnv})
	d.onClose(func() error {
		stop, done := context.WithTimeout(context.Background(), d.grace+5*time.Second)
		defer done()
		return rt.Close(stop)
	})
	// With the embedded log on its own and no listener, this daemon is the
	// only host of its agents: any still running in the journal died
	// unwatched. On a log others can join (a listener, a shared NATS, a
	// cluster), other daemons' agents live on, so only the ones this daemon
	// launched (its hosted directory) are considered.
	scope := runtime.RecoverHosted
	if !b.Clustered() && d.env.NATSURL == "" && natsListen == "" {
		scope = runtime.RecoverAll
	}
	// The queue first: Recover leaves the runs it holds to it.
	queued, err := rt.Requeue(ctx)
	if err != nil {
		return err
	}
	if len(queued) > 0 {
		d.logger.Info("queued launches kept from before the restart wait again", "count", len(queued))
	}
	ids, err := rt.Recover(ctx, scope)
	for _, id := range ids {
		d.logger.Warn("execution left running by a host that is gone: marked terminated", "execution", id, "reason", "system_restart")
	}
	if err != nil {
		return err
	}
	acfg := ep.config(store, rt, terms, views)
	acfg.Search = index
	acfg.Decisions = decisions
	if !b.Embedded() {
		// Joined to another's NATS: while it is down, writes fail at once.
		acfg.LogReachable = b.Reachable
	}
	acfg.DiskSpace = func() (api.DiskSpace, bool) {
		d, ok := b.DiskSpace()
		return api.DiskSpace{Dir: d.Dir, Free: d.Free, Reserve: d.Reserve, Full: d.Full}, ok
	}
	acfg.PolicyShare = share
	served, err := ep.serve(work, acfg, nil, b.ClientURL(), d.onClose)
	if err != nil {
		return err
	}
	url := ep.url
	fmt.Fprintf(d.env.Stderr, "agentjournal: serving on %s (data %s, token in %s)\n", url, d.env.DataDir, tokenFile)
	if nu := b.ClientURL(); nu != "" && d.env.NATSURL == "" {
		secretFile := d.env.NATSSecretFile
		if secretFile == "" {
			secretFile = filepath.Join(d.env.DataDir, "nats-secret")
		}
		fmt.Fprintf(d.env.Stderr, "agentjournal: other daemons can join with --nats-url %s --nats-secret-file %s\n", nu, shellQuote(secretFile))
	}
	if f, ok := d.env.Stderr.(interface{ Flush() error }); ok {
		f.Flush()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(d.env.Stderr, "agentjournal: stopping")
		return nil
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
}

// Restart delays of keepRunning: doubling from the first to the last, and
// back to the first once a run has lasted restartReset.
const (
	restartFirst = 500 * time.Millisecond
	restartLast  = 30 * time.Second
	restartReset = time.Minute
)

// keepRunning runs part until ctx ends, starting it again after each error:
// a projector or policy subscriber that stopped on a failure of the log (a
// leader change, a full disk, a lost connection) would otherwise leave the
// daemon serving stale read models, or deciding nothing, until restarted.
// Both resume from where they stopped.
func keepRunning(ctx context.Context, log *slog.Logger, name string, part func(context.Context) error) {
	delay := restartFirst
	for {
		began := time.Now()
		err := part(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) >= restartReset {
			delay = restartFirst
		}
		if err == nil {
			err = errors.New("stopped without an error")
		}
		log.Error(name+" stopped; starting it again", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, restartLast)
	}
}

// outputDir is where the runtime keeps each execution's plain output
// (runtime/outputlog), beside the terminal recordings.
func (e *Env) outputDir() string {
	return filepath.Join(e.DataDir, "agent-output")
}
