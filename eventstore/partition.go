package eventstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PartitionConfig configures ConsumePartitioned.
type PartitionConfig struct {
	// ConsumerConfig says how records are handled. Its Name names the
	// group (its buckets and the whole-log reader it replaces); its
	// MaxAckPending bounds the records taken and not yet handled;
	// Exclusive, AckWait and PinnedTTL do not apply: a partition has one
	// member at a time by its lock.
	ConsumerConfig
	// Partitions is how many parts the journals are hashed into, 2 to
	// MaxPartitions. Every member must give the same count; a member
	// that gives another while no other member is in the group changes
	// the group's to its own (see recount).
	Partitions int
	// Member is this reader's id in the group ([A-Za-z0-9_-]), the same
	// across restarts, so that a member that comes back gets the same
	// partitions as before.
	Member string
	// Heartbeat is how often the member tells the group it is alive,
	// renews its partitions' locks, saves their progress and looks at who
	// else is there; DefaultHeartbeat when 0. A member silent for
	// MemberTTLBeats heartbeats has left, and its partitions move.
	Heartbeat time.Duration
	// Owns, when set, hears the partitions this member reads whenever
	// they change, in increasing order.
	Owns func(partitions []int)
}

// Bounds and defaults of PartitionConfig.
const (
	MaxPartitions    = 1024
	DefaultHeartbeat = time.Second
	// MemberTTLBeats is how many heartbeats a member or a partition lock
	// lasts unrenewed: a member that dies has its partitions taken over
	// that long after its last heartbeat.
	MemberTTLBeats = 5
)

// regroupAttempts bounds how often a member starting reads the group again
// after another changed it meanwhile.
const regroupAttempts = 5

// Keys of a group's buckets. Member names are [A-Za-z0-9_-], so a key
// with a dot is never a member's.
const (
	partitionsKey = "partitions"
	startKey      = "start"
	lockPrefix    = "lock."
	offsetPrefix  = "offset." // then the count, a dot and the partition
)

// ConsumePartitioned delivers the log's records to fn like Consume, but
// shares the journals among the members of a group: the journals are
// hashed into cfg.Partitions partitions, each partition is read by one
// member at a time, and the members alive share the partitions evenly.
// Each journal's records reach fn one at a time, in log order.
//
// Every member follows the whole log through an ordered consumer, which
// costs the server no acknowledgements, and hands fn the records of the
// partitions it holds. A member holds a partition by a lock in the group's
// members bucket, renewed every heartbeat, and saves there how far it has
// handled each partition's records (an offset below which all are
// handled). A member that joins takes its share from the others, which
// finish the records they have taken and save their progress before they
// let go; a member that dies has its partitions taken over once their
// locks lapse, from their last saved progress, so fn may be handed again
// records it handled in the last heartbeat before the death: handlers must
// be idempotent, as with Consume.
//
// A group created on a log that a Consume reader of the same name read
// starts where that reader's acknowledgements end.
func (s *JetStreamStore) ConsumePartitioned(ctx context.Context, cfg PartitionConfig, fn func(context.Context, Entry) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	base, err := cfg.ConsumerConfig.withDefaults()
	if err != nil {
		return err
	}
	cfg.ConsumerConfig = base
	if cfg.Partitions < 2 || cfg.Partitions > MaxPartitions {
		return fmt.Errorf("consume %s: %d partitions (want 2 to %d)", cfg.Name, cfg.Partitions, MaxPartitions)
	}
	if esc, err := EscapeID(cfg.Member); err != nil || esc != cfg.Member {
		return fmt.Errorf("consume %s: member %q: want 1 to %d of [A-Za-z0-9_-]", cfg.Name, cfg.Member, MaxIDLength)
	}
	cfg.Heartbeat = cmpOr(cfg.Heartbeat, DefaultHeartbeat)
	g := &group{s: s, cfg: cfg, fn: fn, parts: map[int]*part{}, slots: make(chan struct{}, cfg.MaxAckPending)}
	if err := g.open(ctx); err != nil {
		return err
	}
	return g.run(ctx)
}

// groupBucket is the bucket of the group name on the journal stream.
func groupBucket(stream, name string) string { return stream + "_" + name }

