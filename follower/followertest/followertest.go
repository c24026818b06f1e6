package followertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/follower"
)

// Subject is a sink under test with the calls the suite drives, as its
// package offers them.
type Subject interface {
	// Follow follows src until ctx ends (follower.Follower.Follow).
	Follow(ctx context.Context, src follower.Source) error
	// CatchUp catches up with the end of src (follower.Follower.CatchUp).
	CatchUp(ctx context.Context, src follower.Source) error
	// Rebuild rebuilds the sink beside itself and swaps the copy in
	// (follower.Follower.Rebuild).
	Rebuild(ctx context.Context, src follower.Source, progress func(done, total uint64)) error
	// Checkpoint is the sink's checkpoint.
	Checkpoint() (uint64, error)
	// Holds reports whether the sink holds what it makes of e, a
	// message.accepted record whose text is one word of its own.
	Holds(e eventstore.Entry) (bool, error)
	// Close closes the sink.
	Close() error
}

// Open opens the subject stored at path, creating it when missing. Its
// commits should take no more than about a hundred entries while catching
// up, so that the suite's logs of a few hundred records take several. The
// suite calls it in a child process too (see Run), where there is no
// testing.T.
type Open func(path string) (Subject, error)

// Run runs the contract suite against the subjects open opens. Call it
// from a top-level test that does nothing else: the crash case runs that
// test again in a child process (KillFollower), where Run follows the log
// until the child is killed.
func Run(t *testing.T, open Open) {
	ChildFollows(open)
	cases := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"CatchUpHoldsEveryRecord", testCatchUp},
		{"FollowShowsNewRecords", testFollow},
		{"UndecodableRecordIsPassedOver", testUndecodable},
		{"CrashBetweenCommits", testCrash},
		{"RebuildWhileFollowing", testRebuildWhileFollowing},
		{"SecondRebuildIsRefused", testSecondRebuild},
		{"CancelledRebuildLeavesTheSinkAlone", testCancelledRebuild},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// journals is how many journals the suite's logs interleave.
const journals = 6

// startLog starts an embedded server and returns it and the store on it.
func startLog(t *testing.T, opts ...func(*bus.Config)) (*bus.Bus, *eventstore.JetStreamStore) {
	t.Helper()
	b := fixtures.StartNATS(t, append([]func(*bus.Config){func(c *bus.Config) { c.Sync = bus.SyncInterval }}, opts...)...)
	return b, fixtures.OpenStore(t, b)
}

func refs() []eventstore.Reference {
	out := make([]eventstore.Reference, journals)
	for i := range out {
		out[i] = storetest.Ref(eventstore.OwnerTask, fmt.Sprint("t-", i), fmt.Sprintf("exec-%02d", i))
	}
	return out
}

// message is the i-th message of journal j, whose text is a word no other
// record has.
func message(j, i int) *eventstore.MessageAccepted {
	return storetest.Message(fmt.Sprintf("m%d-%d", j, i), fmt.Sprintf("w%dx%d", j, i))
}

// write creates the journals when from is 0 and appends perJournal
// messages to each, a message to each journal in turn, so that they
// interleave in the log.
func write(s *eventstore.JetStreamStore, rs []eventstore.Reference, from, perJournal int) error {
	ctx := context.Background()
	if from == 0 {
		for _, ref := range rs {
			if _, err := s.EnsureJournal(ctx, ref, storetest.Header("agent")); err != nil {
				return fmt.Errorf("ensure %s: %w", ref, err)
			}
		}
	}
	for i := from; i < from+perJournal; i++ {
		for j, ref := range rs {
			if _, err := s.Append(ctx, ref, message(j, i)); err != nil {
				return fmt.Errorf("append %d to %s: %w", i, ref, err)
			}
		}
	}
	return nil
}

// writtenLog starts a log and writes perJournal messages to each of the
// journals (refs) in it.
func writtenLog(t *testing.T, perJournal int) (*eventstore.JetStreamStore, []eventstore.Reference) {
	t.Helper()
	_, s := startLog(t)
	rs := refs()
	mustWrite(t, s, rs, 0, perJournal)
	return s, rs
}

func mustWrite(t *testing.T, s *eventstore.JetStreamStore, rs []eventstore.Reference, from, perJournal int) {
	t.Helper()
	if err := write(s, rs, from, perJournal); err != nil {
		t.Fatal(err)
	}
}

