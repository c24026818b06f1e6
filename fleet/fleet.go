package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// DefaultLease is how long a host may go unheard before the others
	// take it for lost.
	DefaultLease = 10 * time.Second
	// BeatsPerLease is how many heartbeats a host sends within its lease,
	// so that a few lost or late ones do not make it lost.
	BeatsPerLease = 5
	// forgetAfter is how long the bucket keeps a heartbeat no host has
	// renewed: a host gone for good drops out of the list then.
	forgetAfter = 7 * 24 * time.Hour
)

// Status is what a member reports of itself in each heartbeat.
type Status struct {
	Capacity Capacity
	Running  []string
}

// Config configures a member of the fleet.
type Config struct {
	// Conn is the connection to the log's NATS and JS its JetStream.
	Conn *nats.Conn
	JS   jetstream.JetStream
	// Stream is the journal stream's name: the hosts bucket and the
	// subjects are the stream's, so that two logs on one NATS are two
	// fleets.
	Stream string
	// Replicas is how many copies the hosts bucket keeps (the stream's).
	Replicas int
	// Name is this host's name (ValidName); Labels its labels.
	Name string
	// Home is where it runs, the same across its restarts: DefaultName
	// of its data directory. A live heartbeat under Name from the same
	// Home is this host's previous process, which died (only one
	// process at a time can use a data directory), and does not hold
	// the name.
	Home   string
	Labels map[string]string
	// Profiles are the names of this host's environment profiles, for
	// placing the launches that ask for one.
	Profiles []string
	// MinFreeMemory is the free memory below which this host starts no
	// work; 0 for none.
	MinFreeMemory uint64
	// Lease is how long the others wait for this host's next heartbeat;
	// DefaultLease when 0.
	Lease time.Duration
	// Status, when set, is asked for the capacity and the running
	// executions at each heartbeat.
	Status func() Status
	// Handler serves the API requests forwarded to this host; without it
	// the host takes none.
	Handler http.Handler
	// Lost, when set, is called for each host that is lost (not heard
	// from for longer than its lease, and not left), once per process of
	// it, by one member only: the first live one by name. It ends what
	// the lost host ran; an error has it called again at the next beat.
	Lost func(ctx context.Context, m Member) error
	// CanStart, when set with Start, says whether this host may start a
	// queued run now (room, memory, placement), given how many runs it
	// claimed and is still starting; the dispatcher claims only those.
	// Without Start this host starts no queued run.
	CanStart func(q Queued, starting int) bool
	// Start starts a run this host claimed; the run leaves the queue
	// when it returns, started or failed (which Start journals), unless
	// it says to retry: then the claim is released and the run waits
	// again.
	Start func(ctx context.Context, q Queued) (retry bool)
	// Env, when set, gives the environment of a run this host accepted
	// to the host that starts it (Fleet.EnvOf).
	Env func(id string) ([]string, error)
	// Orphan says whether a run claimed by a host that is gone was placed
	// (its journal names that host: it is that host's execution, ended
	// with it) or may be started again elsewhere. Needed with Start.
	Orphan func(ctx context.Context, q Queued) (placed bool, err error)
	// Limits are the fleet-wide limits of running executions per agent
	// kind (limits.go), the same on every host.
	Limits map[string]int
	// Ended, when set, says whether an execution has ended, for the slots
	// of limits that a host which died could not give back.
	Ended func(id string) bool
	// Dequeued, when set, hears of every run that leaves the queue, for
	// the host that accepted it to forget its environment.
	Dequeued func(id string)
	// Logger receives what the member cannot do; discarded when nil.
	Logger *slog.Logger
}

// Fleet is this daemon's membership of the fleet: its heartbeat, its view
// of the other hosts and its end of the command routing.
type Fleet struct {
	cfg      Config
	kv       jetstream.KeyValue
	instance string
	started  time.Time

	mu      sync.Mutex
	members map[string]member
	// self is this host's last heartbeat: it is live to itself, whether
	// or not the bucket's watch has brought the heartbeat back yet.
	self Host
	// ended are the instances of lost hosts whose work Lost has ended.
	ended map[string]bool
	// selfHeard is when the watch last brought this process's own
	// heartbeat back, and listening since when it has done so without a
	// gap (zero: since it joined). A host that does not hear itself
	// cannot tell a silent host from a silent log (the bucket electing a
	// leader, its watch being set up again), so it judges no one lost
	// then, and gives every host a lease of its own once it hears again.
	selfHeard, listening time.Time
	beatNow              chan struct{}

	limits      jetstream.KeyValue
	queue       jetstream.KeyValue
	queued      map[string]Queued
	queueWatch  jetstream.KeyWatcher
	dispatchNow chan struct{}
	// starts are the queued runs being started, inflight how many.
	starts   sync.WaitGroup
	inflight atomic.Int64

	// work lasts until Close; dispatching is the loop Dispatch starts.
	work        context.Context
	dispatching sync.Once

	sub    *nats.Subscription
	envSub *nats.Subscription
	cancel context.CancelFunc
	wg     sync.WaitGroup
	serve  chan struct{} // bounds the forwarded requests served at once
	closed bool
}

