package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/mcp"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
	"github.com/agentjournal/agentjournal/integrity"
	"github.com/agentjournal/agentjournal/policy"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/runtime"
	"github.com/agentjournal/agentjournal/search"
	"github.com/agentjournal/agentjournal/terminal"

	"golang.org/x/net/netutil"
)

// Daemon is the whole stack, open: the log, the read models and search
// index fed from it, the policy deciding on it, the runtime running the
// agents, and the API serving them. Close closes it.
type Daemon struct {
	cfg    Config
	layout Layout
	logger *slog.Logger

	bus   *bus.Bus
	store *eventstore.JetStreamStore
	views *projections.DB
	index *search.Index
	terms *terminal.Registry
	rt    *runtime.Runtime
	fleet *fleet.Fleet
	// damage holds the journals found damaged; the store refuses writes
	// to them (checkDamage).
	damage integrity.Guard
	// member is fleet, for the runtime's shared queue, which may be asked
	// before Join returns.
	member atomic.Pointer[fleet.Fleet]
	srv    *api.Server
	// late reaches srv from the parts built before it: the runtime's
	// launch environment and the MCP handler.
	late    lateServer
	handler http.Handler
	// requests is in flight through handler; Close waits for them.
	requests gate
	token    string
	url      string
	// failed gets the error that ended serving on the listener early.
	failed chan error

	// work is the context of what runs until Close: the API's publisher
	// and the decision notices.
	work   context.Context
	cancel context.CancelFunc

	projMu    sync.Mutex
	projector *loop
	projDone  bool

	closes    []closer
	closeOnce sync.Once
	closeErr  error
}

// closer closes one part; Close runs them newest first.
type closer struct {
	part string
	fn   func(ctx context.Context) error
}

func (d *Daemon) onClose(part string, fn func(ctx context.Context) error) {
	d.closes = append(d.closes, closer{part: part, fn: fn})
}

// Open opens the stack in order: the bus, the journal store, the read
// models and their projector, the search index and its indexer, the policy
// subscriber, the API's listener and tokens, the terminal registry, the
// runtime, its membership of the fleet, the recovery of what a previous
// host left (the queue, then the
// executions it left running), and the API server with MCP, which then
// serves. ctx bounds the opening only: what Open starts runs until Close.
// When a part fails to open, those opened before it are closed.
func Open(ctx context.Context, cfg Config) (_ *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	d := &Daemon{cfg: cfg, layout: Layout{Dir: cfg.DataDir}, logger: cfg.Logger, failed: make(chan error, 1)}
	d.work, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close(context.WithoutCancel(ctx)))
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	if d.bus, err = bus.Open(ctx, cfg.Bus); err != nil {
		return nil, err
	}
	d.onClose("bus", func(context.Context) error { return d.bus.Close() })
	d.store, err = eventstore.OpenJetStream(ctx, d.bus.JetStream(), eventstore.JetStreamConfig{Stream: d.bus.StreamName(), Refuse: d.damage.Refuse})
	if err != nil {
		return nil, err
	}
	d.onClose("store", func(context.Context) error { return d.store.Close() })
	if err := d.openViews(ctx); err != nil {
		return nil, err
	}
	// Before anything writes (the policy, the recovery, the API): a
	// journal that lost records must take none.
	d.checkDamage(ctx)
	if !cfg.NoSearch {
		if err := d.openSearch(); err != nil {
			return nil, err
		}
	}
	decisions, share, err := d.startPolicy()
	if err != nil {
		return nil, err
	}
	ln, err := d.listen()
	if err != nil {
		return nil, err
	}
	d.terms = terminal.NewRegistry(d.logger)
	d.terms.KillGrace = cfg.StopGrace
	d.onClose("terminals", func(context.Context) error { return d.terms.Close() })
	d.openRuntime()
	if err := d.joinFleet(ctx); err != nil {
		return nil, err
	}
	if err := d.recover(ctx); err != nil {
		return nil, err
	}
	// Only now: a queued run this host's previous process had started is
	// attached to or ended by the recovery, never started again.
	d.fleet.Dispatch()
	if err := d.serve(ln, decisions, share); err != nil {
		return nil, err
	}
	d.checkDamageDeep()
	return d, nil
}

