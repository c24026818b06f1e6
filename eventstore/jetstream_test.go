package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

func TestJetStreamStoreContract(t *testing.T) {
	buses := map[eventstore.Store]*bus.Bus{}
	var mu sync.Mutex
	storetest.Run(t, storetest.Factory{
		MaxRecordSize: eventstore.DefaultMaxRecordSize,
		Open: func(t *testing.T) eventstore.Store {
			b := fixtures.StartNATS(t)
			s := fixtures.OpenStore(t, b)
			mu.Lock()
			buses[s] = b
			mu.Unlock()
			return s
		},
		Reopen: func(t *testing.T, s eventstore.Store) eventstore.Store {
			mu.Lock()
			b := buses[s]
			mu.Unlock()
			s.Close()
			dir := b.DataDir()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b2 := fixtures.StartNATSAt(t, dir)
			return fixtures.OpenStore(t, b2)
		},
		Undecodable: func(t *testing.T, s eventstore.Store, ref eventstore.Reference) eventstore.Store {
			mu.Lock()
			b := buses[s]
			mu.Unlock()
			head, err := s.Head(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			subj, err := ref.Subject("journal")
			if err != nil {
				t.Fatal(err)
			}
			// A field no record has: strict decoding refuses it.
			bad := fmt.Sprintf(`{"type":"message.accepted","sequence":%d,"bogus":1}`, head.LastSequence+1)
			if _, err := b.JetStream().Publish(context.Background(), subj, []byte(bad)); err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}

// Two stores on two connections behave like two processes appending to one
// journal: the expected-last-subject-sequence check makes them retry, and
// the journal stays gapless.
func TestJetStreamTwoWritersOneJournal(t *testing.T) {
	b := fixtures.StartNATS(t)
	s1 := fixtures.OpenStore(t, b)
	s2, _ := fixtures.OpenOtherStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "two-writers")
	if _, err := s1.EnsureJournal(context.Background(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	// The second "process" ensures the same journal: idempotent.
	if _, err := s2.EnsureJournal(context.Background(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	const each = 300
	var wg sync.WaitGroup
	for i, s := range []eventstore.Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < each; n++ {
				if _, err := s.Append(context.Background(), ref, storetest.Message(fmt.Sprintf("s%d-%d", i, n), "x")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	entries := storetest.Collect(t, s1.ReadJournal(context.Background(), ref, 1))
	if len(entries) != 2*each+1 {
		t.Fatalf("%d records, want %d", len(entries), 2*each+1)
	}
	for i, e := range entries {
		if got := e.Record.RecordBase().Sequence; got != uint64(i+1) {
			t.Fatalf("record %d has sequence %d", i, got)
		}
	}
}

// lossyJetStream stores the message and then reports a timeout, as when the
// ack is lost on the way back.
type lossyJetStream struct {
	jetstream.JetStream
	mu   sync.Mutex
	lose int
}

func (l *lossyJetStream) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := l.JetStream.PublishMsg(ctx, m, opts...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.lose > 0 {
		l.lose--
		return nil, nats.ErrTimeout
	}
	return ack, err
}

func TestJetStreamLostAck(t *testing.T) {
	b := fixtures.StartNATS(t)
	lossy := &lossyJetStream{JetStream: b.JetStream()}
	s, err := eventstore.OpenJetStream(context.Background(), lossy, eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	other := fixtures.OpenStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "lost-ack")
	if _, err := s.EnsureJournal(context.Background(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}

	// The ack of m-1 is lost: the retry must find it stored, not store it twice.
	lossy.lose = 1
	m1 := storetest.Message("m-1", "x")
	e, err := s.Append(context.Background(), ref, m1)
	if err != nil {
		t.Fatalf("append with lost ack: %v", err)
	}
	if e.Record.RecordBase().Sequence != 2 {
		t.Fatalf("sequence %d, want 2", e.Record.RecordBase().Sequence)
	}
	// Its own record comes back, not a stored copy: a caller that tells a
	// duplicate by identity must not call this one a duplicate.
	if e.Record != eventstore.Record(m1) {
		t.Fatal("append after a lost ack returned a stored copy, want the caller's record (it was stored by this call)")
	}
	// A later append of the same id is a duplicate: the stored copy.
	again, err := s.Append(context.Background(), ref, storetest.Message("m-1", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Record == eventstore.Record(m1) || again.Offset != e.Offset {
		t.Fatalf("second append of m-1: offset %d (want %d) and a stored copy", again.Offset, e.Offset)
	}

	// Another writer appends right after the lost ack: the retry must still
	// recognise its own record behind the other writer's.
	lossy.lose = 1
	var wg sync.WaitGroup
	wg.Add(1)
	var appendErr error
	go func() {
		defer wg.Done()
		_, appendErr = s.Append(context.Background(), ref, storetest.Message("m-2", "x"))
	}()
	wg.Wait()
	if appendErr != nil {
		t.Fatal(appendErr)
	}
	if _, err := other.Append(context.Background(), ref, storetest.Message("m-3", "y")); err != nil {
		t.Fatal(err)
	}
	entries := storetest.Collect(t, other.ReadJournal(context.Background(), ref, 1))
	var ids []string
	for _, e := range entries {
		if m, ok := e.Record.(*eventstore.MessageAccepted); ok {
			ids = append(ids, m.MessageID)
		}
	}
	if fmt.Sprint(ids) != "[m-1 m-2 m-3]" {
		t.Fatalf("messages %v, want [m-1 m-2 m-3] each once", ids)
	}
}

func TestJetStreamLostAckBehindAnotherWriter(t *testing.T) {
	b := fixtures.StartNATS(t)
	other := fixtures.OpenStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "lost-ack-2")
	// hook publishes, then lets another writer append, then loses the ack.
	hook := &interleavingJetStream{JetStream: b.JetStream(), after: func() {
		if _, err := other.Append(context.Background(), ref, storetest.Message("theirs", "y")); err != nil {
			t.Error(err)
		}
	}}
	s, err := eventstore.OpenJetStream(context.Background(), hook, eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureJournal(context.Background(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	hook.armed = true
	e, err := s.Append(context.Background(), ref, storetest.Message("mine", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Record.(*eventstore.MessageAccepted).MessageID; got != "mine" || e.Record.RecordBase().Sequence != 2 {
		t.Fatalf("append returned %s seq %d, want mine seq 2", got, e.Record.RecordBase().Sequence)
	}
	h, err := s.Head(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if h.LastSequence != 3 {
		t.Fatalf("head %d, want 3 (header, mine, theirs: nothing twice)", h.LastSequence)
	}
}

type interleavingJetStream struct {
	jetstream.JetStream
	armed bool
	after func()
}

func (l *interleavingJetStream) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := l.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil && l.armed {
		l.armed = false
		l.after()
		return nil, nats.ErrTimeout
	}
	return ack, err
}

func TestJetStreamRefusesReferenceTricks(t *testing.T) {
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	for _, c := range []struct {
		name string
		ref  eventstore.Reference
	}{
		{"empty execution id", eventstore.Reference{OwnerEntity: eventstore.OwnerTask, OwnerID: "t"}},
		{"unknown owner", eventstore.Reference{OwnerEntity: "Planet", OwnerID: "t", AgentExecutionID: "x"}},
		{"forged journal id", eventstore.Reference{JournalID: "journal-000", OwnerEntity: eventstore.OwnerTask, OwnerID: "t", AgentExecutionID: "x"}},
	} {
		if _, err := s.EnsureJournal(context.Background(), c.ref, storetest.Header("a")); err == nil {
			t.Errorf("%s: EnsureJournal accepted %+v", c.name, c.ref)
		}
	}
	if n, err := s.Journals(context.Background()); err != nil || len(n) != 0 {
		t.Fatalf("journals after refused refs: %v %v, want none", n, err)
	}
	var notFound error
	for _, err := range s.ReadLog(context.Background(), 1) {
		notFound = err
	}
	if notFound != nil && !errors.Is(notFound, eventstore.ErrJournalNotFound) {
		t.Fatal(notFound)
	}
}

// An append that meets a log which cannot answer for a while (here its
// server restarts; in a cluster, a leader election) waits for it instead of
// failing, and stores its record once. Requests time out after 200ms here,
// so the outage outlasts many of them.
func TestAppendWaitsOutAnUnavailableLog(t *testing.T) {
	dir := t.TempDir()
	listen := func(c *bus.Config) { c.Listen = "127.0.0.1:0" }
	server, err := bus.Open(t.Context(), func() bus.Config {
		c := bus.DefaultConfig()
		c.DataDir = dir
		c.Secret = fixtures.NATSSecret
		listen(&c)
		return c
	}())
	if err != nil {
		t.Fatal(err)
	}
	url := server.ClientURL()
	ccfg := bus.DefaultConfig()
	ccfg.URL = url
	ccfg.Secret = fixtures.NATSSecret
	client, err := bus.Open(t.Context(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	js, err := jetstream.New(client.Conn(), jetstream.WithDefaultTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	s, err := eventstore.OpenJetStream(t.Context(), js, eventstore.JetStreamConfig{Stream: client.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := storetest.Ref(eventstore.OwnerTask, "t", "outage")
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, ref, storetest.Message("during-outage", "x"))
		appended <- err
	}()
	// The append is under way against a server that is gone.
	time.Sleep(2 * time.Second)
	select {
	case err := <-appended:
		t.Fatalf("Append returned while the log was down: %v", err)
	default:
	}
	cfg := bus.DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Secret = dir, strings.TrimPrefix(url, "nats://"), fixtures.NATSSecret
	restarted, err := bus.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if err := <-appended; err != nil {
		t.Fatalf("Append across the restart: %v", err)
	}
	var ids []string
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.Record.RecordBase().RecordID)
	}
	if len(ids) != 2 {
		t.Fatalf("journal holds %d records after the outage, want the header and the message once: %q", len(ids), ids)
	}
}

// An outage longer than UnavailableWait fails the append with an error that
// says so.
func TestAppendGivesUpOnALogThatStaysDown(t *testing.T) {
	server := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	ccfg := bus.DefaultConfig()
	ccfg.URL = server.ClientURL()
	ccfg.Secret = fixtures.NATSSecret
	client, err := bus.Open(t.Context(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := eventstore.OpenJetStream(t.Context(), client.JetStream(), eventstore.JetStreamConfig{Stream: client.StreamName(), UnavailableWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ref := storetest.Ref(eventstore.OwnerTask, "t", "down")
	if _, err := s.EnsureJournal(t.Context(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(t.Context(), ref, storetest.Message("never", "x"))
	if err == nil || !strings.Contains(err.Error(), "the log has not answered for 2s") {
		t.Fatalf("Append to a log that stays down: %v, want an error saying it has not answered for 2s", err)
	}
}

// TestReadJournalRefusesAGap: records lost from the log (here: a record
// with a later sequence published around the store, as a damaged block
// leaves it) make every read of the journal stop with an error naming the
// journal and the missing sequences, instead of handing on what is left.
func TestReadJournalRefusesAGap(t *testing.T) {
	b, s, ctx := startStore(t)
	ref := messageJournal(t, ctx, s, "gap", 2)
	// Sequence 6 where 4 and 5 should come first.
	fixtures.PublishPastTheEnd(t, b, ref, 6)
	for _, from := range []uint64{1, 2, 4} {
		var got []uint64
		var readErr error
		for e, err := range s.ReadJournal(ctx, ref, from) {
			if err != nil {
				readErr = err
				break
			}
			got = append(got, e.Record.RecordBase().Sequence)
		}
		var gap *eventstore.GapError
		if !errors.As(readErr, &gap) || !errors.Is(readErr, eventstore.ErrGap) || gap.From != 4 || gap.To != 5 ||
			!strings.Contains(readErr.Error(), ref.JournalID) || !strings.Contains(readErr.Error(), "sequences 4 to 5") {
			t.Fatalf("read from %d: records %v, error %v; want a gap error naming %s and sequences 4 to 5", from, got, readErr, ref.JournalID)
		}
		for i, seq := range got {
			if seq != max(from, 1)+uint64(i) {
				t.Fatalf("read from %d handed on %v before the gap", from, got)
			}
		}
	}
}

// A log whose newest records are gone while the stream still counts their
// sequences (what a damaged block file leaves) has its last offset at the
// newest record it holds, and a read of it ends there instead of waiting
// for records that will never come.
func TestJetStreamLastOffsetIsTheNewestRecordHeld(t *testing.T) {
	b := fixtures.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A stream of its own, which lets records be deleted as damage would.
	if _, err := b.JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: "LOSSY", Subjects: []string{"lossy.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: "LOSSY", SubjectPrefix: "lossy"})
	if err != nil {
		t.Fatal(err)
	}
	messageJournal(t, ctx, s, "lossy", 3)
	stream, err := b.JetStream().Stream(ctx, "LOSSY")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{3, 4} {
		if err := stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	if info, err := stream.Info(ctx); err != nil || info.State.LastSeq != 4 {
		t.Fatalf("stream state %+v, %v: want the deleted sequences still counted (last 4)", info, err)
	}
	last, err := s.LastOffset(ctx)
	if err != nil || last != 2 {
		t.Fatalf("LastOffset = %d, %v; want 2, the newest record held", last, err)
	}
	var offsets []uint64
	for e, err := range s.ReadLog(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, e.Offset)
	}
	if ctx.Err() != nil {
		t.Fatal("ReadLog waited for the lost records until the test's deadline")
	}
	if diff := cmp.Diff([]uint64{1, 2}, offsets); diff != "" {
		t.Errorf("ReadLog offsets (-want +got):\n%s", diff)
	}
}

// AppendAll appends records in order, as Appends would; a header, or a
// journal that is not there, is refused with nothing appended.
func TestAppendAll(t *testing.T) {
	ctx := t.Context()
	b := fixtures.StartNATS(t)
	s := fixtures.OpenStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "append-all")
	if _, err := s.AppendAll(ctx, ref, []eventstore.Record{storetest.Message("m0", "x")}); !errors.Is(err, eventstore.ErrJournalNotFound) {
		t.Fatalf("AppendAll to a journal that is not there = %v, want ErrJournalNotFound", err)
	}
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendAll(ctx, ref, []eventstore.Record{storetest.Message("m0", "x"), storetest.Header("b")}); err == nil {
		t.Fatal("AppendAll with a header succeeded")
	}
	recs := []eventstore.Record{storetest.Message("m1", "x"), storetest.Message("m2", "y"), storetest.Message("m3", "z")}
	entries, err := s.AppendAll(ctx, ref, recs)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, e := range entries {
		got = append(got, e.Record.RecordBase().Sequence)
	}
	if diff := cmp.Diff([]uint64{2, 3, 4}, got); diff != "" {
		t.Errorf("sequences of the records appended (-want +got):\n%s", diff)
	}
	var read []string
	for _, e := range storetest.Collect(t, s.ReadJournal(ctx, ref, 2)) {
		read = append(read, e.Record.RecordBase().RecordID)
	}
	var want []string
	for _, r := range recs {
		want = append(want, r.RecordBase().RecordID)
	}
	if diff := cmp.Diff(want, read); diff != "" {
		t.Errorf("records read back (-want +got):\n%s", diff)
	}
}
