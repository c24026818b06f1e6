package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/policy"
)

// textBytes is the length of every observation's progress summary.
const textBytes = 256

// Appends that fail are sent again this many times in all, appendBackoff
// apart and more each time: a cluster that has just formed, or is moving a
// stream leader, refuses writes for a moment.
const (
	appendAttempts = 5
	appendBackoff  = 100 * time.Millisecond
	// appendTimeout bounds one attempt: a request whose answer is lost
	// would otherwise wait for the round's deadline.
	appendTimeout = 10 * time.Second
)

// runner carries what the rounds of one Run share.
type runner struct {
	cfg     Config
	summary string
}

// observationID is observation i's id: the decision names it, which tells
// which observation a decision answers.
func observationID(i int) string { return "obs-" + strconv.Itoa(i) }

// observationIndex is the i of observationID(i), -1 for another id.
func observationIndex(id string) int {
	s, ok := strings.CutPrefix(id, "obs-")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}

// observation is a progress signal, as an agent reports it through MCP: the
// policy decides on each.
func (r *runner) observation(i int) *eventstore.Observation {
	return &eventstore.Observation{
		ObservationID: observationID(i),
		Source:        eventstore.ObservedMCP,
		Confidence:    eventstore.ConfidenceAuthoritative,
		Signal:        eventstore.NewSignal(&eventstore.ProgressSignal{Summary: r.summary}),
	}
}

// workload is a round's cluster with its journals created.
type workload struct {
	cl   *cluster
	refs []eventstore.Reference
	// retries counts appends sent again.
	retries atomic.Int64
}

// start opens a cluster and creates the journals, journal j through node
// j mod Nodes's store, the one every append to it goes through.
func (r *runner) start(ctx context.Context) (_ *workload, err error) {
	cl, err := openCluster(ctx, r.cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, cl.Close())
		}
	}()
	w := &workload{cl: cl, refs: make([]eventstore.Reference, r.cfg.Journals)}
	for j := range w.refs {
		task := fmt.Sprintf("fleet-%d", j)
		id, err := eventstore.NewAgentExecutionID(eventstore.OwnerTask, task, "fleet")
		if err == nil {
			w.refs[j], err = eventstore.NewReference(eventstore.OwnerTask, task, id)
		}
		for attempt := 1; err == nil; attempt++ {
			var ref eventstore.Reference
			actx, cancel := context.WithTimeout(ctx, appendTimeout)
			ref, err = w.store(j).EnsureJournal(actx, w.refs[j], header())
			cancel()
			if err == nil {
				w.refs[j] = ref
				break
			}
			if attempt == appendAttempts || !pause(ctx, attempt) {
				break
			}
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("journal %d: %w", j, err)
		}
	}
	return w, nil
}

// store is the store journal j is written through.
func (w *workload) store(j int) *eventstore.JetStreamStore { return w.cl.stores[j%Nodes] }

// header is every journal's header: a headless agent.
func header() *eventstore.Header {
	return &eventstore.Header{AgentID: "generic",
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
}

// appendObservation appends observation i to journal i mod Journals,
// sending it again on error. Each attempt appends a record of its own,
// since Append fills in the record's place in the journal.
func (r *runner) appendObservation(ctx context.Context, w *workload, i int) error {
	j := i % len(w.refs)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, appendTimeout)
		_, err := w.store(j).Append(actx, w.refs[j], r.observation(i))
		cancel()
		if err == nil {
			return nil
		}
		if attempt == appendAttempts || !pause(ctx, attempt) {
			return fmt.Errorf("observation %d after %d attempts: %w", i, attempt, err)
		}
		w.retries.Add(1)
	}
}

// pause waits before attempt+1, reporting false when ctx ended first.
func pause(ctx context.Context, attempt int) bool {
	t := time.NewTimer(time.Duration(attempt) * appendBackoff)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// rawAppend appends RawAppends observations with no policy running.
func (r *runner) rawAppend(ctx context.Context) (_ round, err error) {
	t0 := time.Now()
	w, err := r.start(ctx)
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", nameRawAppend, err)
	}
	defer func() { err = errors.Join(err, w.cl.Close()) }()
	startup := time.Since(t0)
	calls, err := benchkit.TimeEach(ctx, r.cfg.RawAppends, r.cfg.Writers, func(ctx context.Context, _, i int) error {
		return r.appendObservation(ctx, w, i)
	})
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", nameRawAppend, err)
	}
	lat, elapsed := calls.Latencies, calls.Elapsed
	res := round{Name: nameRawAppend, Count: len(lat), Writers: r.cfg.Writers, Journals: len(w.refs),
		Elapsed: elapsed, PerSecond: benchkit.Rate(len(lat), elapsed), Retries: int(w.retries.Load()), Startup: startup,
		Method: fmt.Sprintf("JetStreamStore.Append of a progress observation (a %d-byte summary) from %d goroutines to %d journals, "+
			"journal j through node j mod %d; no policy running; from the first append to the last acknowledged", textBytes, r.cfg.Writers, len(w.refs), Nodes)}
	res.AppendP50, res.AppendP99 = benchkit.Percentile(lat, 0.5), benchkit.Percentile(lat, 0.99)
	return res, nil
}