// checkDamage runs the quick check of the log (integrity.Quick) and puts
// what it finds in the guard the store asks before every write. A check
// that fails is logged and the daemon starts: damage it would have found
// is still met by reads, which refuse a journal with a hole.
func (d *Daemon) checkDamage(ctx context.Context) {
	rep, err := integrity.Quick(ctx, d.store, d.views)
	if err != nil {
		d.logger.Warn("check the log for damage", "err", err)
		return
	}
	d.tellDamage(rep.Findings)
}

// checkDamageDeep reads every journal whole in the background (integrity.Deep)
// for the holes the quick check cannot see, and adds them to the guard.
// Close stops it.
func (d *Daemon) checkDamageDeep() {
	ctx, cancel := context.WithCancel(d.work)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err := integrity.Deep(ctx, d.store, d.views)
		if err != nil {
			if ctx.Err() == nil {
				d.logger.Warn("read every journal for damage", "err", err)
			}
			return
		}
		d.tellDamage(rep.Findings)
	}()
	d.onClose("check for damage", func(context.Context) error {
		cancel()
		<-done
		return nil
	})
}

// tellDamage logs the findings not known yet and guards their journals.
func (d *Daemon) tellDamage(found []integrity.Finding) {
	known := map[string]bool{}
	for _, f := range d.damage.Findings() {
		known[f.String()] = true
	}
	for _, f := range found {
		if known[f.String()] {
			continue
		}
		d.logger.Error("damaged log: records were lost; the journals that lost them take no writes", "damage", f.String())
	}
	d.damage.Add(found...)
}

// joinFleet makes this daemon a host of the fleet on its log before it
// takes up any work (the recovery, the API), so that a name another live
// daemon holds is refused before anything starts. Until the API is built,
// requests forwarded here are answered that the host is starting.
func (d *Daemon) joinFleet(ctx context.Context) error {
	replicas := 1
	if info := d.bus.Stream().CachedInfo(); info != nil {
		replicas = info.Config.Replicas
	}
	f, err := fleet.Join(ctx, fleet.Config{
		Conn: d.bus.Conn(), JS: d.bus.JetStream(), Stream: d.bus.StreamName(), Replicas: replicas,
		Name: d.cfg.HostName, Home: fleet.DefaultName(d.cfg.DataDir), Labels: d.cfg.Labels, Lease: d.cfg.Lease, MinFreeMemory: d.cfg.MinFreeMemory, Handler: &d.late, Logger: d.logger,
		Status: d.hostStatus, Lost: d.endLost,
		CanStart: d.canStart, Start: d.startQueued, Orphan: d.orphan, Env: d.rt.QueuedEnv, Dequeued: d.rt.ForgetQueued,
		Limits: d.cfg.Limits, Ended: d.ended, Profiles: d.rt.Profiles(),
	})
	if err != nil {
		return err
	}
	d.fleet = f
	d.member.Store(f)
	d.onClose("fleet membership", f.Close)
	return nil
}

