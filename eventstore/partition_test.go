package eventstore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

// handled is what the members of a partitioned group were handed.
type handled struct {
	mu sync.Mutex
	// seqs are each journal's sequences in the order they were handed.
	seqs map[string][]uint64
	// by are the members each journal was handed to.
	by map[string]map[string]bool
	// busy counts, per journal, the members handling it right now.
	busy    map[string]int
	overlap []string
}

func newHandled() *handled {
	return &handled{seqs: map[string][]uint64{}, by: map[string]map[string]bool{}, busy: map[string]int{}}
}

func (h *handled) fn(member string) func(context.Context, eventstore.Entry) error {
	return func(_ context.Context, e eventstore.Entry) error {
		b := e.Record.RecordBase()
		h.mu.Lock()
		if h.busy[b.JournalID]++; h.busy[b.JournalID] > 1 {
			h.overlap = append(h.overlap, fmt.Sprintf("%s seq %d", b.JournalID, b.Sequence))
		}
		h.seqs[b.JournalID] = append(h.seqs[b.JournalID], b.Sequence)
		if h.by[b.JournalID] == nil {
			h.by[b.JournalID] = map[string]bool{}
		}
		h.by[b.JournalID][member] = true
		h.mu.Unlock()
		// Long enough for the members' handling to overlap.
		time.Sleep(time.Millisecond)
		h.mu.Lock()
		h.busy[b.JournalID]--
		h.mu.Unlock()
		return nil
	}
}

// waitAll waits until every journal in want has been handed sequences 1 to
// want[journal].
func (h *handled) waitAll(t *testing.T, want map[string]uint64) {
	t.Helper()
	h.waitAfter(t, nil, want)
}

// waitAfter waits until every journal in want has been handed the
// sequences after after[journal] up to want[journal].
func (h *handled) waitAfter(t *testing.T, after, want map[string]uint64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		h.mu.Lock()
		missing := ""
		for j, n := range want {
			for seq := after[j] + 1; seq <= n; seq++ {
				if !slices.Contains(h.seqs[j], seq) {
					missing = fmt.Sprintf("%s seq %d", j, seq)
					break
				}
			}
			if missing != "" {
				break
			}
		}
		h.mu.Unlock()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never handled", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// member is one reader of a partitioned group, on a connection of its own.
type member struct {
	name   string
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan error
	// stopped is set once done has been received from.
	stopped bool

	mu    sync.Mutex
	owned []int
}

func (m *member) partitions() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned)
}

func startMember(t *testing.T, b *bus.Bus, name string, cfg eventstore.PartitionConfig, fn func(context.Context, eventstore.Entry) error) *member {
	t.Helper()
	s, nc := fixtures.OpenOtherStore(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, nc: nc, cancel: cancel, done: make(chan error, 1)}
	cfg.Member = name
	cfg.Owns = func(p []int) {
		m.mu.Lock()
		m.owned = p
		m.mu.Unlock()
	}
	go func() { m.done <- s.ConsumePartitioned(ctx, cfg, fn) }()
	t.Cleanup(func() {
		m.stop(t)
		nc.Close()
	})
	return m
}

// stop leaves the group and waits for the member to return.
func (m *member) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	if m.stopped {
		return
	}
	select {
	case <-m.done:
		m.stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("member %s did not stop", m.name)
	}
}

// startGroup starts a member of each name on cfg, each handing its
// records to h, and waits until they share cfg's partitions.
func (h *handled) startGroup(t *testing.T, b *bus.Bus, cfg eventstore.PartitionConfig, names ...string) []*member {
	t.Helper()
	ms := make([]*member, len(names))
	for i, name := range names {
		ms[i] = startMember(t, b, name, cfg, h.fn(name))
	}
	waitPartitions(t, cfg.Partitions, ms...)
	return ms
}

func partitionConfig(partitions int) eventstore.PartitionConfig {
	return eventstore.PartitionConfig{
		ConsumerConfig: eventstore.ConsumerConfig{Name: "grp", AckWait: 2 * time.Second, PinnedTTL: 2 * time.Second, MaxAckPending: 64},
		Partitions:     partitions,
		Heartbeat:      100 * time.Millisecond,
	}
}