// member is a host as this member last heard of it.
type member struct {
	host  Host
	heard time.Time // by this member's clock
}

// Join makes this daemon a host of the fleet: it opens the hosts bucket,
// refuses a name a live host holds, sends its first heartbeat, starts
// answering forwarded requests and watching the others. ctx bounds the
// joining only.
func Join(ctx context.Context, cfg Config) (*Fleet, error) {
	if err := ValidName(cfg.Name); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if cfg.Conn == nil || cfg.JS == nil || cfg.Stream == "" {
		return nil, errors.New("fleet: join: want the log's NATS connection, its JetStream and the stream name")
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < 100*time.Millisecond {
		return nil, fmt.Errorf("fleet: lease %s is too short (want 100ms or more; %s by default)", cfg.Lease, DefaultLease)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 8)
	rand.Read(b)
	f := &Fleet{cfg: cfg, instance: hex.EncodeToString(b), started: time.Now().UTC(),
		members: map[string]member{}, ended: map[string]bool{}, dispatchNow: make(chan struct{}, 1), beatNow: make(chan struct{}, 1), serve: make(chan struct{}, 64)}
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) (err error) {
		kv, err = eventstore.OpenBucket(ctx, cfg.JS, jetstream.KeyValueConfig{Bucket: Bucket(cfg.Stream), Storage: jetstream.FileStorage,
			Replicas: max(cfg.Replicas, 1), TTL: forgetAfter, Description: "the fleet's hosts: each one's last heartbeat"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: open the hosts bucket: %w", err)
	}
	f.kv = kv
	if err := f.openQueue(ctx); err != nil {
		return nil, err
	}
	if err := f.openLimits(ctx); err != nil {
		return nil, fmt.Errorf("fleet: open the limits bucket: %w", err)
	}
	if err := retry(ctx, f.claimName); err != nil {
		return nil, err
	}
	if err := retry(ctx, func(ctx context.Context) error { return f.beat(ctx, false) }); err != nil {
		return nil, fmt.Errorf("fleet: first heartbeat: %w", err)
	}
	// The watch set up below brings the first heartbeat back among the
	// bucket's initial values: it counts as heard now.
	f.selfHeard = time.Now()
	if cfg.Handler != nil {
		if f.sub, err = cfg.Conn.Subscribe(Subject(cfg.Stream, cfg.Name), f.answer); err != nil {
			return nil, fmt.Errorf("fleet: answer on %s: %w", Subject(cfg.Stream, cfg.Name), err)
		}
	}
	if cfg.Env != nil {
		if f.envSub, err = cfg.Conn.Subscribe(envSubject(cfg.Stream, cfg.Name), f.answerEnv); err != nil {
			return nil, errors.Join(fmt.Errorf("fleet: answer on %s: %w", envSubject(cfg.Stream, cfg.Name), err), f.unsubscribe())
		}
	}
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	var watcher jetstream.KeyWatcher
	err = retry(ctx, func(context.Context) (err error) {
		watcher, err = kv.WatchAll(work)
		return err
	})
	if err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("fleet: watch the hosts: %w", err), f.unsubscribe())
	}
	f.wg.Go(func() { f.watch(work, watcher) })
	f.wg.Go(func() { f.beatLoop(work) })
	f.wg.Go(func() { f.watchQueue(work) })
	f.work = work
	return f, nil
}

// Dispatch starts this host's dispatcher of the fleet's queue (with
// Config.Start): call it once the host has recovered what its previous
// process left, so that no run it had started is started again. Its first
// act is to take back its previous process's claims.
func (f *Fleet) Dispatch() {
	if f.cfg.Start == nil {
		return
	}
	f.dispatching.Do(func() {
		f.mu.Lock()
		closed := f.closed
		f.mu.Unlock()
		if !closed {
			f.wg.Go(func() { f.dispatchLoop(f.work) })
		}
	})
}

// Bucket is the hosts bucket of the journal stream stream.
func Bucket(stream string) string { return stream + "_hosts" }

// Subject is where the host name of the stream's fleet takes forwarded
// API requests.
func Subject(stream, name string) string {
	return "agentjournal.fleet." + stream + ".host." + name + ".api"
}

// joinWait bounds how long Join waits for the log's JetStream to answer: a
// cluster that is electing its leaders leaves requests unanswered for a
// few seconds.
const joinWait = 30 * time.Second

