package eventstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// notes collects what Regrouped says.
type notes struct {
	mu  sync.Mutex
	got []string
}

func (n *notes) hear(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, s)
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

// stopAll stops members at once, so that none takes over another's
// partitions on its way out.
func stopAll(t *testing.T, ms ...*member) {
	t.Helper()
	for _, m := range ms {
		m.cancel()
	}
	for _, m := range ms {
		m.stop(t)
	}
}

// A group's members stopped and started again with another count: the
// first to start changes the count, and no record appended since is lost.
func TestPartitionedGroupChangesItsCountOnceEveryMemberStopped(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	first := appendJournals(t, s, 6, 0, 3)
	h := newHandled()
	ms := h.startGroup(t, b, partitionConfig(4), "m1", "m2")
	h.waitAll(t, first)
	stopAll(t, ms...)

	second := appendJournals(t, s, 6, 3, 3)
	var n notes
	cfg := partitionConfig(3)
	cfg.Regrouped = n.hear
	m3 := startMember(t, b, "m3", cfg, h.fn("m3"))
	waitPartitions(t, 3, m3)
	h.waitAfter(t, first, second)
	if got := n.all(); len(got) != 1 || !strings.Contains(got[0], "changed from 4 to 3") {
		t.Errorf("Regrouped heard %q, want one note of the change from 4 to 3", got)
	}
	// Each journal's records still come in order, repeats set aside.
	h.mu.Lock()
	for j, seqs := range h.seqs {
		var last uint64
		for _, seq := range seqs {
			if seq < last && seq > first[j] {
				t.Errorf("journal %s: seq %d after %d", j, seq, last)
			}
			last = max(last, seq)
		}
	}
	h.mu.Unlock()

	// Its member in the group, another count is refused, naming it.
	other := partitionConfig(5)
	other.Member = "m4"
	err := s.ConsumePartitioned(context.Background(), other, h.fn("m4"))
	if err == nil || !strings.Contains(err.Error(), "3 partitions on this log, not 5, and m3 still in it") {
		t.Errorf("another count beside a member: %v, want refused naming the member", err)
	}
	// The refused member left no entry that would hold partitions back.
	third := appendJournals(t, s, 6, 6, 1)
	h.waitAfter(t, second, third)
	if p := m3.partitions(); len(p) != 3 {
		t.Errorf("m3 reads partitions %v after a member was refused, want all 3", p)
	}
}

// A group whose members all stopped gives way to a reader of the whole log
// of its name, which reads on from the group's progress; the reader
// started again keeps its place.
func TestPartitionedGroupGivesWayToAWholeLogReader(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	first := appendJournals(t, s, 4, 0, 3)
	h := newHandled()
	m1 := h.startGroup(t, b, partitionConfig(4), "m1")[0]
	h.waitAll(t, first)
	stopAll(t, m1)

	second := appendJournals(t, s, 4, 3, 3)
	whole := newHandled()
	var n notes
	consume := func() (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- s.Consume(ctx, eventstore.ConsumerConfig{Name: "grp", Exclusive: true, PinnedTTL: 2 * time.Second, Regrouped: n.hear}, whole.fn("whole"))
		}()
		return cancel, done
	}
	cancel, done := consume()
	whole.waitAfter(t, first, second)
	whole.mu.Lock()
	for j, seqs := range whole.seqs {
		if seqs[0] <= first[j] {
			t.Errorf("journal %s: the whole-log reader was handed seq %d, which the group had handled", j, seqs[0])
		}
	}
	whole.mu.Unlock()
	if got := n.all(); len(got) != 1 || !strings.Contains(got[0], "group of 4 partitions gave way to one reader of the whole log") {
		t.Errorf("Regrouped heard %q, want one note of the group giving way", got)
	}
	if _, err := b.JetStream().KeyValue(context.Background(), b.StreamName()+"_grp"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("the group's bucket after the whole-log reader took over: %v, want it gone", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the whole-log reader stopped with %v", err)
	}

	// Started again, the reader keeps the consumer it made, and its
	// place.
	cancel, done = consume()
	defer func() {
		cancel()
		<-done
	}()
	third := appendJournals(t, s, 4, 6, 1)
	whole.waitAfter(t, second, third)
	select {
	case err := <-done:
		t.Fatalf("the whole-log reader started again stopped: %v", err)
	default:
	}
}

// A member whose group's count changed under it stops, saying so.
func TestPartitionedMemberStopsWhenItsCountChanges(t *testing.T) {
	b := fixtures.StartNATS(t)
	h := newHandled()
	m1 := h.startGroup(t, b, partitionConfig(4), "m1")[0]
	kv, err := b.JetStream().KeyValue(context.Background(), b.StreamName()+"_grp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "partitions", []byte("6")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-m1.done:
		m1.stopped = true
		if err == nil || !strings.Contains(err.Error(), "partition count changed to 6 while this member read 4") {
			t.Errorf("the member stopped with %v, want the count change named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the member went on reading after its group's count changed")
	}
}
