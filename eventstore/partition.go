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
	// ConsumerConfig is each partition's reader. Its Name names the
	// group: the stream the partitions are kept in, their consumers and
	// the group's members. A partition has one active reader at a time,
	// whatever Exclusive says.
	ConsumerConfig
	// Partitions is how many parts the journals are hashed into, 2 to
	// MaxPartitions. It is fixed when the group is first created on a
	// log: every member must give the same count.
	Partitions int
	// Member is this reader's id in the group ([A-Za-z0-9_-]), the same
	// across restarts, so that a member that comes back gets the same
	// partitions as before.
	Member string
	// Heartbeat is how often the member tells the group it is alive and
	// looks at who else is; DefaultHeartbeat when 0. A member silent for
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
	// MemberTTLBeats is how many heartbeats a member may miss before the
	// others take its partitions over; a pinned consumer still keeps a
	// partition with its old member until that one stops pulling, so a
	// member that was only slow never shares a partition.
	MemberTTLBeats = 5
)

// partitionsKey is the group stream's metadata entry that holds its
// partition count.
const partitionsKey = "agentjournal_partitions"

// ConsumePartitioned delivers the log's records to fn like Consume, but
// shares the journals among the members of a group: the journals are
// hashed into cfg.Partitions partitions, each partition is read by one
// member at a time, and the members alive share the partitions evenly. A member that joins takes its
// share from the others, which finish the records they have taken first;
// a member that dies has its partitions taken over once it has been silent
// for MemberTTLBeats heartbeats. Each journal's records still reach fn one
// at a time, in log order, on one member at a time, except after a member
// dies: the records it had taken are delivered again AckWait after it took
// them, possibly after the journal's later ones.
//
// The partitions are a stream of their own that sources the journal
// stream, with a subject transform that prefixes each journal's subject
// with its partition; it keeps a record until its partition's reader
// acknowledges it. A group created on a log that a Consume reader of the
// same name already read starts where that reader's acknowledgements end.
func (s *JetStreamStore) ConsumePartitioned(ctx context.Context, cfg PartitionConfig, fn func(context.Context, Entry) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	cfg.Exclusive = true
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
	g := &group{s: s, cfg: cfg, fn: fn, runs: map[int]*partitionRun{}}
	if err := g.open(ctx); err != nil {
		return err
	}
	return g.run(ctx)
}

// group is one member's view of a partitioned group.
type group struct {
	s       *JetStreamStore
	cfg     PartitionConfig
	fn      func(context.Context, Entry) error
	stream  jetstream.Stream
	members jetstream.KeyValue

	runs  map[int]*partitionRun
	owned []int
}

// partitionRun is a partition this member reads or is letting go of.
type partitionRun struct {
	release chan struct{}
	done    chan struct{}
}

func (g *group) streamName() string { return groupStreamName(g.s.cfg.Stream, g.cfg.Name) }

// groupStreamName is the stream of the group name on the journal stream.
func groupStreamName(stream, name string) string { return stream + "_" + name }

func (g *group) bucketName() string { return g.streamName() + "_members" }

func (g *group) consumerName(p int) string { return g.cfg.Name + "-" + strconv.Itoa(p) }

func (g *group) subject(p int) string { return g.cfg.Name + "." + strconv.Itoa(p) + ".>" }

// open finds or creates the group's stream and members bucket.
func (g *group) open(ctx context.Context) error {
	replicas := 1
	if info := g.s.stream.CachedInfo(); info != nil && info.Config.Replicas > 0 {
		replicas = info.Config.Replicas
	}
	st, err := g.s.js.Stream(ctx, g.streamName())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = g.create(ctx, replicas)
	}
	if err != nil {
		return fmt.Errorf("consume %s: partitions stream: %w", g.cfg.Name, err)
	}
	if n := st.CachedInfo().Config.Metadata[partitionsKey]; n != strconv.Itoa(g.cfg.Partitions) {
		return fmt.Errorf("consume %s: the group has %s partitions on this log, not %d: every member must use the same count (to change it, stop them all and delete stream %s)",
			g.cfg.Name, n, g.cfg.Partitions, g.streamName())
	}
	g.stream = st
	kv, err := g.s.js.KeyValue(ctx, g.bucketName())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = g.s.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   g.bucketName(),
			TTL:      MemberTTLBeats * g.cfg.Heartbeat,
			Storage:  jetstream.FileStorage,
			Replicas: replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = g.s.js.KeyValue(ctx, g.bucketName())
		}
	}
	if err != nil {
		return fmt.Errorf("consume %s: members bucket: %w", g.cfg.Name, err)
	}
	g.members = kv
	return g.waitWholeLogReaders(ctx)
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

