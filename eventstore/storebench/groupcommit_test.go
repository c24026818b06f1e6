package storebench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// batcher gathers messages published by concurrent callers and publishes
// whatever has gathered as one atomic batch while the previous batch is
// being committed: the group-commit candidate built on JetStream's atomic
// batch publish.
type batcher struct {
	js   jetstream.JetStream
	reqs chan batchReq
	// batches counts the batches committed.
	batches atomic.Int64
}

type batchReq struct {
	msg  *nats.Msg
	done chan error
}

func (b *batcher) run(ctx context.Context, limit int) {
	var group []batchReq
	for {
		group = group[:0]
		select {
		case <-ctx.Done():
			return
		case r := <-b.reqs:
			group = append(group, r)
		}
	gather:
		for len(group) < limit {
			select {
			case r := <-b.reqs:
				group = append(group, r)
			default:
				break gather
			}
		}
		err := b.commit(ctx, group)
		b.batches.Add(1)
		for _, r := range group {
			r.done <- err
		}
	}
}

func (b *batcher) commit(ctx context.Context, group []batchReq) error {
	id := rand.Text()
	nc := b.js.Conn()
	for i, r := range group {
		m := &nats.Msg{Subject: r.msg.Subject, Data: r.msg.Data, Header: nats.Header{}}
		for k, v := range r.msg.Header {
			m.Header[k] = v
		}
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == len(group)-1 {
			m.Header.Set("Nats-Batch-Commit", "1")
			_, err := b.js.PublishMsg(ctx, m)
			return err
		}
		if err := nc.PublishMsg(m); err != nil {
			return err
		}
	}
	return nil
}

func (b *batcher) publish(ctx context.Context, msg *nats.Msg) error {
	done := make(chan error, 1)
	select {
	case b.reqs <- batchReq{msg: msg, done: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-done
}

// TestGroupCommitCandidates measures, on one sync-always server and in one
// run, JetStream publishes acked one at a time against the same messages
// gathered from concurrent callers into atomic batches, against a stream in
// async persist mode, and against the journals spread over four streams,
// with 1, 16 and 64 writers. Set
// STOREBENCH_GROUP=1 to run it; STOREBENCH_GROUP_RECORDS sets the records
// per round (4000) and STOREBENCH_GROUP_COMMITTERS the batches committed at
// once (1).
func TestGroupCommitCandidates(t *testing.T) {
	if os.Getenv("STOREBENCH_GROUP") != "1" {
		t.Skip("set STOREBENCH_GROUP=1 to measure the group-commit candidates")
	}
	ctx := t.Context()
	srv, err := startServer(ctx, t.TempDir(), "group", bus.SyncAlways)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := &runner{summary: benchkit.Filler(DefaultPayloadBytes)}
	data, err := r.sample(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	js := srv.bus.JetStream()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        "ASYNC",
		Subjects:    []string{"async.>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  bus.DuplicateWindow,
		PersistMode: jetstream.AsyncPersistMode,
	}); err != nil {
		t.Fatal(err)
	}
	const shards = 4
	for k := range shards {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       fmt.Sprintf("SHARD%d", k),
			Subjects:   []string{fmt.Sprintf("shard%d.>", k)},
			Storage:    jetstream.FileStorage,
			Duplicates: bus.DuplicateWindow,
		}); err != nil {
			t.Fatal(err)
		}
	}
	n := 4000
	committers := 1
	if v, err := strconv.Atoi(os.Getenv("STOREBENCH_GROUP_COMMITTERS")); err == nil {
		committers = v
	}
	if v, err := strconv.Atoi(os.Getenv("STOREBENCH_GROUP_RECORDS")); err == nil {
		n = v
	}
	for _, writers := range []int{1, 16, 64} {
		msgsFor := func(prefix string, round int) []*nats.Msg {
			names := make([]string, DefaultJournals)
			for k := range names {
				names[k] = fmt.Sprintf("%s-%d-%d-%d", prefix, writers, round, k)
			}
			refs, err := references(names...)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := rawMessages(refs, n, data)
			if err != nil {
				t.Fatal(err)
			}
			return msgs
		}
		single := func(ctx context.Context, round int) (time.Duration, error) {
			msgs := msgsFor("single", round)
			return benchkit.Timed(func() error { return publish(ctx, js, msgs, writers) })
		}
		var batches, batched atomic.Int64
		grouped := func(ctx context.Context, round int) (time.Duration, error) {
			msgs := msgsFor("grouped", round)
			bctx, cancel := context.WithCancel(ctx)
			defer cancel()
			b := &batcher{js: js, reqs: make(chan batchReq, writers)}
			for range committers {
				go b.run(bctx, 1000)
			}
			d, err := benchkit.Timed(func() error {
				return spread(ctx, n, writers, func(ctx context.Context, i int) error { return b.publish(ctx, msgs[i]) })
			})
			batches.Add(b.batches.Load())
			batched.Add(int64(n))
			return d, err
		}
		// Async persist mode cannot be set on a stream that allows atomic
		// batches: a stream of its own takes the same messages.
		async := func(ctx context.Context, round int) (time.Duration, error) {
			msgs := msgsFor("async", round)
			for _, m := range msgs {
				m.Subject = "async." + strings.TrimPrefix(m.Subject, bus.SubjectPrefix+".")
			}
			return benchkit.Timed(func() error { return publish(ctx, js, msgs, writers) })
		}
		// Journals spread over several streams, each with its own files
		// and its own lock around store-and-fsync: concurrent fsyncs of
		// different files may share one commit of the file system's
		// journal.
		sharded := func(ctx context.Context, round int) (time.Duration, error) {
			msgs := msgsFor("sharded", round)
			for i, m := range msgs {
				m.Subject = fmt.Sprintf("shard%d.", i%len(msgs)%shards) + strings.TrimPrefix(m.Subject, bus.SubjectPrefix+".")
			}
			return benchkit.Timed(func() error { return publish(ctx, js, msgs, writers) })
		}
		times, err := compareAll(ctx, single, grouped, async, sharded)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d writers across %d subjects, sync always, median of %d rounds: one at a time %.0f msg/s, atomic batches %.0f msg/s (%.1f messages a batch), async persist mode %.0f msg/s, %d streams %.0f msg/s",
			writers, DefaultJournals, rounds,
			benchkit.Rate(n, benchkit.Median(times[0])), benchkit.Rate(n, benchkit.Median(times[1])),
			float64(batched.Load())/float64(batches.Load()), benchkit.Rate(n, benchkit.Median(times[2])),
			shards, benchkit.Rate(n, benchkit.Median(times[3])))
	}
}