// group is one member's view of a partitioned group.
type group struct {
	s   *JetStreamStore
	cfg PartitionConfig
	fn  func(context.Context, Entry) error
	// kv holds the group's partition count, where it starts, each
	// partition's saved progress, and (with a TTL) its members and
	// partition locks.
	kv    jetstream.KeyValue
	locks jetstream.KeyValue
	start uint64
	// slots bounds the records taken and not yet handled.
	slots chan struct{}

	mu    sync.Mutex
	parts map[int]*part
	// gen counts the follower's runs; passed is the newest offset the
	// current run has gone past.
	gen    int
	passed uint64
	owned  []int
}

// part is a partition this member holds.
type part struct {
	rev uint64 // its lock's revision
	// from: the records at or below it are handled, or taken to be.
	from uint64
	// taken are the offsets handed to fn and not yet all handled, in
	// order; done marks those handled.
	taken []uint64
	done  map[uint64]bool
	saved uint64
	// gen is the follower run that reads it: one started after it was
	// taken, so every record above from passes through that run.
	gen int
	// leaving: records are no longer taken; it is let go of once those
	// taken are handled.
	leaving bool
	// lost: another member holds its lock now.
	lost bool
}

// handled is the offset at or below which p's records are handled.
func (g *group) handled(p *part) uint64 {
	for len(p.taken) > 0 && p.done[p.taken[0]] {
		delete(p.done, p.taken[0])
		p.taken = p.taken[1:]
	}
	if len(p.taken) > 0 {
		return p.taken[0] - 1
	}
	// The follower's position counts only for a partition it reads: a
	// leaving one's records past the last taken were skipped, not
	// handled.
	if p.gen == g.gen && !p.leaving {
		return max(p.from, g.passed)
	}
	return p.from
}

// open finds or creates the group's buckets.
func (g *group) open(ctx context.Context) error {
	replicas := 1
	if info := g.s.stream.CachedInfo(); info != nil && info.Config.Replicas > 0 {
		replicas = info.Config.Replicas
	}
	name := groupBucket(g.s.cfg.Stream, g.cfg.Name)
	kv, err := g.s.openBucket(ctx, jetstream.KeyValueConfig{Bucket: name, Storage: jetstream.FileStorage, Replicas: replicas,
		Description: "the " + g.cfg.Name + " group's partition count and progress"})
	if err != nil {
		return fmt.Errorf("consume %s: group bucket: %w", g.cfg.Name, err)
	}
	g.kv = kv
	locks, err := g.s.openBucket(ctx, jetstream.KeyValueConfig{Bucket: name + "_members", Storage: jetstream.FileStorage,
		Replicas: replicas, TTL: MemberTTLBeats * g.cfg.Heartbeat, Description: "the " + g.cfg.Name + " group's members and partition locks"})
	if err != nil {
		return fmt.Errorf("consume %s: members bucket: %w", g.cfg.Name, err)
	}
	g.locks = locks
	if err := g.waitWholeLogReaders(ctx); err != nil {
		return err
	}
	// The first member writes where the group starts, then the count;
	// the others wait for the count, so they read the start after it.
	if _, err := kv.Get(ctx, partitionsKey); errors.Is(err, jetstream.ErrKeyNotFound) {
		var floor uint64
		if c, err := g.s.stream.Consumer(ctx, g.cfg.Name); err == nil {
			floor = c.CachedInfo().AckFloor.Stream
		}
		if _, err := kv.Create(ctx, startKey, []byte(strconv.FormatUint(floor, 10))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("consume %s: %w", g.cfg.Name, err)
		}
		if _, err := kv.Create(ctx, partitionsKey, []byte(strconv.Itoa(g.cfg.Partitions))); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("consume %s: %w", g.cfg.Name, err)
		}
	}
	// In the group before looking at its count: another member starting
	// with another count then sees this one, rather than each changing
	// the count to its own in turn.
	if _, err := locks.Put(ctx, g.cfg.Member, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("consume %s: join the group: %w", g.cfg.Name, err)
	}
	if err := g.sameCountOrRecount(ctx); err != nil {
		_ = locks.Delete(context.WithoutCancel(ctx), g.cfg.Member)
		return err
	}
	if g.start, err = getUint(ctx, kv, startKey); err != nil {
		return fmt.Errorf("consume %s: %w", g.cfg.Name, err)
	}
	return nil
}