// appendJournals appends n activity records to each of journals journals,
// numbered from first, and returns each journal's last sequence.
func appendJournals(t *testing.T, s *eventstore.JetStreamStore, journals, first, n int) map[string]uint64 {
	t.Helper()
	last := map[string]uint64{}
	ctx := context.Background()
	for j := range journals {
		ref := storetest.Ref(eventstore.OwnerTask, "t", fmt.Sprintf("j%d", j))
		ref, err := s.EnsureJournal(ctx, ref, storetest.Header("a"))
		if err != nil {
			t.Fatal(err)
		}
		for i := first; i < first+n; i++ {
			e, err := s.Append(ctx, ref, storetest.Activity(ref.JournalID, i))
			if err != nil {
				t.Fatal(err)
			}
			last[ref.JournalID] = e.Record.RecordBase().Sequence
		}
	}
	return last
}

// waitPartitions returns once the members have settled: each reads the
// partitions it holds among them for good. Each of 0 to want-1 read once
// and every member reading is not enough: a member that has not yet seen
// the last to join can hold more than its share for a moment, and one of
// its partitions moves after.
func waitPartitions(t *testing.T, want int, members ...*member) {
	t.Helper()
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.name
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		settled := true
		var all []int
		for _, m := range members {
			p := m.partitions()
			slices.Sort(p)
			settled = settled && slices.Equal(p, eventstore.Owned(m.name, names, want))
			all = append(all, p...)
		}
		slices.Sort(all)
		if settled && len(all) == want && len(slices.Compact(all)) == want {
			return
		}
		for _, m := range members {
			// A member that returned will read nothing more: say why.
			select {
			case err := <-m.done:
				m.stopped = true
				t.Fatalf("member %s stopped while the group settled: %v", m.name, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("members read partitions %v, want each of 0 to %d once, each member its settled share", all, want-1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPartitionedGroupSharesTheJournals(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	h := newHandled()
	members := h.startGroup(t, b, partitionConfig(6), "m1", "m2", "m3")
	for _, m := range members {
		if len(m.partitions()) == 0 {
			t.Errorf("member %s reads no partition", m.name)
		}
	}

	last := appendJournals(t, s, 30, 0, 10)
	h.waitAll(t, last)

	h.mu.Lock()
	readers := map[string]bool{}
	for j, seqs := range h.seqs {
		if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("journal %s handed %v, want each sequence once, in order", j, seqs)
		}
		if len(h.by[j]) != 1 {
			t.Errorf("journal %s handed to %v, want one member", j, h.by[j])
		}
		for m := range h.by[j] {
			readers[m] = true
		}
	}
	if len(readers) < 2 {
		t.Errorf("journals handed to %v only, want them shared", readers)
	}
	if len(h.overlap) > 0 {
		t.Errorf("journals handled by two members at once: %v", h.overlap)
	}
	h.mu.Unlock()

	// A member that leaves hands its partitions to the others, which read
	// everything appended after.
	members[0].stop(t)
	waitPartitions(t, 6, members[1:]...)
	maps.Copy(last, appendJournals(t, s, 30, 10, 10))
	h.waitAll(t, last)
	h.mu.Lock()
	defer h.mu.Unlock()
	for j, seqs := range h.seqs {
		if !slices.IsSorted(seqs) {
			t.Errorf("journal %s handed %v, want them in order", j, seqs)
		}
	}
	if len(h.overlap) > 0 {
		t.Errorf("journals handled by two members at once: %v", h.overlap)
	}
}

func TestPartitionedGroupTakesOverADeadMember(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	h := newHandled()
	ms := h.startGroup(t, b, partitionConfig(4), "m1", "m2")
	m1, m2 := ms[0], ms[1]
	if len(m1.partitions()) == 0 || len(m2.partitions()) == 0 {
		t.Fatalf("partitions %v and %v, want both members reading", m1.partitions(), m2.partitions())
	}
	// Closing its connection kills m1 as the group sees it: it neither
	// leaves the group nor lets its consumers go.
	m1.nc.Close()
	last := appendJournals(t, s, 20, 0, 5)
	h.waitAll(t, last)
	if got := m2.partitions(); len(got) != 4 {
		t.Errorf("the survivor reads partitions %v, want all four", got)
	}
}

func TestPartitionedGroupStartsWhereItsConsumerStopped(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	before := appendJournals(t, s, 5, 0, 4)

	// The group's name was read to its end by a reader of the whole log.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(ctx, eventstore.ConsumerConfig{Name: "grp"}, func(context.Context, eventstore.Entry) error { return nil })
	}()
	// Stopped once every record is acknowledged.
	waitFor(t, func() bool {
		c, err := b.Stream().Consumer(context.Background(), "grp")
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream == info.Delivered.Stream && info.NumPending == 0 && info.Delivered.Stream > 0
	})
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the whole-log reader did not read the log")
	}

	appendJournals(t, s, 5, 4, 2)
	h := newHandled()
	startMember(t, b, "m1", partitionConfig(3), h.fn("m1"))
	h.waitAll(t, map[string]uint64{})
	deadline := time.Now().Add(30 * time.Second)
	for {
		h.mu.Lock()
		got := 0
		for j, seqs := range h.seqs {
			for _, seq := range seqs {
				if seq <= before[j] {
					t.Errorf("journal %s seq %d handed again, though the reader of the whole log had it", j, seq)
				}
			}
			got += len(seqs)
		}
		h.mu.Unlock()
		if got == 5*2 || t.Failed() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handed %d records, want the 10 appended since", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPartitionedGroupRefusesAnotherCount(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	h := newHandled()
	h.startGroup(t, b, partitionConfig(4), "m1")
	other := partitionConfig(8)
	other.Member = "m2"
	err := s.ConsumePartitioned(context.Background(), other, h.fn("m2"))
	if err == nil || !strings.Contains(err.Error(), "4 partitions on this log, not 8") {
		t.Errorf("a member with another count: %v, want an error naming both counts", err)
	}
	for _, bad := range []eventstore.PartitionConfig{
		func() eventstore.PartitionConfig { c := partitionConfig(1); c.Member = "x"; return c }(),
		func() eventstore.PartitionConfig { c := partitionConfig(4); c.Member = "a.b"; return c }(),
	} {
		if err := s.ConsumePartitioned(context.Background(), bad, h.fn("x")); err == nil {
			t.Errorf("%d partitions, member %q: accepted", bad.Partitions, bad.Member)
		}
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A group and a reader of the whole log under one name never read at once:
// the group waits for a running reader to stop, and a reader started once
// the group exists is refused.
func TestPartitionedGroupAndWholeLogReaderExcludeEachOther(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	whole := newHandled()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(ctx, eventstore.ConsumerConfig{Name: "grp", Exclusive: true, PinnedTTL: 2 * time.Second}, whole.fn("whole"))
	}()
	first := appendJournals(t, s, 4, 0, 3)
	whole.waitAll(t, first)

	group := newHandled()
	m := startMember(t, b, "m1", partitionConfig(4), group.fn("m1"))
	time.Sleep(time.Second)
	if p := m.partitions(); len(p) > 0 {
		t.Fatalf("the group reads partitions %v while the whole-log reader runs", p)
	}
	cancel()
	<-done
	waitPartitions(t, 4, m)
	second := appendJournals(t, s, 4, 3, 3)
	group.waitAfter(t, first, second)
	group.mu.Lock()
	for j, seqs := range group.seqs {
		if seqs[0] <= first[j] {
			t.Errorf("journal %s: the group was handed seq %d, which the whole-log reader had", j, seqs[0])
		}
	}
	group.mu.Unlock()

	err := s.Consume(context.Background(), eventstore.ConsumerConfig{Name: "grp", Exclusive: true}, whole.fn("whole"))
	if err == nil || !strings.Contains(err.Error(), "share it in 4 partitions") {
		t.Errorf("a whole-log reader beside the group: %v, want refused", err)
	}
}

// Members join and leave while records are appended: every record is
// handed to a member, none lost in a handover, and each journal's records
// in order once repeats are set aside.
func TestPartitionedGroupLosesNothingWhileMembersMove(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	h := newHandled()
	cfg := partitionConfig(8)
	ms := h.startGroup(t, b, cfg, "m1", "m2")
	m1, m2 := ms[0], ms[1]

	last := map[string]uint64{}
	var mu sync.Mutex
	stop := make(chan struct{})
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			part := appendJournals(t, s, 16, i, 1)
			mu.Lock()
			maps.Copy(last, part)
			mu.Unlock()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	m3 := startMember(t, b, "m3", cfg, h.fn("m3"))
	waitPartitions(t, 8, m1, m2, m3)
	time.Sleep(300 * time.Millisecond)
	m1.stop(t)
	waitPartitions(t, 8, m2, m3)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-appended

	mu.Lock()
	defer mu.Unlock()
	h.waitAll(t, last)
	h.mu.Lock()
	defer h.mu.Unlock()
	for j, seqs := range h.seqs {
		var first []uint64
		seen := map[uint64]bool{}
		for _, seq := range seqs {
			if !seen[seq] {
				seen[seq] = true
				first = append(first, seq)
			}
		}
		if !slices.IsSorted(first) {
			t.Errorf("journal %s first handed %v, want them in order", j, first)
		}
	}
}

// TestPartitionedRecordWaitingForASlotWhenAPartitionIsTaken: a member's
// follower waiting for a slot for a record when the member takes another
// partition, which starts a new follower, leaves the record to the new one.
// It is handled once the slot frees, not left marked taken and never
// handed over, with its partition's progress stuck below it.
func TestPartitionedRecordWaitingForASlotWhenAPartitionIsTaken(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	cfg := partitionConfig(2)
	cfg.MaxAckPending = 1
	mine := eventstore.Owned("m1", []string{"m1", "m2"}, 2)[0]
	ctx := context.Background()
	var ref eventstore.Reference
	for j := 0; ref.JournalID == ""; j++ {
		r, err := s.EnsureJournal(ctx, storetest.Ref(eventstore.OwnerTask, "t", fmt.Sprintf("j%d", j)), storetest.Header("a"))
		if err != nil {
			t.Fatal(err)
		}
		subj, err := r.Subject(bus.SubjectPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if eventstore.PartitionOf(subj, 2) == mine {
			ref = r
		}
	}
	for i := range 2 {
		if _, err := s.Append(ctx, ref, storetest.Activity(ref.JournalID, i)); err != nil {
			t.Fatal(err)
		}
	}

	// m1 holds the one slot with the journal's header until released;
	// its follower meanwhile waits for a slot for the next record.
	h := newHandled()
	handle := h.fn("m1")
	held, release := make(chan struct{}), make(chan struct{})
	m1 := startMember(t, b, "m1", cfg, func(ctx context.Context, e eventstore.Entry) error {
		if b := e.Record.RecordBase(); b.JournalID == ref.JournalID && b.Sequence == 1 {
			close(held)
			<-release
		}
		return handle(ctx, e)
	})
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("m1 was not handed the journal's header")
	}
	m2 := startMember(t, b, "m2", cfg, h.fn("m2"))
	waitPartitions(t, 2, m1, m2)
	// m2 leaves: m1 takes its partition back, and starts its follower
	// again while the old one waits for the slot.
	m2.stop(t)
	waitPartitions(t, 2, m1)
	close(release)
	h.waitAll(t, map[string]uint64{ref.JournalID: 3})
}

// TestPartitionedMembersStartTogetherOnANewCluster: members starting at the
// same moment on a new cluster each create the group's buckets, and
// JetStream may leave some of those requests unanswered. A member tries
// again instead of failing, so every member joins and the journals are
// shared from the start.
func TestPartitionedMembersStartTogetherOnANewCluster(t *testing.T) {
	buses := fixtures.StartNATSCluster(t, 3)
	h := newHandled()
	cfg := partitionConfig(6)
	var members []*member
	for i, b := range buses {
		name := fmt.Sprintf("m%d", i+1)
		members = append(members, startMember(t, b, name, cfg, h.fn(name)))
	}
	waitPartitions(t, 6, members...)
	last := appendJournals(t, fixtures.OpenStore(t, buses[0]), 12, 0, 5)
	h.waitAll(t, last)
}
