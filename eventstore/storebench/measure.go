package storebench

import (
	"context"
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// runner carries what the measurements of one Run share.
type runner struct {
	cfg Config
	// summary is the variable part of every appended record.
	summary string
	// recordBytes is the encoded size of one appended record, once known.
	recordBytes int
}

// side is one side of a comparison: it prepares the round's data without
// timing it, does the measured work, and returns how long that took.
type side func(ctx context.Context, round int) (time.Duration, error)

// compare runs both sides rounds times on the same server, alternating
// which goes first so that neither always meets a warmer cache or a fuller
// store, and returns the times of each.
func compare(ctx context.Context, store, raw side) (storeTimes, rawTimes []time.Duration, err error) {
	times, err := compareAll(ctx, store, raw)
	if err != nil {
		return nil, nil, err
	}
	return times[0], times[1], nil
}

// compareAll runs every side rounds times, rotating which goes first each
// round, and returns the times of each side in the order given.
func compareAll(ctx context.Context, sides ...side) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(sides))
	for round := range rounds {
		for i := range len(sides) {
			k := (round + i) % len(sides)
			d, err := sides[k](ctx, round)
			if err != nil {
				return nil, err
			}
			times[k] = append(times[k], d)
		}
	}
	return times, nil
}

// sample appends one record to a journal of its own and returns the bytes
// the store wrote for it: the raw baselines publish exactly these. It also
// warms up the store's path and, with one publish, the raw one.
func (r *runner) sample(ctx context.Context, srv *server) ([]byte, error) {
	refs, err := ensureJournals(ctx, srv.store, "sample")
	if err != nil {
		return nil, err
	}
	rec := observation("sample", r.summary)
	if _, err := srv.store.Append(ctx, refs[0], rec); err != nil {
		return nil, fmt.Errorf("append sample record: %w", err)
	}
	data, err := eventstore.Encode(rec)
	if err != nil {
		return nil, fmt.Errorf("encode sample record: %w", err)
	}
	rawRefs, err := references("raw-sample")
	if err != nil {
		return nil, err
	}
	msgs, err := rawMessages(rawRefs, 1, data)
	if err != nil {
		return nil, err
	}
	if err := publish(ctx, srv.bus.JetStream(), msgs, 1); err != nil {
		return nil, err
	}
	r.recordBytes = len(data)
	return data, nil
}