// sameCountOrRecount returns once the group's count is this member's,
// changing it when no other member is in the group.
func (g *group) sameCountOrRecount(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		e, err := g.kv.Get(ctx, partitionsKey)
		if err != nil {
			return fmt.Errorf("consume %s: read %s: %w", g.cfg.Name, partitionsKey, err)
		}
		n, err := strconv.ParseUint(string(e.Value()), 10, 64)
		if err != nil {
			return fmt.Errorf("consume %s: read %s: %q is not a number", g.cfg.Name, partitionsKey, e.Value())
		}
		if n == uint64(g.cfg.Partitions) {
			return nil
		}
		// Another member changing the count at the same moment is met
		// by reading it again.
		err = g.recount(ctx, n, e.Revision())
		switch {
		case errors.Is(err, errRegrouped) && attempt == regroupAttempts:
			return fmt.Errorf("consume %s: the group's partition count kept changing while this member started", g.cfg.Name)
		case errors.Is(err, errRegrouped):
		case err != nil:
			return err
		}
	}
}

// openBucket opens the bucket cfg names, creating it if it does not exist.
// Members starting together on a new cluster create it at the same moment,
// and JetStream may leave some of those requests unanswered: each attempt
// has attemptTimeout, and one left unanswered is made again (the next finds
// the bucket in place), waiting out the log as an append does.
func (s *JetStreamStore) openBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var down outage
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		kv, err := OpenBucket(actx, s.js, cfg)
		cancel()
		if err == nil {
			return kv, nil
		}
		if err := s.waitUnavailable(ctx, &down, err); err != nil {
			return nil, err
		}
	}
}

// OpenBucket opens the key-value bucket cfg names, creating it if it does
// not exist; of processes creating it at once, each gets the one made.
func OpenBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	return kv, err
}

// getUint reads a decimal number from the bucket.
func getUint(ctx context.Context, kv jetstream.KeyValue, key string) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	n, err := strconv.ParseUint(string(e.Value()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %q is not a number", key, e.Value())
	}
	return n, nil
}

// waitWholeLogReaders waits until no reader of the whole log under the
// group's name is active: one would decide on the group's journals a second
// time. While daemons are restarted one by one with partitions, those not
// yet restarted go on reading the whole log, and the group starts once the
// last has stopped (its pin lapses PinnedTTL after its last pull).
func (g *group) waitWholeLogReaders(ctx context.Context) error {
	for {
		c, err := g.s.stream.Consumer(ctx, g.cfg.Name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("consume %s: look for readers of the whole log: %w", g.cfg.Name, err)
		}
		pinned := false
		for _, pg := range c.CachedInfo().PriorityGroups {
			pinned = pinned || pg.PinnedClientID != ""
		}
		if !pinned {
			return nil
		}
		if g.cfg.Retrying != nil {
			g.cfg.Retrying(fmt.Errorf("consume %s: waiting for the reader of the whole log under this name to stop", g.cfg.Name))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(g.cfg.Heartbeat):
		}
	}
}