// retry runs fn, each attempt bounded, until it succeeds, fails for a
// reason other than JetStream not answering yet, or joinWait has passed.
func retry(ctx context.Context, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(joinWait)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// transient reports an error of a JetStream that does not answer yet.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.As(err, &apiErr) && apiErr.Code >= 500
}

// claimName refuses the name when another live process holds it: two
// daemons under one name would take each other's commands.
func (f *Fleet) claimName(ctx context.Context) error {
	e, err := f.kv.Get(ctx, f.cfg.Name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fleet: read host %s: %w", f.cfg.Name, err)
	}
	var h Host
	if json.Unmarshal(e.Value(), &h) != nil || h.Left || (h.Home != "" && h.Home == f.cfg.Home) {
		return nil
	}
	if age := time.Since(e.Created()); age < h.Lease() {
		return fmt.Errorf("fleet: host name %s is held by a live daemon (it started %s and was heard from %s ago); "+
			"give this one another name (serve --host-name) or stop that one first", f.cfg.Name, h.Started.Format(time.RFC3339), age.Round(time.Millisecond))
	}
	return nil
}

// Name is this host's name.
func (f *Fleet) Name() string { return f.cfg.Name }

// Lease is this host's lease.
func (f *Fleet) Lease() time.Duration { return f.cfg.Lease }

// Beat asks for a heartbeat now, for a change the others should see at
// once (a launch, an end), without waiting for the next one.
func (f *Fleet) Beat() {
	select {
	case f.beatNow <- struct{}{}:
	default:
	}
}

func (f *Fleet) beatLoop(ctx context.Context) {
	t := time.NewTicker(f.cfg.Lease / BeatsPerLease)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.beatNow:
		}
		bctx, cancel := context.WithTimeout(ctx, f.cfg.Lease/BeatsPerLease)
		err := f.beat(bctx, false)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				f.cfg.Logger.Warn("fleet heartbeat not sent; the others take this host for lost if none gets through within its lease",
					"host", f.cfg.Name, "lease", f.cfg.Lease, "err", err)
			}
			// A host that cannot beat may be the lost one: it ends
			// nobody's work.
			continue
		}
		if f.first() {
			f.endLost(ctx)
			if f.cfg.Orphan != nil {
				f.takeBack(ctx, f.gone)
			}
			f.freeEnded(ctx)
		}
	}
}

// first reports whether this is the first live host by name, the one that
// acts for the fleet on what lost hosts leave: one member acts, so that it
// is done once (its records carry ids that the log would take only once
// anyway).
func (f *Fleet) first() bool {
	for _, m := range f.Members() {
		if m.State == Live && !m.Self && m.Name < f.cfg.Name {
			return false
		}
	}
	return true
}

// gone reports whether the host that made claim c is gone: lost, left or
// unknown. A live host whose process changed takes back its own old claims
// itself (reclaimOwn), since only it knows what it started.
func (f *Fleet) gone(c Claim) bool {
	if c.Host == f.cfg.Name {
		return false
	}
	m, ok := f.Member(c.Host)
	return !ok || m.State != Live
}

// endLost calls Lost for the hosts lost since the last beat.
func (f *Fleet) endLost(ctx context.Context) {
	if f.cfg.Lost == nil {
		return
	}
	var lost []Member
	for _, m := range f.Members() {
		switch {
		case m.State == Lost && !m.Self:
			f.mu.Lock()
			done := f.ended[m.Instance]
			f.mu.Unlock()
			if !done {
				lost = append(lost, m)
			}
		}
	}
	for _, m := range lost {
		if err := f.cfg.Lost(ctx, m); err != nil {
			f.cfg.Logger.Error("fleet: end what a lost host ran; tried again at the next beat", "host", m.Name, "err", err)
			continue
		}
		f.mu.Lock()
		f.ended[m.Instance] = true
		f.mu.Unlock()
	}
}

// beat puts this host's heartbeat.
func (f *Fleet) beat(ctx context.Context, left bool) error {
	h := Host{Name: f.cfg.Name, Instance: f.instance, Home: f.cfg.Home, Profiles: f.cfg.Profiles, Labels: f.cfg.Labels, Started: f.started, Beat: time.Now().UTC(),
		LeaseMs: f.cfg.Lease.Milliseconds(), Left: left}
	if f.cfg.Status != nil {
		st := f.cfg.Status()
		h.Capacity, h.Running = st.Capacity, st.Running
	}
	h.Capacity.MemoryFree, h.Capacity.MemoryTotal = memory()
	h.Capacity.MinFreeMemory = f.cfg.MinFreeMemory
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err = f.kv.Put(ctx, f.cfg.Name, b); err == nil {
		f.mu.Lock()
		f.self = h
		f.mu.Unlock()
	}
	return err
}