// appendSingle compares one writer appending to one journal with one
// publisher on one subject, on a server with the given sync mode.
func (r *runner) appendSingle(ctx context.Context, sync bus.SyncMode) (_ []benchkit.Result, err error) {
	name := "append/single-writer/sync-" + string(sync)
	srv, err := startServer(ctx, r.cfg.Dir, "append-sync-"+string(sync), sync)
	if err != nil {
		return nil, err
	}
	defer benchkit.CloseInto(srv, &err)
	data, err := r.sample(ctx, srv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n := r.cfg.Records
	store := func(ctx context.Context, round int) (time.Duration, error) {
		refs, err := ensureJournals(ctx, srv.store, fmt.Sprintf("store-%d", round))
		if err != nil {
			return 0, err
		}
		recs := observations(n, r.summary)
		return benchkit.Timed(func() error { return appendRecords(ctx, srv.store, refs, recs, 1) })
	}
	raw := func(ctx context.Context, round int) (time.Duration, error) {
		refs, err := references(fmt.Sprintf("raw-%d", round))
		if err != nil {
			return 0, err
		}
		msgs, err := rawMessages(refs, n, data)
		if err != nil {
			return 0, err
		}
		return benchkit.Timed(func() error { return publish(ctx, srv.bus.JetStream(), msgs, 1) })
	}
	baseline := fmt.Sprintf("js.PublishMsg of the same %d-byte record with a Nats-Msg-Id to one subject, acked one at a time", len(data))
	if sync != bus.SyncAlways {
		st, rw, err := compare(ctx, store, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []benchkit.Result{result(name, n, appendTarget, baseline, st, rw)}, nil
	}
	// Durable appends also race the SQLite peer, as durable as they are.
	peer := peerSide(srv.dir, func(round int) ([]eventstore.Reference, error) {
		return references(fmt.Sprintf("peer-%d", round))
	}, n, data, 1)
	times, err := compareAll(ctx, store, raw, peer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res := result(name, n, appendTarget, baseline, times[0], times[1])
	return []benchkit.Result{withPeer(res, peerSingleTarget, times[2])}, nil
}

// appendSpread compares concurrent writers appending across many journals
// with as many publishers across as many subjects, on a server that syncs
// every write.
func (r *runner) appendSpread(ctx context.Context) (_ []benchkit.Result, err error) {
	j, w := r.cfg.Journals, r.cfg.Writers
	name := fmt.Sprintf("append/%d-journals/%d-writers", j, w)
	srv, err := startServer(ctx, r.cfg.Dir, "append-spread", bus.SyncAlways)
	if err != nil {
		return nil, err
	}
	defer benchkit.CloseInto(srv, &err)
	data, err := r.sample(ctx, srv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	names := func(prefix string, round int) []string {
		out := make([]string, j)
		for k := range out {
			out[k] = fmt.Sprintf("%s-%d-%d", prefix, round, k)
		}
		return out
	}
	n := r.cfg.Records
	store := func(ctx context.Context, round int) (time.Duration, error) {
		refs, err := ensureJournals(ctx, srv.store, names("store", round)...)
		if err != nil {
			return 0, err
		}
		recs := observations(n, r.summary)
		return benchkit.Timed(func() error { return appendRecords(ctx, srv.store, refs, recs, w) })
	}
	raw := func(ctx context.Context, round int) (time.Duration, error) {
		refs, err := references(names("raw", round)...)
		if err != nil {
			return 0, err
		}
		msgs, err := rawMessages(refs, n, data)
		if err != nil {
			return 0, err
		}
		return benchkit.Timed(func() error { return publish(ctx, srv.bus.JetStream(), msgs, w) })
	}
	peer := peerSide(srv.dir, func(round int) ([]eventstore.Reference, error) {
		return references(names("peer", round)...)
	}, n, data, w)
	times, err := compareAll(ctx, store, raw, peer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	baseline := fmt.Sprintf("js.PublishMsg from %d goroutines across %d subjects, acked one at a time, sync-always", w, j)
	res := result(name, n, 0, baseline, times[0], times[1])
	return []benchkit.Result{withPeer(res, peerSpreadTarget, times[2])}, nil
}

// read compares reading one journal, and then the whole log, with an
// ordered consumer on the same subjects that does not decode. The journal
// is interleaved record by record with a second one of the same length, so
// half of the log is filtered out of the journal read.
func (r *runner) read(ctx context.Context) (_ []benchkit.Result, err error) {
	n := r.cfg.ReadRecords
	readName := fmt.Sprintf("read/journal-%d", n)
	const scanName = "scan/log"
	// Reading does not depend on how writes are synced; syncing on an
	// interval only makes writing the data set quicker.
	srv, err := startServer(ctx, r.cfg.Dir, "read", bus.SyncInterval)
	if err != nil {
		return nil, err
	}
	defer benchkit.CloseInto(srv, &err)
	refs, err := writeInterleaved(ctx, srv.store, n, r.summary, "read-a", "read-b")
	if err != nil {
		return nil, fmt.Errorf("%s: write journals: %w", readName, err)
	}
	subj, err := refs[0].Subject(bus.SubjectPrefix)
	if err != nil {
		return nil, err
	}
	logLen := len(refs) * n

	counted := func(want int, read func(context.Context) (int, error)) side {
		return func(ctx context.Context, _ int) (time.Duration, error) {
			var got int
			d, err := benchkit.Timed(func() (err error) {
				got, err = read(ctx)
				return err
			})
			if err == nil && got != want {
				err = fmt.Errorf("read %d records, want %d", got, want)
			}
			return d, err
		}
	}
	stream := srv.bus.Stream()

	st, rw, err := compare(ctx,
		counted(n, func(ctx context.Context) (int, error) { return readJournal(ctx, srv.store, refs[0]) }),
		counted(n, func(ctx context.Context) (int, error) { return readRaw(ctx, stream, subj) }))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", readName, err)
	}
	results := []benchkit.Result{result(readName, n, readTarget, "ordered consumer on the journal's subject, default pull options, records not decoded", st, rw)}

	all := bus.SubjectPrefix + ".>"
	st, rw, err = compare(ctx,
		counted(logLen, func(ctx context.Context) (int, error) { return readLog(ctx, srv.store) }),
		counted(logLen, func(ctx context.Context) (int, error) { return readRaw(ctx, stream, all) }))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", scanName, err)
	}
	results = append(results, result(scanName, logLen, 0, "ordered consumer on "+all+", default pull options, records not decoded", st, rw))
	return results, nil
}