// group is the policy subscribers of a round and what they report.
type group struct {
	partitions int
	members    []string

	mu   sync.Mutex
	owns map[string][]int
	// settled is set once the shares were even; moves counts the changes
	// heard after that.
	settled bool
	moves   int
	// restarts counts the subscribers started again after an error,
	// lastErr is the last such error.
	restarts int
	lastErr  error
	// decidedAt holds when observation i's decision was heard, decided
	// how many of the first phase's were, lastAt when the last of them
	// was; backlog counts the backlog phase's (observations from
	// len(decidedAt)/2 on), backlogAt when its last was heard.
	decidedAt []time.Time
	backlog   int
	backlogAt time.Time
	drained   chan struct{} // closed once the backlog is decided
	decided   int
	lastAt    time.Time

	changed chan struct{} // a share changed (buffered, never blocks)
	all     chan struct{} // closed once every observation is decided
}

func newGroup(partitions, observations int) *group {
	return &group{partitions: partitions, owns: map[string][]int{}, decidedAt: make([]time.Time, 2*observations),
		changed: make(chan struct{}, 1), all: make(chan struct{}), drained: make(chan struct{})}
}

// owned hears member's partitions.
func (g *group) owned(member string, parts []int) {
	g.mu.Lock()
	g.owns[member] = slices.Clone(parts)
	if g.settled {
		g.moves++
	}
	g.mu.Unlock()
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// even reports whether every member has reported its share, the shares
// cover every partition exactly once, and each holds its even share (P/k,
// or one more where P does not divide). It marks the group settled when so.
func (g *group) even() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := len(g.members)
	seen := make([]bool, g.partitions)
	for _, m := range g.members {
		parts, ok := g.owns[m]
		if !ok || len(parts) < g.partitions/k || len(parts) > (g.partitions+k-1)/k {
			return false
		}
		for _, p := range parts {
			if p < 0 || p >= g.partitions || seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	if slices.Contains(seen, false) {
		return false
	}
	g.settled = true
	return true
}

// heard hears a decision.
func (g *group) heard(d *eventstore.Decision) {
	now := time.Now()
	i := observationIndex(d.ObservationID)
	g.mu.Lock()
	defer g.mu.Unlock()
	// A decision heard twice (a record delivered again) counts once.
	if i < 0 || i >= len(g.decidedAt) || !g.decidedAt[i].IsZero() {
		return
	}
	g.decidedAt[i] = now
	if half := len(g.decidedAt) / 2; i >= half {
		g.backlogAt = now
		if g.backlog++; g.backlog == half {
			close(g.drained)
		}
		return
	}
	g.lastAt = now
	if g.decided++; g.decided == len(g.decidedAt)/2 {
		close(g.all)
	}
}

// policy runs the round with k daemons: k subscribers, one on each of the
// first k nodes, share the partitions; once they have, the writers append
// Observations observations and the round waits for every decision. With
// partitioned false, one subscriber decides on the whole log, as a daemon
// does by default: the baseline the partitions are compared with.
func (r *runner) policy(ctx context.Context, k int, partitioned bool) (_ round, err error) {
	name := policyName(k)
	partitions := r.cfg.Partitions
	if !partitioned {
		name, k, partitions = nameWholeLog, 1, 0
	}
	t0 := time.Now()
	w, err := r.start(ctx)
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", name, err)
	}
	defer func() { err = errors.Join(err, w.cl.Close()) }()
	startup := time.Since(t0)

	g := newGroup(r.cfg.Partitions, r.cfg.Observations)
	t1 := time.Now()
	var ds deciders
	if r.cfg.DaemonCPU > 0 {
		ds, err = r.startProcesses(w, k, partitions, g)
	} else {
		ds = r.startInProcess(ctx, w, k, partitions, g)
	}
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", name, err)
	}
	// Registered after the cluster's Close, so it runs first: the
	// subscribers stop before their nodes do.
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, ds.stop())
		}
	}()
	for partitioned && !g.even() {
		select {
		case <-g.changed:
		case <-ctx.Done():
			return round{}, fmt.Errorf("%s: the group did not settle (shares %v%s): %w", name, g.shares(), g.lastError(), ctx.Err())
		}
	}
	settle := time.Since(t1)

	calls, err := benchkit.TimeEach(ctx, r.cfg.Observations, r.cfg.Writers, func(ctx context.Context, _, i int) error {
		return r.appendObservation(ctx, w, i)
	})
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", name, err)
	}
	select {
	case <-g.all:
	case <-ctx.Done():
		return round{}, fmt.Errorf("%s: %d of %d observations decided%s: %w", name, g.decidedCount(), r.cfg.Observations, g.lastError(), ctx.Err())
	}

	// The backlog: with the handlers held back, as many observations
	// again are appended; then the subscribers decide on them as fast as
	// they can, which is their capacity rather than the writers' pace.
	if err := ds.hold(ctx); err != nil {
		return round{}, fmt.Errorf("%s: backlog: %w", name, err)
	}
	if _, err := benchkit.TimeEach(ctx, r.cfg.Observations, r.cfg.Writers, func(ctx context.Context, _, i int) error {
		return r.appendObservation(ctx, w, r.cfg.Observations+i)
	}); err != nil {
		return round{}, fmt.Errorf("%s: backlog: %w", name, err)
	}
	opened := time.Now()
	ds.release()
	select {
	case <-g.drained:
	case <-ctx.Done():
		return round{}, fmt.Errorf("%s: backlog not decided%s: %w", name, g.lastError(), ctx.Err())
	}
	stopped = true
	if err := ds.stop(); err != nil {
		return round{}, fmt.Errorf("%s: %w", name, err)
	}

	g.mu.Lock()
	backlogElapsed := g.backlogAt.Sub(opened)
	elapsed := g.lastAt.Sub(calls.Start)
	decision := make([]time.Duration, len(calls.Starts))
	for i, start := range calls.Starts {
		decision[i] = g.decidedAt[i].Sub(start)
	}
	moves, restarts, decided := g.moves, g.restarts, g.decided
	g.mu.Unlock()
	how := fmt.Sprintf("sharing %d partitions evenly once settled", partitions)
	if !partitioned {
		how = "reading the whole log (no partitions, a daemon's default)"
	}
	res := round{Name: name, Daemons: k, Partitions: partitions, Count: r.cfg.Observations, Decided: decided, Writers: r.cfg.Writers, Journals: len(w.refs),
		Elapsed: elapsed, PerSecond: benchkit.Rate(r.cfg.Observations, elapsed), Retries: int(w.retries.Load()),
		Moves: moves, Restarts: restarts, Startup: startup, Settle: settle,
		Method: fmt.Sprintf("%s, %s; %d observations appended as in raw/append; "+
			"from the first append to the Decided hooks having heard a decision on every observation",
			r.subscribers(k), how, r.cfg.Observations)}
	res.AppendP50, res.AppendP99 = benchkit.Percentile(calls.Latencies, 0.5), benchkit.Percentile(calls.Latencies, 0.99)
	res.DecisionP50, res.DecisionP99 = benchkit.Percentile(decision, 0.5), benchkit.Percentile(decision, 0.99)
	res.BacklogElapsed, res.BacklogPerSecond = backlogElapsed, benchkit.Rate(r.cfg.Observations, backlogElapsed)
	res.DaemonCPUTime = ds.cpu()
	return res, nil
}

