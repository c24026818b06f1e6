package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/supervisor"
)

// ServeCommand runs the daemon.
type ServeCommand struct{ env *Env }

var serveSpec = cmdSpec{
	Name: "serve",
	Args: "[--listen ADDR] [--allowed-host NAME]... [--nats-listen ADDR] [--cluster-name NAME --cluster-listen ADDR --routes URLS] [--replicas N] [--token-file PATH] [--grace DURATION] [--max-running N] [--policy-partitions N] [--host-name NAME] [--label KEY=VALUE]... [--lease DURATION] [--min-free-memory SIZE] [--limit AGENT=N]... [--env-profile NAME=FILE]... [--sandbox[=required]] [--sandbox-network host|none] [--sandbox-write PATH]...",
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
explicitly. A request is answered only when its Host header is a loopback
name or address, the --listen address, or a NAME given with --allowed-host
(a defence against web pages that point their own name at the daemon);
idle connections close after two minutes. SIGTERM or Ctrl-C stops new requests and closes everything in
order. With --on-stop=leave (the default) supervised agents run on; with
--on-stop=stop every agent is stopped (SIGTERM, then SIGKILL after --grace).

Every daemon on one log is a host of its fleet, named by --host-name (by
default the machine's name and a hash of the data directory; a name a live
daemon holds is refused), with --label KEY=VALUE labels, and sends a
heartbeat the others see ('agentjournal hosts'); one not heard from for
--lease is taken for lost. Commands for an execution (send, answers, stop,
cmd, checkpoint, logs, terminal input) given to any daemon of the log reach
the host that runs it over NATS, and the caller gets that host's answer. An
answer that the host cannot take is refused and its question stays open.
A launch goes to the daemon that takes it unless its placement (launch --host,
--on) rules that daemon out or it has no room and another has; a host with
less than --min-free-memory free takes no launch. --limit AGENT=N (the same on
every daemon of the log) lets at most N executions of that agent kind run
across the fleet: a launch beyond it is refused, a queued one waits for a
slot. Launches that wait (queued, scheduled) are in one queue for the whole
fleet, kept beside the log: any host with room starts the next, once. A
launch's environment is never journaled nor kept in a bucket: the daemon that
takes a queued launch keeps it (DATA/queue, 0600) and gives it to the host
that starts it; --env-profile NAME=FILE instead keeps variables (NAME=VALUE
lines of a file only its owner can read) on this host, for launches that ask
for the profile by name (launch --env-profile), which then run only where it
is defined.

Launches with dispatch mode queued or scheduled (launch --dispatch-mode) wait
in the daemon's queue until fewer than --max-running agents run here (the
number of CPUs by default); what they need to start is kept in DATA/queue
(0600), so they wait again after a restart. 'agentjournal queue' lists them.