// watch keeps the members map: every heartbeat is heard when it arrives;
// those in the bucket before are dated by when the bucket got them.
func (f *Fleet) watch(ctx context.Context, w jetstream.KeyWatcher) {
	defer w.Stop()
	initial := true
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				initial = false
				continue
			}
			f.heard(e, initial)
		}
	}
}

func (f *Fleet) heard(e jetstream.KeyValueEntry, initial bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(f.members, e.Key())
		return
	}
	var h Host
	if err := json.Unmarshal(e.Value(), &h); err != nil || h.Name != e.Key() {
		f.cfg.Logger.Warn("fleet: a heartbeat that does not read as a host is passed over", "key", e.Key(), "err", err)
		return
	}
	if h.Name == f.cfg.Name && h.Instance != f.instance && !initial {
		f.cfg.Logger.Error("fleet: another daemon sends heartbeats under this host's name; commands for either may reach the other",
			"host", h.Name, "started", h.Started)
	}
	heard := time.Now()
	if initial {
		heard = e.Created()
	} else if h.Name == f.cfg.Name && h.Instance == f.instance {
		if heard.Sub(f.selfHeard) > f.echoGap() {
			f.listening = heard
		}
		f.selfHeard = heard
	}
	f.members[h.Name] = member{host: h, heard: heard}
}

// echoGap is how long this host may go without hearing its own heartbeat
// back before it takes its view of the others for stale: two beats.
func (f *Fleet) echoGap() time.Duration { return 2 * f.cfg.Lease / BeatsPerLease }

// State is how a host stands as a member sees it.
type State string

const (
	// Live: heard from within its lease.
	Live State = "live"
	// Lost: not heard from for longer than its lease.
	Lost State = "lost"
	// Left: its last heartbeat said it closed.
	Left State = "left"
)

// Member is a host as this member sees it now.
type Member struct {
	Host
	// Heard is when this member last heard from it, by its own clock.
	Heard time.Time
	State State
	// Self marks this daemon's own host.
	Self bool
}

// view is m as this member sees it now; f.mu is held. A host is lost only
// when it went unheard for its lease while this member heard its own
// heartbeats, and for a lease since this member heard them again after a
// gap: a log that went quiet for all (a node of a cluster killed, and the
// bucket's leader or its watch moving) makes no live host lost.
func (f *Fleet) view(m member, now time.Time) Member {
	v := Member{Host: m.host, Heard: m.heard, State: Live, Self: m.host.Name == f.cfg.Name}
	hearing := now.Sub(f.selfHeard) <= f.echoGap()
	switch {
	case m.host.Left:
		v.State = Left
	case hearing && now.Sub(m.heard) > m.host.Lease() && now.Sub(f.listening) > m.host.Lease():
		v.State = Lost
	}
	return v
}

// Room says why this host takes no new work now, or nil, from its free
// memory as it is now.
func (f *Fleet) Room() error {
	free, total := memory()
	c := Capacity{MemoryFree: free, MemoryTotal: total, MinFreeMemory: f.cfg.MinFreeMemory}
	if err := c.Room(); err != nil {
		return fmt.Errorf("host %s has %w", f.cfg.Name, err)
	}
	return nil
}

// Members lists the hosts this member knows of, by name.
func (f *Fleet) Members() []Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	members := maps.Clone(f.members)
	if f.self.Name != "" && !f.self.Left {
		members[f.self.Name] = member{host: f.self, heard: now}
	}
	out := make([]Member, 0, len(members))
	for _, name := range slices.Sorted(maps.Keys(members)) {
		out = append(out, f.view(members[name], now))
	}
	return out
}

// Member returns the host name as this member sees it; false when it has
// never heard of it.
func (f *Fleet) Member(name string) (Member, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == f.self.Name && !f.self.Left {
		return f.view(member{host: f.self, heard: time.Now()}, time.Now()), true
	}
	m, ok := f.members[name]
	if !ok {
		return Member{}, false
	}
	return f.view(m, time.Now()), true
}

// Close stops answering forwarded requests and sending heartbeats, and
// sends a last one that says this host left, so that the others need not
// wait out its lease. A host that dies instead is lost once its lease
// passes.
func (f *Fleet) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	err := f.unsubscribe()
	f.cancel()
	f.wg.Wait()
	// The runs being started finish starting: cut short, one would be
	// neither queued nor running.
	f.starts.Wait()
	if berr := f.beat(ctx, true); berr != nil {
		err = errors.Join(err, fmt.Errorf("fleet: last heartbeat: %w", berr))
	}
	return err
}

func (f *Fleet) unsubscribe() error {
	var errs []error
	for _, sub := range []*nats.Subscription{f.sub, f.envSub} {
		if sub != nil {
			// Drain lets the requests being answered finish.
			errs = append(errs, sub.Drain())
		}
	}
	return errors.Join(errs...)
}