// gate holds the subscribers' handlers back while it is shut.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // closed while the gate is open
}

func newGate() *gate {
	g := &gate{ch: make(chan struct{})}
	close(g.ch)
	return g
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ch = make(chan struct{})
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch)
}

// wait returns once the gate is open, or ctx ended.
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedLog is a store whose readers' handlers wait for the gate.
type gatedLog struct {
	*eventstore.JetStreamStore
	gate *gate
}

func (l *gatedLog) held(fn func(context.Context, eventstore.Entry) error) func(context.Context, eventstore.Entry) error {
	return func(ctx context.Context, e eventstore.Entry) error {
		if err := l.gate.wait(ctx); err != nil {
			return err
		}
		return fn(ctx, e)
	}
}

func (l *gatedLog) Consume(ctx context.Context, cfg eventstore.ConsumerConfig, fn func(context.Context, eventstore.Entry) error) error {
	return l.JetStreamStore.Consume(ctx, cfg, l.held(fn))
}

func (l *gatedLog) ConsumePartitioned(ctx context.Context, cfg eventstore.PartitionConfig, fn func(context.Context, eventstore.Entry) error) error {
	return l.JetStreamStore.ConsumePartitioned(ctx, cfg, l.held(fn))
}

// subscribers says where a round's k subscribers run.
func (r *runner) subscribers(k int) string {
	where := "1 policy subscriber on node 0's store"
	if k > 1 {
		where = fmt.Sprintf("%d policy subscribers, one on each of nodes 0 to %d's stores", k, k-1)
	}
	if r.cfg.DaemonCPU > 0 {
		where += fmt.Sprintf(", each a process of its own limited to %v CPU and connected over loopback", r.cfg.DaemonCPU)
	}
	return where
}