// create makes the group's stream: a work queue that sources the journal
// stream, each record's subject prefixed with the group's name and the
// journal's partition.
func (g *group) create(ctx context.Context, replicas int) (jetstream.Stream, error) {
	prefix := g.s.cfg.SubjectPrefix
	src := &jetstream.StreamSource{
		Name: g.s.cfg.Stream,
		SubjectTransforms: []jetstream.SubjectTransformConfig{{
			Source:      prefix + ".*.*.*",
			Destination: g.cfg.Name + ".{{partition(" + strconv.Itoa(g.cfg.Partitions) + ",1,2,3)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}",
		}},
	}
	// A reader that read the whole log under this name has decided up to
	// its acknowledgement floor: the group starts after it rather than
	// reading the log again from its start.
	if c, err := g.s.stream.Consumer(ctx, g.cfg.Name); err == nil {
		if floor := c.CachedInfo().AckFloor.Stream; floor > 0 {
			src.OptStartSeq = floor + 1
		}
	}
	st, err := g.s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        g.streamName(),
		Description: "journal records awaiting the " + g.cfg.Name + " group, by partition",
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Sources:     []*jetstream.StreamSource{src},
		Metadata:    map[string]string{partitionsKey: strconv.Itoa(g.cfg.Partitions)},
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		// Another member created it at the same moment.
		return g.s.js.Stream(ctx, g.streamName())
	}
	return st, err
}

// run keeps the member alive in the group and reads its partitions until
// ctx ends; then it leaves the group, so that the others take its
// partitions at once rather than after its heartbeats stop.
func (g *group) run(ctx context.Context) error {
	ttl := MemberTTLBeats * g.cfg.Heartbeat
	lastSeen := time.Now()
	t := time.NewTicker(g.cfg.Heartbeat)
	defer t.Stop()
	for {
		members, err := g.beat(ctx)
		switch {
		case err == nil:
			lastSeen = time.Now()
			g.own(ctx, owned(g.cfg.Member, members, g.cfg.Partitions))
		case ctx.Err() != nil:
		case time.Since(lastSeen) > ttl:
			// The others no longer see this member and share its
			// partitions among them: it lets them go.
			if g.cfg.Retrying != nil {
				g.cfg.Retrying(fmt.Errorf("consume %s: out of the group: %w", g.cfg.Name, err))
			}
			g.own(ctx, nil)
		}
		select {
		case <-ctx.Done():
			g.leave()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// beat tells the group this member is alive and returns the members.
func (g *group) beat(ctx context.Context) ([]string, error) {
	if _, err := g.members.Put(ctx, g.cfg.Member, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return nil, err
	}
	keys, err := g.members.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		err = nil
	}
	return keys, err
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

// own reads the partitions in want and lets go of the others.
func (g *group) own(ctx context.Context, want []int) {
	for p, r := range g.runs {
		select {
		case <-r.done:
			delete(g.runs, p)
			continue
		default:
		}
		if !slices.Contains(want, p) && !isClosed(r.release) {
			close(r.release)
		}
	}
	var reading []int
	for _, p := range want {
		r := g.runs[p]
		if r != nil && isClosed(r.release) {
			// Still handing the records it took over; read again once
			// it has (a later heartbeat).
			continue
		}
		if r == nil {
			r = &partitionRun{release: make(chan struct{}), done: make(chan struct{})}
			g.runs[p] = r
			go g.read(ctx, p, r)
		}
		reading = append(reading, p)
	}
	if !slices.Equal(reading, g.owned) {
		g.owned = reading
		if g.cfg.Owns != nil {
			g.cfg.Owns(slices.Clone(reading))
		}
	}
}

// read reads partition p until ctx ends or the partition is released, then
// unpins its consumer, so that the member that reads it next need not wait
// out PinnedTTL.
func (g *group) read(ctx context.Context, p int, r *partitionRun) {
	defer close(r.done)
	cc := consumerConfig(g.cfg.ConsumerConfig, g.consumerName(p), g.subject(p))
	_, _ = g.s.consume(ctx, r.release, g.stream, cc, g.cfg.ConsumerConfig, sourcedOffset, g.fn)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = g.stream.UnpinConsumer(uctx, cc.Durable, priorityGroup)
}

// leave takes this member out of the group and waits for its partitions'
// readers to stop.
func (g *group) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = g.members.Delete(ctx, g.cfg.Member)
	var wg sync.WaitGroup
	for _, r := range g.runs {
		wg.Go(func() { <-r.done })
	}
	wg.Wait()
}

// sourcedOffset is the journal stream offset of a record delivered from
// the group's stream, read from the header the server adds when sourcing
// ("<stream> <sequence> ..."); 0 when it is missing.
func sourcedOffset(m jetstream.Msg, _ *jetstream.MsgMetadata) uint64 {
	f := strings.Fields(m.Headers().Get(streamSourceHeader))
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// streamSourceHeader is the header the server adds to a sourced message.
const streamSourceHeader = "Nats-Stream-Source"