// endLost ends what a lost host of the fleet ran: the executions the read
// models show running there, and those its last heartbeat named.
func (d *Daemon) endLost(ctx context.Context, m fleet.Member) error {
	running, err := d.views.List(projections.Filter{Lifecycle: eventstore.LifecycleRunning})
	if err != nil {
		return err
	}
	// A queued run the lost host placed, and may have started.
	placed, err := d.views.List(projections.Filter{Lifecycle: eventstore.LifecycleStarting})
	if err != nil {
		return err
	}
	running = append(running, placed...)
	ids := slices.Clone(m.Running)
	for _, s := range running {
		if s.Host == m.Name && !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	var refs []eventstore.Reference
	for _, id := range ids {
		ref, err := d.store.Lookup(ctx, id)
		if err != nil {
			return fmt.Errorf("end %s of lost host %s: %w", id, m.Name, err)
		}
		refs = append(refs, ref)
	}
	ended, err := d.rt.EndLost(ctx, m.Name, m.Instance, m.Lease(), refs)
	for _, id := range ended {
		d.logger.Warn("execution of a lost host marked terminated", "execution", id, "host", m.Name, "reason", "host_lost")
	}
	return err
}

// hostStatus is what this host's heartbeats say of it.
func (d *Daemon) hostStatus() fleet.Status {
	queued := len(d.rt.Queue())
	if f := d.member.Load(); f != nil && d.cfg.HostName != "" {
		// The queue is the fleet's: this host counts the waiting runs it
		// took, not every host the same fleet-wide number.
		queued = 0
		for _, q := range f.Queue() {
			if q.Claim == nil && q.AcceptedBy == d.cfg.HostName {
				queued++
			}
		}
	}
	return fleet.Status{
		Capacity: fleet.Capacity{MaxRunning: d.rt.MaxRunning(), Running: d.rt.Running(), Queued: queued},
		Running:  d.rt.RunningIDs(),
	}
}

// openViews opens the read models, rebuilding them from the log when the
// file cannot be trusted, and starts the projector.
func (d *Daemon) openViews(ctx context.Context) error {
	pcfg := projections.DefaultConfig(d.layout.Projections())
	pcfg.Logger = d.logger
	views, rebuilt, err := projections.OpenOrRebuild(ctx, pcfg, d.store, nil)
	if err != nil {
		return fmt.Errorf("open the read models: %w", err)
	}
	d.views = views
	d.onClose("read models", func(context.Context) error { return views.Close() })
	if rebuilt {
		d.logger.Warn("the projection file could not be trusted (the message before says why); it was moved aside and rebuilt from the log", "path", pcfg.Path)
	}
	d.projector = d.startProjector()
	d.onClose("projector", func(context.Context) error {
		d.projMu.Lock()
		defer d.projMu.Unlock()
		d.projDone = true
		if d.projector != nil {
			d.projector.stop()
		}
		return nil
	})
	return nil
}

func (d *Daemon) startProjector() *loop {
	return d.startLoop("projector", func(ctx context.Context) error { return d.views.Project(ctx, d.store) })
}

// PauseProjector stops the projector until resume is called, for tests of
// what answers and reads do while the read models are behind the log.
func (d *Daemon) PauseProjector() (resume func()) {
	d.projMu.Lock()
	p := d.projector
	d.projector = nil
	d.projMu.Unlock()
	if p != nil {
		p.stop()
	}
	return func() {
		d.projMu.Lock()
		defer d.projMu.Unlock()
		if d.projector == nil && !d.projDone {
			d.projector = d.startProjector()
		}
	}
}

// openSearch opens the search index, moving aside one that does not open,
// and starts the indexer, which catches up from its checkpoint and then
// follows the log. Queries answer from what it holds meanwhile.
func (d *Daemon) openSearch() error {
	path := d.layout.SearchIndex()
	x, aside, err := search.OpenOrMoveAside(path)
	if aside != "" {
		d.logger.Warn("the search index did not open; it was moved aside and is built again from the log", "path", path, "movedTo", aside)
	}
	if err != nil {
		return err
	}
	d.index = x
	d.onClose("search index", func(context.Context) error { return x.Close() })
	indexer := d.startLoop("search indexer", func(ctx context.Context) error {
		// Catching up first indexes in larger batches than following.
		if err := x.CatchUp(ctx, d.store); err != nil && ctx.Err() == nil {
			return err
		}
		return x.Follow(ctx, d.store)
	})
	d.onClose("search indexer", func(context.Context) error { indexer.stop(); return nil })
	return nil
}

// startPolicy starts the policy subscriber, unless Config.NoPolicy, and
// returns where the API hears of its decisions and, with partitions, of
// its share of them.
func (d *Daemon) startPolicy() (*api.Decisions, func() api.PolicyShare, error) {
	// The decision notices and the API's publisher run on work, which
	// stops with the policy.
	d.onClose("background", func(context.Context) error { d.cancel(); return nil })
	if d.cfg.NoPolicy {
		return nil, nil, nil
	}
	// The API's requests that wait for a decision hear of this daemon's
	// at once.
	decisions := &api.Decisions{}
	pc := policy.SubscriberConfig{Logger: d.logger, Decided: decisions.Deliver, Partitions: d.cfg.PolicyPartitions}
	if d.bus.Shared() {
		// An observation recorded here may be decided by another daemon's
		// policy, and one recorded elsewhere by this one's: each tells
		// the others, so that no request waits to find its decision by
		// reading the journal.
		if err := d.store.SubscribeDecided(d.work, decisions.Waits, decisions.Deliver); err != nil {
			return nil, nil, err
		}
		pc.Decided = func(dec eventstore.Decided) {
			decisions.Deliver(dec)
			if err := d.store.PublishDecided(dec); err != nil {
				d.logger.Warn("decision notice not sent", "decision", dec.Decision.DecisionID, "err", err)
			}
		}
	}
	var share func() api.PolicyShare
	if n := d.cfg.PolicyPartitions; n > 0 {
		var err error
		if pc.Member, err = d.bus.NodeName(); err != nil {
			return nil, nil, err
		}
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
			return api.PolicyShare{Member: pc.Member, Partitions: slices.Clone(owned), Of: n}
		}
	}
	sub := policy.NewSubscriber(d.store, pc)
	pol := d.startLoop("policy subscriber", sub.Run)
	d.onClose("policy subscriber", func(context.Context) error { pol.stop(); return nil })
	return decisions, share, nil
}