// Restarts of a subscriber that stopped on an error wait restartFirst,
// doubling up to restartLast, as the daemon's do.
const (
	restartFirst = 100 * time.Millisecond
	restartLast  = 2 * time.Second
)

// keepRunning runs a subscriber until ctx ends, starting it again when it
// stops on an error, which it hands to failed first, as the daemon does: a
// member that joins a cluster still electing the group's stream leader can
// fail to open the group.
func keepRunning(ctx context.Context, run func(context.Context) error, failed func(error)) {
	delay := restartFirst
	for {
		err := run(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped without an error")
		}
		failed(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, restartLast)
	}
}

// failed hears that member's subscriber stopped on err and starts again.
func (g *group) failed(member string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.restarts++
	g.lastErr = fmt.Errorf("subscriber %s: %w", member, err)
}

// lastError is the last error a subscriber stopped on, for an error
// message: "" or "; last ...".
func (g *group) lastError() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastErr == nil {
		return ""
	}
	return "; last " + g.lastErr.Error()
}

// shares is each member's partitions as last heard, for an error message.
func (g *group) shares() map[string][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string][]int, len(g.owns))
	for m, p := range g.owns {
		out[m] = slices.Clone(p)
	}
	return out
}

func (g *group) decidedCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.decided
}

// deciders are a round's policy subscribers, wherever they run.
type deciders interface {
	// hold holds their handlers back, returning once every one is held;
	// release lets them go.
	hold(ctx context.Context) error
	release()
	// stop stops them and waits until they have.
	stop() error
	// cpu is the CPU time they used, once stopped; 0 when it is not
	// theirs alone to measure.
	cpu() time.Duration
}

// inProcess is k subscribers in this process, one on each of the first k
// nodes' stores, sharing all of its CPUs.
type inProcess struct {
	gate  *gate
	stopF context.CancelFunc
	wg    sync.WaitGroup
}

func (r *runner) startInProcess(ctx context.Context, w *workload, k, partitions int, g *group) *inProcess {
	d := &inProcess{gate: newGate()}
	// The subscribers run on a context without the round's deadline, as
	// in the daemon: the JetStream client then bounds each of their
	// requests by its own timeout and they try again, where with the
	// deadline one request lost while the cluster settles waits out the
	// whole round. They still stop when the round ends.
	subCtx, stopSubs := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, stopSubs)
	d.stopF = func() { unhook(); stopSubs() }
	for i := range k {
		member := w.cl.buses[i].ServerName()
		g.members = append(g.members, member)
		sub := policy.NewSubscriber(&gatedLog{JetStreamStore: w.cl.stores[i], gate: d.gate}, policy.SubscriberConfig{
			Partitions: partitions,
			Member:     member,
			Owns:       func(parts []int) { g.owned(member, parts) },
			Decided:    func(d eventstore.Decided) { g.heard(d.Decision) },
			Logger:     r.cfg.Logger,
		})
		d.wg.Go(func() { keepRunning(subCtx, sub.Run, func(err error) { g.failed(member, err) }) })
	}
	return d
}

func (d *inProcess) hold(context.Context) error { d.gate.shut(); return nil }
func (d *inProcess) release()                   { d.gate.open() }
func (d *inProcess) cpu() time.Duration         { return 0 }
func (d *inProcess) stop() error {
	d.stopF()
	d.wg.Wait()
	return nil
}

// processes is k member processes, one on each of the first k nodes, each
// limited to Config.DaemonCPU CPUs.
type processes []*memberProc

func (r *runner) startProcesses(w *workload, k, partitions int, g *group) (processes, error) {
	var ps processes
	for i := range k {
		m, err := r.startMember(w, i, partitions, g)
		if err != nil {
			return nil, errors.Join(err, ps.stop())
		}
		g.members = append(g.members, m.name)
		ps = append(ps, m)
	}
	return ps, nil
}

func (ps processes) hold(ctx context.Context) error {
	for _, m := range ps {
		if err := m.hold(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (ps processes) release() {
	for _, m := range ps {
		m.release()
	}
}

func (ps processes) cpu() time.Duration {
	var t time.Duration
	for _, m := range ps {
		if st := m.cmd.ProcessState; st != nil {
			t += st.UserTime() + st.SystemTime()
		}
	}
	return t
}

// stop stops every member at once.
func (ps processes) stop() error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, m := range ps {
		wg.Go(func() { errs[i] = m.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