// run keeps the member in the group and reads its partitions until ctx
// ends; then it lets its partitions go and leaves the group, so that the
// others take them at once rather than once their locks lapse.
func (g *group) run(ctx context.Context) error {
	l := &lanes{ctx: ctx, cfg: g.cfg.ConsumerConfig, fn: g.fn, stopPull: func() {}, queues: map[string][]delivery{}}
	// Each follower run has a context of its own, cancelled when the next
	// starts; all end with ctx.
	var followers sync.WaitGroup
	stopFollower := func() {}
	defer func() {
		stopFollower()
		followers.Wait()
		l.wg.Wait()
		g.leave()
	}()
	t := time.NewTicker(g.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := g.sameCount(ctx); err != nil {
			return err
		}
		if g.beat(ctx) {
			// A partition taken: the follower starts again below its
			// progress. Records it took before are skipped by offset.
			stopFollower()
			followers.Wait()
			fctx, cancel := context.WithCancel(ctx)
			stopFollower = cancel
			g.mu.Lock()
			g.gen++
			from := g.passed + 1
			for _, p := range g.parts {
				p.gen = g.gen
				from = min(from, p.from+1)
			}
			g.passed = from - 1
			gen := g.gen
			g.mu.Unlock()
			followers.Go(func() { g.follow(fctx, l, gen, from) })
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// sameCount fails once the group's partition count is no longer this
// member's: another member changed it while this one was taken to have
// left (its heartbeats had stopped for their TTL), and this one's
// partitions are not the group's any more. A count that cannot be read
// is taken to be the same until it can.
func (g *group) sameCount(ctx context.Context) error {
	n, err := getUint(ctx, g.kv, partitionsKey)
	if err != nil || n == uint64(g.cfg.Partitions) {
		return nil
	}
	return fmt.Errorf("consume %s: the group's partition count changed to %d while this member read %d: start it again with the group's count", g.cfg.Name, n, g.cfg.Partitions)
}

// beat renews the member and its partitions' locks, saves their progress,
// lets go of those it no longer owns and takes those it newly owns. It
// reports whether it took one.
func (g *group) beat(ctx context.Context) (took bool) {
	g.mu.Lock()
	held := map[int]*part{}
	for n, p := range g.parts {
		held[n] = p
	}
	g.mu.Unlock()
	members, err := g.members(ctx)
	if err != nil {
		if g.cfg.Retrying != nil && ctx.Err() == nil {
			g.cfg.Retrying(fmt.Errorf("consume %s: group: %w", g.cfg.Name, err))
		}
		// Nothing moves while the group cannot be read; a lock that
		// lapses meanwhile and is taken by another member is found
		// lost when renewed.
		for n, p := range held {
			g.renew(ctx, n, p)
		}
		g.report()
		return false
	}
	want := owned(g.cfg.Member, members, g.cfg.Partitions)
	for n, p := range held {
		// One being let go of is let go of even if it is wanted again:
		// it is taken afresh once released, from its saved progress.
		if p.leaving || !slices.Contains(want, n) {
			g.letGo(ctx, n, p)
			continue
		}
		g.renew(ctx, n, p)
	}
	for _, n := range want {
		if held[n] == nil && g.take(ctx, n) {
			took = true
		}
	}
	g.report()
	return took
}

// members says this member is alive and returns the members.
func (g *group) members(ctx context.Context) ([]string, error) {
	if _, err := g.locks.Put(ctx, g.cfg.Member, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return nil, err
	}
	keys, err := g.locks.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		err = nil
	}
	var members []string
	for _, k := range keys {
		if !strings.Contains(k, ".") {
			members = append(members, k)
		}
	}
	return members, err
}

// take locks partition n and reads its saved progress; false when another
// member still holds it.
func (g *group) take(ctx context.Context, n int) bool {
	key := lockPrefix + strconv.Itoa(n)
	rev, err := g.locks.Create(ctx, key, []byte(g.cfg.Member))
	if errors.Is(err, jetstream.ErrKeyExists) {
		// This member's own lock, from before a restart, is taken back.
		e, gerr := g.locks.Get(ctx, key)
		if gerr != nil || string(e.Value()) != g.cfg.Member {
			return false
		}
		rev, err = g.locks.Update(ctx, key, []byte(g.cfg.Member), e.Revision())
	}
	if err != nil {
		return false
	}
	from, err := savedProgress(ctx, g.kv, g.cfg.Partitions, n, g.start)
	if err != nil {
		// Without its progress the partition is not read: it would
		// start from the group's start again.
		_ = g.locks.Delete(ctx, key, jetstream.LastRevision(rev))
		return false
	}
	g.mu.Lock()
	g.parts[n] = &part{rev: rev, from: from, saved: from, done: map[uint64]bool{}}
	g.mu.Unlock()
	return true
}

// renew renews partition n's lock and saves its progress. A lock another
// member took meanwhile (this one missed its heartbeats) is lost: the
// partition is dropped without saving.
func (g *group) renew(ctx context.Context, n int, p *part) {
	g.save(ctx, n, p)
	rev, err := g.locks.Update(ctx, lockPrefix+strconv.Itoa(n), []byte(g.cfg.Member), g.rev(p))
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil:
		p.rev = rev
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		p.lost, p.leaving = true, true
		delete(g.parts, n)
	}
}

func (g *group) rev(p *part) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return p.rev
}