// listen loads the API token and the scoped tokens' secret, and opens the
// API's listener when Config.Listen asks for one. Its address is known
// before the runtime is built, so that launched agents get it.
func (d *Daemon) listen() (net.Listener, error) {
	d.token = d.cfg.Token
	if d.token == "" {
		token, err := api.LoadOrCreateToken(d.cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		d.token = token
	}
	if d.cfg.Secret == nil {
		secretHex, err := api.LoadOrCreateToken(d.layout.ScopedTokenSecret())
		if err != nil {
			return nil, err
		}
		d.cfg.Secret = []byte(secretHex)
	}
	if d.cfg.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", d.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", d.cfg.Listen, err)
	}
	// Beyond MaxConns, a connection waits to be accepted until one closes:
	// idle ones close after IdleTimeout, so clients that hold many cannot
	// exhaust the daemon's descriptors.
	ln = netutil.LimitListener(ln, d.cfg.MaxConns)
	// Once served, the server's shutdown closes it and this finds it
	// closed already.
	d.onClose("listener", func(context.Context) error { ln.Close(); return nil })
	d.url = "http://" + ln.Addr().String()
	return ln, nil
}

// openRuntime builds the runtime over the data directory's layout.
func (d *Daemon) openRuntime() {
	l, cfg := d.layout, d.cfg
	rc := runtime.Config{
		Store: d.store, StopGrace: cfg.StopGrace, Logger: d.logger, Terminals: d.terms,
		Output: cfg.Output, TerminalOutput: cfg.TerminalOutput, TerminalSize: cfg.TerminalSize, OnInputRequest: cfg.OnInputRequest,
		RecordingDir: l.Recordings(), OutputDir: l.Output(), HostDir: l.Hosted(),
		Snapshots: cfg.Snapshots, MaxRunning: cfg.MaxRunning,
		Processed: d.views.ProcessedID, LaunchEnv: d.launchEnv,
		Supervisor: cfg.Supervisor, LeaveRunning: cfg.LeaveRunning, Host: cfg.HostName,
	}
	if cfg.Supervisor != nil {
		rc.SupervisedDir = l.Supervised()
	}
	if !cfg.NoWorkspaces {
		rc.WorkspaceDir = l.Workspaces()
	}
	if !cfg.NoQueue {
		rc.QueueDir = l.Queue()
		// Launches that wait go to the fleet's queue, which any host with
		// room starts from; this data directory keeps their environments.
		rc.Shared = sharedQueue{&d.member}
	}
	rc.Ended = d.release
	if !cfg.NoPolicy {
		rc.DecisionsBeforeEnd = decisionsBeforeEnd
	}
	rc.EnvProfiles = cfg.EnvProfiles
	rc.Sandbox = cfg.Sandbox
	rc.Sandbox.Hidden = append([]string{l.Dir, cfg.TokenFile}, cfg.Sandbox.Hidden...)
	d.rt = runtime.New(rc)
	d.onClose("runtime", func(ctx context.Context) error { return d.rt.Close(ctx) })
}

// decisionsBeforeEnd bounds how long an execution's end waits for the
// policy to decide what it observed before it (runtime.Config's
// DecisionsBeforeEnd): the policy follows the log within milliseconds, and
// one stopped or far behind must not hold every end for long.
const decisionsBeforeEnd = 2 * time.Second