func lastOffset(t *testing.T, s *eventstore.JetStreamStore) uint64 {
	t.Helper()
	last, err := s.LastOffset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func openSubject(t *testing.T, open Open, path string) Subject {
	t.Helper()
	x, err := open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return x
}

func closeSubject(t *testing.T, x Subject) {
	t.Helper()
	if err := x.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func checkpoint(t *testing.T, x Subject) uint64 {
	t.Helper()
	cp, err := x.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// checkHolds checks that x holds every message of the log up to offset
// upTo, and returns how many it checked.
func checkHolds(t *testing.T, x Subject, s *eventstore.JetStreamStore, upTo uint64) int {
	t.Helper()
	n := 0
	for e, err := range s.ReadLog(context.Background(), 1) {
		var bad *eventstore.OffsetError
		switch {
		case errors.As(err, &bad):
			continue
		case err != nil:
			t.Fatal(err)
		}
		if e.Offset > upTo {
			break
		}
		if _, ok := e.Record.(*eventstore.MessageAccepted); !ok {
			continue
		}
		n++
		held, err := x.Holds(e)
		if err != nil {
			t.Fatalf("Holds(offset %d): %v", e.Offset, err)
		}
		if !held {
			t.Fatalf("the record at offset %d (up to %d) is not held", e.Offset, upTo)
		}
	}
	return n
}

// checkCaughtUp checks that x's checkpoint is the log's last offset and
// that x holds every message, and returns how many it checked.
func checkCaughtUp(t *testing.T, x Subject, s *eventstore.JetStreamStore, when string) int {
	t.Helper()
	last := lastOffset(t, s)
	if cp := checkpoint(t, x); cp != last {
		t.Fatalf("checkpoint %s = %d, want the log's last offset %d", when, cp, last)
	}
	return checkHolds(t, x, s, last)
}

// catchUp catches x up with the log and checks it (checkCaughtUp).
func catchUp(t *testing.T, x Subject, s *eventstore.JetStreamStore, when string) int {
	t.Helper()
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatalf("CatchUp %s: %v", when, err)
	}
	return checkCaughtUp(t, x, s, "after CatchUp "+when)
}

// waitCheckpoint polls until x's checkpoint reaches offset.
func waitCheckpoint(t *testing.T, x Subject, offset uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cp := checkpoint(t, x)
		if cp >= offset {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %d after a minute, want %d", cp, offset)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// follow runs x.Follow until the returned stop is called, which checks
// that Follow returned nil.
func follow(t *testing.T, x Subject, src follower.Source) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Follow(ctx, src) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Follow: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A sink caught up with the log holds every record up to the checkpoint,
// the log's last offset; reopened, it keeps its checkpoint and catches up
// with what was appended meanwhile.
func testCatchUp(t *testing.T, open Open) {
	s, rs := writtenLog(t, 40)
	path := filepath.Join(t.TempDir(), "sink")
	x := openSubject(t, open, path)
	if cp := checkpoint(t, x); cp != 0 {
		t.Fatalf("a new sink's checkpoint is %d, want 0", cp)
	}
	if n := catchUp(t, x, s, "of a new sink"); n != journals*40 {
		t.Fatalf("checked %d messages, want %d", n, journals*40)
	}
	cp := checkpoint(t, x)
	closeSubject(t, x)

	mustWrite(t, s, rs, 40, 10)
	x = openSubject(t, open, path)
	defer closeSubject(t, x)
	if got := checkpoint(t, x); got != cp {
		t.Fatalf("checkpoint after reopening = %d, want %d", got, cp)
	}
	catchUp(t, x, s, "after reopening")
}

// A following sink holds each record appended while it follows.
func testFollow(t *testing.T, open Open) {
	s, rs := writtenLog(t, 20)
	x := openSubject(t, open, filepath.Join(t.TempDir(), "sink"))
	defer closeSubject(t, x)
	stop := follow(t, x, s)
	waitCheckpoint(t, x, lastOffset(t, s))
	for round := range 3 {
		mustWrite(t, s, rs, 20+round*5, 5)
		waitCheckpoint(t, x, lastOffset(t, s))
	}
	stop()
	checkCaughtUp(t, x, s, "after following")
}

// A record no reader can decode, written past the store, is passed over:
// the checkpoint moves past it and the records after it are held.
func testUndecodable(t *testing.T, open Open) {
	b, s := startLog(t)
	rs := refs()
	mustWrite(t, s, rs, 0, 10)
	ack, err := b.JetStream().Publish(context.Background(), "journal.foreign.writer", []byte(`{"type":"message.accepted","bogus":1}`))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, rs, 10, 10)
	x := openSubject(t, open, filepath.Join(t.TempDir(), "sink"))
	defer closeSubject(t, x)
	catchUp(t, x, s, fmt.Sprintf("over the undecodable record at offset %d", ack.Sequence))
}

// A follower process is killed (SIGKILL) while records keep coming, so
// that it dies between commits or in one. The sink it leaves opens, keeps
// every commit the child saw, and holds every record up to its checkpoint:
// the checkpoint never runs ahead of the data. Caught up, it holds the
// whole log.
func testCrash(t *testing.T, open Open) {
	b, s := startLog(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	rs := refs()
	mustWrite(t, s, rs, 0, 30)
	start := lastOffset(t, s)
	path := filepath.Join(t.TempDir(), "sink")

	// Records keep coming while the child follows, a message to each
	// journal at a time, until it is killed.
	killed := make(chan struct{})
	appended := make(chan error, 1)
	go func() {
		for i := 30; ; i++ {
			select {
			case <-killed:
				appended <- nil
				return
			default:
			}
			if err := write(s, rs, i, 1); err != nil {
				appended <- err
				return
			}
		}
	}()
	reported := KillFollower(t, b, path, start+50)
	close(killed)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if reported <= start {
		t.Fatalf("the child reported checkpoint %d, want it past %d, following", reported, start)
	}

	x := openSubject(t, open, path)
	defer closeSubject(t, x)
	cp := checkpoint(t, x)
	t.Logf("killed the follower at checkpoint %d (reported %d) of %d", cp, reported, lastOffset(t, s))
	if cp < reported {
		t.Fatalf("checkpoint %d after the kill, below the %d the child saw committed", cp, reported)
	}
	checkHolds(t, x, s, cp)
	catchUp(t, x, s, "after the kill")
}

// A sink is rebuilt twice while it follows a log that grows meanwhile:
// progress ends at the log's end as it was, no copy is left beside the
// sink, and the follower goes on in the swapped-in copy, which holds
// every record.
func testRebuildWhileFollowing(t *testing.T, open Open) {
	s, rs := writtenLog(t, 60)
	path := filepath.Join(t.TempDir(), "sink")
	x := openSubject(t, open, path)
	defer closeSubject(t, x)
	stop := follow(t, x, s)
	waitCheckpoint(t, x, lastOffset(t, s))

	appended := make(chan error, 1)
	go func() { appended <- write(s, rs, 60, 40) }()
	for i := range 2 {
		var last [2]uint64
		err := x.Rebuild(context.Background(), s, func(done, total uint64) { last = [2]uint64{done, total} })
		if err != nil {
			t.Fatalf("Rebuild %d: %v", i+1, err)
		}
		if last[0] == 0 || last[0] != last[1] {
			t.Fatalf("Rebuild %d: progress ends at %d of %d, want done = total > 0", i+1, last[0], last[1])
		}
		checkNoCopy(t, path, fmt.Sprintf("after Rebuild %d", i+1))
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, x, lastOffset(t, s))
	stop()
	if n := checkCaughtUp(t, x, s, "after the rebuilds"); n != journals*100 {
		t.Fatalf("checked %d messages, want %d", n, journals*100)
	}
}

// checkNoCopy checks that no rebuild's copy is left at <path>.rebuild.
func checkNoCopy(t *testing.T, path, when string) {
	t.Helper()
	if _, err := os.Lstat(path + ".rebuild"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s, %s.rebuild: %v, want it gone", when, path, err)
	}
}

// A second Rebuild while one runs fails with follower.ErrRebuilding, and
// the first completes.
func testSecondRebuild(t *testing.T, open Open) {
	s, _ := writtenLog(t, 20)
	x := openSubject(t, open, filepath.Join(t.TempDir(), "sink"))
	defer closeSubject(t, x)
	started, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- x.Rebuild(context.Background(), s, func(uint64, uint64) {
			once.Do(func() {
				close(started)
				<-proceed
			})
		})
	}()
	<-started
	err := x.Rebuild(context.Background(), s, nil)
	close(proceed)
	if !errors.Is(err, follower.ErrRebuilding) {
		t.Fatalf("second Rebuild: got %v, want follower.ErrRebuilding", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first Rebuild: %v", err)
	}
	checkCaughtUp(t, x, s, "after the rebuild")
}

// A Rebuild whose ctx ends fails with ctx's error, removes its copy and
// leaves the sink as it was.
func testCancelledRebuild(t *testing.T, open Open) {
	s, _ := writtenLog(t, 20)
	path := filepath.Join(t.TempDir(), "sink")
	x := openSubject(t, open, path)
	defer closeSubject(t, x)
	catchUp(t, x, s, "before the rebuild")
	// Several commits' worth, so that the rebuild has more to do after
	// the cancel.
	mustWrite(t, s, refs(), 20, 100)
	before := checkpoint(t, x)
	ctx, cancel := context.WithCancel(context.Background())
	err := x.Rebuild(ctx, s, func(done, total uint64) {
		if done > 0 {
			cancel()
		}
	})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Rebuild: got %v, want context.Canceled", err)
	}
	checkNoCopy(t, path, "after the cancelled Rebuild")
	if cp := checkpoint(t, x); cp != before {
		t.Fatalf("checkpoint after the cancelled Rebuild = %d, want %d as before", cp, before)
	}
	checkHolds(t, x, s, before)
}