// save writes partition n's progress when it moved.
func (g *group) save(ctx context.Context, n int, p *part) {
	g.mu.Lock()
	at := g.handled(p)
	moved := at > p.saved && !p.lost
	g.mu.Unlock()
	if !moved {
		return
	}
	if _, err := g.kv.Put(ctx, progressKey(g.cfg.Partitions, n), []byte(strconv.FormatUint(at, 10))); err == nil {
		g.mu.Lock()
		p.saved = max(p.saved, at)
		g.mu.Unlock()
	}
}

// letGo stops taking partition n's records and, once those taken are
// handled, saves its progress and unlocks it. Records still being handled
// keep it until a later heartbeat.
func (g *group) letGo(ctx context.Context, n int, p *part) {
	g.mu.Lock()
	p.leaving = true
	g.handled(p)
	pending := len(p.taken) > 0
	g.mu.Unlock()
	if pending {
		g.renew(ctx, n, p)
		return
	}
	g.save(ctx, n, p)
	_ = g.locks.Delete(ctx, lockPrefix+strconv.Itoa(n), jetstream.LastRevision(g.rev(p)))
	g.mu.Lock()
	delete(g.parts, n)
	g.mu.Unlock()
}

// report tells Owns of the partitions read, when they changed.
func (g *group) report() {
	g.mu.Lock()
	var reading []int
	for n, p := range g.parts {
		if !p.leaving {
			reading = append(reading, n)
		}
	}
	slices.Sort(reading)
	changed := !slices.Equal(reading, g.owned)
	if changed {
		g.owned = reading
	}
	g.mu.Unlock()
	if changed && g.cfg.Owns != nil {
		g.cfg.Owns(slices.Clone(reading))
	}
}

// leave lets every partition go, saving its progress, and takes the member
// out of the group.
func (g *group) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g.mu.Lock()
	held := map[int]*part{}
	for n, p := range g.parts {
		held[n] = p
	}
	g.mu.Unlock()
	for n, p := range held {
		g.save(ctx, n, p)
		_ = g.locks.Delete(ctx, lockPrefix+strconv.Itoa(n), jetstream.LastRevision(g.rev(p)))
	}
	_ = g.locks.Delete(ctx, g.cfg.Member)
}