// launchEnv is what a launched agent gets to reach the API and MCP: their
// addresses, when the daemon listens, and a token that can only signal its
// own execution.
func (d *Daemon) launchEnv(ref eventstore.Reference) []string {
	var env []string
	if d.url != "" {
		env = append(env, "AGENTJOURNAL_URL="+d.url)
		if !d.cfg.NoMCP {
			env = append(env, "AGENTJOURNAL_MCP_URL="+d.url+"/mcp")
		}
	}
	return append(env, "AGENTJOURNAL_TOKEN="+d.late.ScopedToken(ref.AgentExecutionID))
}

// recover takes up the launches a previous daemon left queued, then marks
// terminated the executions left running by a host that is gone.
func (d *Daemon) recover(ctx context.Context) error {
	if !d.cfg.NoQueue {
		// The queue first: Recover leaves the runs it holds to it.
		queued, err := d.rt.Requeue(ctx)
		if err != nil {
			return err
		}
		if len(queued) > 0 {
			d.logger.Info("queued launches kept from before the restart wait again", "count", len(queued))
		}
	}
	// With the embedded log on its own and no listener, this daemon is the
	// only host of its agents: any still running in the journal died
	// unwatched. On a log others can join (a listener, a shared NATS, a
	// cluster), other daemons' agents live on, so only the ones launched
	// from this data directory (Layout.Hosted) are considered.
	scope := runtime.RecoverHosted
	if !d.bus.Clustered() && d.cfg.Bus.URL == "" && d.cfg.Bus.Listen == "" {
		scope = runtime.RecoverAll
	}
	ids, err := d.rt.Recover(ctx, scope)
	for _, id := range ids {
		if d.cfg.Recovered != nil {
			d.cfg.Recovered(id)
		} else {
			d.logger.Warn("execution left running by a host that is gone: marked terminated", "execution", id, "reason", "system_restart")
		}
	}
	return err
}

// serve builds the API server over the parts and starts it; with a
// listener, serves it there and writes the DaemonInfo file.
func (d *Daemon) serve(ln net.Listener, decisions *api.Decisions, share func() api.PolicyShare) error {
	acfg := api.DefaultConfig()
	acfg.Store, acfg.Runtime, acfg.Terminals, acfg.Views = d.store, d.rt, d.terms, d.views
	acfg.Token, acfg.Secret, acfg.Logger = d.token, d.cfg.Secret, d.logger
	acfg.RecordingDir, acfg.OutputDir = d.layout.Recordings(), d.layout.Output()
	acfg.Search, acfg.Decisions = d.index, decisions
	if !d.cfg.NoMCP {
		acfg.MCP = mcp.NewHandler(&d.late, &d.late, d.logger)
	}
	if !d.bus.Embedded() {
		// Joined to another's NATS: while it is down, writes fail at once.
		acfg.LogReachable = d.bus.Reachable
	}
	acfg.DiskSpace = func() (api.DiskSpace, bool) {
		s, ok := d.bus.DiskSpace()
		return api.DiskSpace{Dir: s.Dir, Free: s.Free, Reserve: s.Reserve, Full: s.Full}, ok
	}
	acfg.PolicyShare = share
	acfg.Fleet = d.fleet
	acfg.Damage = &d.damage
	if d.cfg.ConfigureAPI != nil {
		d.cfg.ConfigureAPI(&acfg)
	}
	srv, err := api.New(acfg)
	if err != nil {
		return err
	}
	d.srv = srv
	d.late.set(srv)
	if err := srv.Start(d.work); err != nil {
		return err
	}
	h := srv.Handler()
	if d.cfg.WrapHandler != nil {
		h = d.cfg.WrapHandler(h, d.token)
	}
	d.handler = d.requests.wrap(h)
	if ln == nil {
		d.onClose("API", d.closeAPI(nil, nil, nil))
		return nil
	}
	// Requests in flight at the end of the shutdown's wait are cancelled.
	base, cancelRequests := context.WithCancel(context.WithoutCancel(d.work))
	// No WriteTimeout: the event stream sets a deadline on each of its
	// writes itself (api.Config.StreamWriteTimeout).
	hs := &http.Server{Handler: d.guard(d.handler, ln.Addr()),
		ReadHeaderTimeout: d.cfg.ReadHeaderTimeout, ReadTimeout: d.cfg.ReadTimeout, IdleTimeout: d.cfg.IdleTimeout,
		BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			d.failed <- err
		}
	}()
	d.onClose("API", d.closeAPI(hs, served, cancelRequests))
	info := Info{URL: d.url, PID: os.Getpid(), TokenFile: d.cfg.TokenFile, NATSURL: d.bus.ClientURL(), Started: time.Now().UTC()}
	if err := d.layout.writeInfo(info); err != nil {
		return err
	}
	d.onClose("daemon info", func(context.Context) error { return os.Remove(d.layout.DaemonInfo()) })
	return nil
}