--sandbox runs every agent under bubblewrap unless its launch says
--sandbox=false (launch --sandbox), and --sandbox=required every agent, a
launch that opts out refused; without it only launches that ask are
sandboxed. A sandboxed agent finds the file system read-only but for its
working directory, its CLI's state directories and --sandbox-write paths, and
the data directory, the token file, the NATS secret file and the environment
profiles' files absent. serve --sandbox refuses to start on a host where
bwrap cannot make a sandbox.`,
	Example: "agentjournal serve\nagentjournal serve --listen 127.0.0.1:7700 --nats-listen 127.0.0.1:4222\nagentjournal --nats-url nats://127.0.0.1:4222 --data /tmp/second serve --listen 127.0.0.1:7701\n" +
		"agentjournal --data /srv/aj1 serve --cluster-name aj --cluster-listen 10.0.0.1:6222 --routes nats-route://10.0.0.2:6222,nats-route://10.0.0.3:6222 --token-file /srv/aj1/token",
}

// Run implements Command.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := serveSpec.newFlagSet()
	listen := fs.String("listen", "127.0.0.1:7600", "serve the API on `ADDR` (host:port; port 0 picks a free one)")
	natsListen := fs.String("nats-listen", "", "also let other processes reach the embedded NATS at `ADDR` (e.g. 127.0.0.1:4222); they log in with the NATS secret (see --nats-secret-file)")
	allowRemote := fs.Bool("nats-allow-remote", false, "accept a --nats-listen or --cluster-listen address that other hosts can reach, although NATS traffic is not encrypted")
	var allowedHosts hostsFlag
	fs.Var(&allowedHosts, "allowed-host", "also answer requests whose Host header names `NAME` (a host name or address without a port; repeatable); loopback names and the --listen address are always answered")
	tokenFile := fs.String("token-file", "", "the API token `PATH` (default DATA/api-token, created 0600 on first start)")
	grace := fs.Duration("grace", 5*time.Second, "how long stopping agents get between SIGTERM and SIGKILL")
	onStop := fs.String("on-stop", "leave", "what the daemon's stop does to supervised agents: `leave` them running for the next daemon to attach to, or stop them")
	clusterName := fs.String("cluster-name", "", "make the embedded NATS a node of the cluster `NAME` (with --cluster-listen and --routes)")
	clusterListen := fs.String("cluster-listen", "", "accept routes from the other cluster nodes at `ADDR` (host:port)")
	routes := fs.String("routes", "", "the cluster nodes' route `URLS`, comma-separated nats-route://host:port (this node's own may be listed)")
	snapshots := snapshotsFlag(fs)
	maxRunning := fs.Int("max-running", 0, "start queued and scheduled launches only while fewer than `N` agents run here (0: the number of CPUs); interactive launches start at once and count toward it")
	partitions := fs.Int("policy-partitions", 0, "share the policy's deciding among the daemons on this log by hashing the journals into `N` partitions (2 to 1024, the same on every daemon); 0: one daemon decides at a time")
	hostName := fs.String("host-name", "", "this daemon's `NAME` in the fleet of daemons on its log (default: the machine's name and a hash of the data directory)")
	var labels labelFlag
	fs.Var(&labels, "label", "a `KEY=VALUE` label of this host, for placing launches (repeatable, e.g. --label gpu=1 --label os=linux)")
	minFree := fs.String("min-free-memory", "0", "start no agent while the machine has less than `SIZE` of memory free (e.g. 2GiB, 512MiB; 0 for no floor); a launch then goes to another host, or is refused")
	var profiles profileFlag
	fs.Var(&profiles, "env-profile", "an environment profile `NAME=FILE`: the NAME=VALUE lines of FILE (readable by its owner only), for launches that ask for it (repeatable)")
	var limits limitFlag
	fs.Var(&limits, "limit", "run at most `AGENT=N` executions of that agent kind across the fleet (repeatable, e.g. --limit claude-code=5; the same on every daemon)")
	lease := fs.Duration("lease", fleet.DefaultLease, "how long this host may go unheard before the others take it for lost")
	replicas := fs.Int("replicas", 0, "keep the log on `N` nodes: 1 on its own, 3 in a cluster unless given; more than 1 needs a cluster")
	var sbxMode sandboxModeFlag
	fs.Var(&sbxMode, "sandbox", "run every agent under bubblewrap unless its launch says --sandbox=false; --sandbox=required refuses such a launch (default: only launches that ask)")
	sbxNetwork := fs.String("sandbox-network", "", sandboxNetworkHelp+" (default host)")
	var sbxWrite pathsFlag
	fs.Var(&sbxWrite, "sandbox-write", "let every sandboxed agent change `PATH` too (repeatable)")
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
	if *hostName != "" {
		if err := fleet.ValidName(*hostName); err != nil {
			return serveSpec.usageErr(fs, "--host-name: %v", err)
		}
	}
	floor, err := parseSize(*minFree)
	if err != nil {
		return serveSpec.usageErr(fs, "--min-free-memory: %v", err)
	}
	if *lease < 100*time.Millisecond {
		return serveSpec.usageErr(fs, "--lease %s: want 100ms or more (%s by default)", *lease, fleet.DefaultLease)
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
	layout := c.env.layout()
	if *tokenFile == "" {
		*tokenFile = layout.TokenFile()
	}
	if err := os.MkdirAll(c.env.DataDir, 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := daemon.DefaultConfig(c.env.DataDir)
	cfg.Logger = logger
	cfg.Bus.Sync, cfg.Bus.URL, cfg.Bus.Listen = c.env.Sync, c.env.NATSURL, *natsListen
	cfg.Bus.Cluster, cfg.Bus.Replicas, cfg.Bus.AllowRemote = cluster, n, *allowRemote
	if cfg.Bus.URL != "" || cfg.Bus.Listen != "" || cfg.Bus.Cluster.Name != "" {
		// A NATS that listens lets in only those who have the secret.
		if cfg.Bus.Secret, err = c.env.natsSecret(cfg.Bus.URL == ""); err != nil {
			return err
		}
	}
	cfg.Listen, cfg.TokenFile, cfg.AllowedHosts = *listen, *tokenFile, allowedHosts
	cfg.StopGrace = *grace
	sup, err := supervisor.DefaultConfig("supervise")
	if err != nil {
		return err
	}
	cfg.Supervisor, cfg.LeaveRunning = &sup, *onStop == "leave"
	cfg.Snapshots, cfg.MaxRunning, cfg.PolicyPartitions = bool(*snapshots), *maxRunning, *partitions
	cfg.HostName, cfg.Labels, cfg.Lease, cfg.MinFreeMemory, cfg.Limits = *hostName, labels.m, *lease, floor, limits.m
	cfg.EnvProfiles = profiles.m
	if cfg.Sandbox, err = c.sandboxConfig(ctx, sbxMode.mode, *sbxNetwork, sbxWrite, profiles.files); err != nil {
		return serveSpec.usageErr(fs, "%v", err)
	}
	return c.serve(ctx, cfg)
}

// serve opens the daemon, tells where it serves, and serves until ctx
// ends or serving fails; the daemon is closed either way.
func (c *ServeCommand) serve(ctx context.Context, cfg daemon.Config) (err error) {
	d, err := daemon.Open(ctx, cfg)
	if err != nil {
		return err
	}
	// Stopping is not cut short by the signal that asked for it: the API's
	// requests and the agents' grace get their time.
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.CloseTimeout())
		defer cancel()
		err = errors.Join(err, d.Close(stop))
	}()
	fmt.Fprintf(c.env.Stderr, "agentjournal: serving on %s (data %s, token in %s)\n", d.URL(), c.env.DataDir, cfg.TokenFile)
	if nu := d.Bus().ClientURL(); nu != "" && c.env.NATSURL == "" {
		secretFile := c.env.NATSSecretFile
		if secretFile == "" {
			secretFile = d.Layout().NATSSecret()
		}
		fmt.Fprintf(c.env.Stderr, "agentjournal: other daemons can join with --nats-url %s --nats-secret-file %s\n", nu, shellQuote(secretFile))
	}
	if f, ok := c.env.Stderr.(interface{ Flush() error }); ok {
		f.Flush()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(c.env.Stderr, "agentjournal: stopping")
		return nil
	case err := <-d.Failed():
		return fmt.Errorf("serve: %w", err)
	}
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

// hostsFlag gathers repeated --allowed-host NAME flags; the daemon's
// configuration checks each.
type hostsFlag []string

func (h *hostsFlag) String() string { return strings.Join(*h, ",") }

func (h *hostsFlag) Set(v string) error {
	*h = append(*h, v)
	return nil
}

// labelFlag gathers repeated --label KEY=VALUE flags.
type labelFlag struct{ m map[string]string }

func (l *labelFlag) String() string { return labelsText(l.m) }

func (l *labelFlag) Set(s string) error {
	k, v, err := fleet.ParseLabel(s)
	if err != nil {
		return err
	}
	if l.m == nil {
		l.m = map[string]string{}
	}
	l.m[k] = v
	return nil
}

// parseSize reads a byte size: a number of bytes, or one with a unit of
// KiB, MiB, GiB or TiB (or K, M, G, T, as the same binary units).
func parseSize(s string) (uint64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0}}
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.shift
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f*float64(uint64(1)<<shift) >= 1<<63 {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with KiB, MiB, GiB or TiB, e.g. 2GiB)", s)
	}
	return uint64(f * float64(uint64(1)<<shift)), nil
}

// limitFlag gathers repeated --limit AGENT=N flags.
type limitFlag struct{ m map[string]int }

func (l *limitFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, l.m[k]))
	}
	return strings.Join(parts, ",")
}

func (l *limitFlag) Set(s string) error {
	agent, count, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 || !slices.Contains(runtime.Adapters(), agent) {
		return fmt.Errorf("limit %q: want AGENT=N with N 1 or more and AGENT one of %s", s, strings.Join(runtime.Adapters(), ", "))
	}
	if l.m == nil {
		l.m = map[string]int{}
	}
	l.m[agent] = n
	return nil
}

// profileFlag loads repeated --env-profile NAME=FILE flags.
type profileFlag struct {
	m map[string][]string
	// files are the profiles' files, which no sandboxed agent may read.
	files []string
}

func (p *profileFlag) String() string { return strings.Join(slices.Sorted(maps.Keys(p.m)), ",") }

func (p *profileFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("env-profile %q: want NAME=FILE", s)
	}
	vars, err := loadEnvProfile(path)
	if err != nil {
		return fmt.Errorf("env-profile %s: %w", name, err)
	}
	if p.m == nil {
		p.m = map[string][]string{}
	}
	p.m[name] = vars
	if abs, err := filepath.Abs(path); err == nil {
		p.files = append(p.files, abs)
	}
	return nil
}

// envVarName is a variable name a profile may set.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loadEnvProfile reads an environment profile: NAME=VALUE lines, blank
// lines and # comments. It holds secrets, so a file others can read is
// refused, as the NATS secret's is.
func loadEnvProfile(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s can be read by others (mode %04o); it holds secrets: chmod 600 %s", path, info.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var vars []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, ok := strings.Cut(line, "=")
		if !ok || !envVarName.MatchString(name) {
			return nil, fmt.Errorf("%s line %d: want NAME=VALUE with NAME of [A-Za-z0-9_], not starting with a digit", path, i+1)
		}
		vars = append(vars, line)
	}
	return vars, nil
}