// follow reads the log from offset from, handing the records of the
// partitions held to the lanes, until ctx ends; a read that fails is set up
// again after the last record taken.
func (g *group) follow(ctx context.Context, l *lanes, gen int, from uint64) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		next, err := g.followOnce(ctx, l, gen, from)
		if ctx.Err() != nil {
			return
		}
		if next > from {
			attempt = 0
		}
		from = next
		if g.cfg.Retrying != nil {
			g.cfg.Retrying(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// followOnce reads through one ordered consumer and returns the offset to
// read from next.
func (g *group) followOnce(ctx context.Context, l *lanes, gen int, from uint64) (uint64, error) {
	cons, err := g.s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{g.s.cfg.SubjectPrefix + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
	})
	if err != nil {
		return from, fmt.Errorf("consume %s: follow the log from %d: %w", g.cfg.Name, from, err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(max(g.cfg.MaxAckPending, 256)))
	if err != nil {
		return from, fmt.Errorf("consume %s: follow the log from %d: %w", g.cfg.Name, from, err)
	}
	defer msgs.Stop()
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	for {
		m, err := msgs.Next()
		if err != nil {
			return from, fmt.Errorf("consume %s: follow the log: %w", g.cfg.Name, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return from, fmt.Errorf("consume %s: follow the log: %w", g.cfg.Name, err)
		}
		off := meta.Sequence.Stream
		from = off + 1
		if !g.takeRecord(ctx, l, gen, m.Subject(), off, m.Data()) {
			return from, ctx.Err()
		}
	}
}

// takeRecord hands the record at offset off to its journal's lane when its
// partition is held and the record is not handled yet; it reports false
// when ctx ended first.
func (g *group) takeRecord(ctx context.Context, l *lanes, gen int, subject string, off uint64, data []byte) bool {
	n := partitionOf(subject, g.cfg.Partitions)
	// A record is marked taken only once it has a slot: a follower stopped
	// while it waits for one (another starts when a partition is taken)
	// leaves the record to the next, which starts below it. Marked first,
	// it stayed taken and never handed over, and its partition's progress
	// stopped there for as long as this member held it.
	g.mu.Lock()
	if !g.takes(n, gen, off) {
		g.pass(gen, off)
		g.mu.Unlock()
		return true
	}
	g.mu.Unlock()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	g.mu.Lock()
	// Checked again: the partition may have been let go of meanwhile.
	take := g.takes(n, gen, off)
	p := g.parts[n]
	if take {
		p.from = off
		p.taken = append(p.taken, off)
	}
	g.pass(gen, off)
	g.mu.Unlock()
	if !take {
		<-g.slots
		return true
	}
	finish := func() error {
		<-g.slots
		g.mu.Lock()
		p.done[off] = true
		g.mu.Unlock()
		return nil
	}
	r, err := Decode(data)
	if err != nil {
		// A record that cannot be decoded never will: reported and
		// passed over.
		if g.cfg.Skipped != nil {
			g.cfg.Skipped(off, err)
		}
		return finish() == nil
	}
	l.add(subject, delivery{entry: Entry{Offset: off, Record: r}, done: finish})
	return true
}

// pass notes that the follower of generation gen is past offset off: a
// record taken stays unhandled in its partition's taken list until its lane
// is done with it. A follower of an earlier generation moves nothing: the
// current one set the position it starts from. g.mu is held.
func (g *group) pass(gen int, off uint64) {
	if g.gen == gen {
		g.passed = max(g.passed, off)
	}
}

// takes reports whether the follower of generation gen takes the record at
// offset off of partition n. A partition taken since that follower started
// waits for the next, which starts at or below its progress: taken here,
// its records between its progress and this follower's position would be
// skipped. g.mu is held.
func (g *group) takes(n, gen int, off uint64) bool {
	p := g.parts[n]
	return g.gen == gen && p != nil && p.gen == gen && !p.leaving && off > p.from
}

// partitionOf is the partition of the journal with the given subject.
func partitionOf(subject string, partitions int) int {
	// FNV-1a, inline: it runs for every record of the log.
	h := uint64(14695981039346656037)
	for i := 0; i < len(subject); i++ {
		h ^= uint64(subject[i])
		h *= 1099511628211
	}
	return int(h % uint64(partitions))
}

// owned returns the partitions member gets among members: each member
// gets its share, within one of the others', and each partition, in order,
// goes to the member that scores highest on it among those still short of
// their share. Plain rendezvous hashing moves fewer partitions when the
// members change, but left a member of three with none of six partitions.
func owned(member string, members []string, partitions int) []int {
	if !slices.Contains(members, member) {
		return nil
	}
	members = slices.Sorted(slices.Values(members))
	share := make(map[string]int, len(members))
	for i, m := range members {
		share[m] = partitions / len(members)
		if i < partitions%len(members) {
			share[m]++
		}
	}
	var mine []int
	for p := range partitions {
		best, bestScore := "", uint64(0)
		for _, m := range members {
			if share[m] == 0 {
				continue
			}
			if score := rendezvousScore(m, p); best == "" || score > bestScore {
				best, bestScore = m, score
			}
		}
		share[best]--
		if best == member {
			mine = append(mine, p)
		}
	}
	return mine
}

// rendezvousScore is member's score on partition p. A cryptographic hash,
// since with FNV the scores of names that differ in one character came out
// in the same order on every partition, which gave one member all of them.
func rendezvousScore(member string, p int) uint64 {
	sum := sha256.Sum256([]byte(member + "/" + strconv.Itoa(p)))
	return binary.BigEndian.Uint64(sum[:8])
}