// closeAPI returns the close of the API: its event streams end, new
// requests are refused, and those in flight get up to ShutdownTimeout
// (within the close's context) to finish before their context is
// cancelled; hs, when set, is shut down the same way.
func (d *Daemon) closeAPI(hs *http.Server, served <-chan struct{}, cancelRequests context.CancelFunc) func(context.Context) error {
	return func(ctx context.Context) error {
		// Event streams never go idle: close them before waiting.
		err := d.srv.Close()
		wait, cancel := context.WithTimeout(ctx, d.cfg.ShutdownTimeout)
		defer cancel()
		if hs != nil {
			if serr := hs.Shutdown(wait); serr != nil {
				cancelRequests()
				err = errors.Join(err, fmt.Errorf("stop the API: %w", serr), hs.Close())
			}
			<-served
			cancelRequests()
		}
		if werr := d.requests.close(wait); werr != nil {
			err = errors.Join(err, fmt.Errorf("stop the API: requests still running: %w", werr))
		}
		return err
	}
}

// Close closes what Open opened, newest first: the DaemonInfo file, the
// API (its requests in flight get Config.ShutdownTimeout), the runtime
// (its agents get Config.StopGrace, and are left running when supervised
// with Config.LeaveRunning), the terminals, the policy, the indexer and
// the projector, then the index, the read models, the store and the bus.
// Each wait ends with ctx; what could not finish by then is reported, and
// the parts after it are closed all the same. CloseTimeout is a deadline
// that suffices in the ordinary course. Close is safe to call twice; the
// second call returns what the first did.
func (d *Daemon) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		var errs []error
		for i := len(d.closes) - 1; i >= 0; i-- {
			c := d.closes[i]
			if err := c.fn(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close the %s: %w", c.part, err))
			}
		}
		d.closes = nil
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// CloseTimeout is how long Close takes at most in the ordinary course: the
// API's requests in flight, the agents' grace between SIGTERM and SIGKILL,
// and the recording of their ends.
func (d *Daemon) CloseTimeout() time.Duration {
	return d.cfg.ShutdownTimeout + d.cfg.StopGrace + stopMargin
}

// Layout is the data directory's layout.
func (d *Daemon) Layout() Layout { return d.layout }

// Bus is the log's NATS.
func (d *Daemon) Bus() *bus.Bus { return d.bus }

// Store is the journal store.
func (d *Daemon) Store() *eventstore.JetStreamStore { return d.store }

// Views are the read models.
func (d *Daemon) Views() *projections.DB { return d.views }

// Fleet is this daemon's membership of the fleet on its log.
func (d *Daemon) Fleet() *fleet.Fleet { return d.fleet }

// Runtime runs the agents.
func (d *Daemon) Runtime() *runtime.Runtime { return d.rt }

// Terminals is the registry of the runtime's terminal lanes.
func (d *Daemon) Terminals() *terminal.Registry { return d.terms }

// Server is the API server.
func (d *Daemon) Server() *api.Server { return d.srv }

// Handler is the API's handler, wrapped by Config.WrapHandler, for a
// caller that serves it itself (Config.Listen empty). Once Close has
// begun it answers 503.
func (d *Daemon) Handler() http.Handler { return d.handler }

// URL is the API's address, http://host:port; empty without a listener.
func (d *Daemon) URL() string { return d.url }

// Token is the API token.
func (d *Daemon) Token() string { return d.token }

// Failed gets the error that ended serving on the listener before Close,
// if it does.
func (d *Daemon) Failed() <-chan error { return d.failed }
