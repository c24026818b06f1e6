package projbench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/projections"
)

// runner carries what the measurements of one Run share.
type runner struct {
	cfg Config
	// dir is the run's own scratch directory, removed by cleanup.
	dir string
	// logBytes is the encoded size of the catch-up log, once written.
	logBytes int64
}

func newRunner(cfg Config) (*runner, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("projbench: %w", err)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "projbench-")
	if err != nil {
		return nil, fmt.Errorf("projbench: %w", err)
	}
	return &runner{cfg: cfg, dir: dir}, nil
}

// cleanup removes the scratch directory; it is safe to call twice.
func (r *runner) cleanup() error {
	if r.dir == "" {
		return nil
	}
	err := os.RemoveAll(r.dir)
	r.dir = ""
	return err
}

// project writes the log, then measures catching a new projection up with
// it against the two raw baselines, and the append-to-visible latency of a
// projector following it.
func (r *runner) project(ctx context.Context) (_ []benchkit.Result, err error) {
	n, j := r.cfg.Records, r.cfg.Journals
	srv, err := startServer(ctx, filepath.Join(r.dir, "log"))
	if err != nil {
		return nil, err
	}
	defer benchkit.CloseInto(srv, &err)
	refs, err := writeLog(ctx, srv.store, "bench", n, j)
	if err != nil {
		return nil, fmt.Errorf("project/catch-up: %w", err)
	}
	// Catching up is what a daemon does when it starts: measure it on a
	// server that starts on the log, not on the one that just wrote it
	// and still holds its write buffers.
	if err := srv.restart(ctx); err != nil {
		return nil, fmt.Errorf("project/catch-up: %w", err)
	}
	if err := forgetDuplicates(ctx, srv.bus); err != nil {
		return nil, fmt.Errorf("project/catch-up: %w", err)
	}
	last, err := srv.store.LastOffset(ctx)
	if err != nil {
		return nil, fmt.Errorf("project/catch-up: %w", err)
	}
	if last != uint64(n) {
		return nil, fmt.Errorf("project/catch-up: the log ends at offset %d, want %d", last, n)
	}
	all := bus.SubjectPrefix + ".>"
	valuesPath := filepath.Join(r.dir, "values")
	if r.logBytes, err = saveValues(ctx, srv.bus.Stream(), all, n, valuesPath); err != nil {
		return nil, fmt.Errorf("raw/bbolt-put: %w", err)
	}

	var catchUp, read, put []time.Duration
	var peak resident
	var projection string
	sides := []func(round int) error{
		func(round int) error {
			path := filepath.Join(r.dir, fmt.Sprintf("catch-up-%d.db", round))
			d, rss, err := catchUpOnce(ctx, srv.store, path, uint64(n))
			if err != nil {
				return fmt.Errorf("project/catch-up: %w", err)
			}
			if projection != "" {
				if err := os.Remove(projection); err != nil {
					return err
				}
			}
			projection = path
			catchUp = append(catchUp, d)
			if rss.Total > peak.Total {
				peak = rss
			}
			return nil
		},
		func(int) error {
			d, err := benchkit.Timed(func() error { return readRaw(ctx, srv.bus.Stream(), all, n) })
			if err != nil {
				return fmt.Errorf("raw/read-log: %w", err)
			}
			read = append(read, d)
			return nil
		},
		func(round int) error {
			d, err := putRaw(valuesPath, filepath.Join(r.dir, fmt.Sprintf("raw-%d.db", round)), projections.DefaultBatchSize)
			if err != nil {
				return fmt.Errorf("raw/bbolt-put: %w", err)
			}
			put = append(put, d)
			return nil
		},
	}
	// Each round runs the three in another order, so that none always
	// meets a warmer cache or follows the same one.
	for round := range rounds {
		for i := range sides {
			if err := sides[(round+i)%len(sides)](round); err != nil {
				return nil, err
			}
		}
	}
	if err := os.Remove(valuesPath); err != nil {
		return nil, err
	}
	if err := checkProjection(ctx, srv.store, projection, refs); err != nil {
		return nil, fmt.Errorf("project/catch-up: %w", err)
	}

	readRes := throughput("raw/read-log", n, read,
		fmt.Sprintf("ordered consumer on %s pulling %d at a time, records not decoded", all, eventstore.FollowPull))
	putRes := throughput("raw/bbolt-put", n, put,
		fmt.Sprintf("the log's record bytes put into a new bbolt file keyed by offset, %d per transaction, fsync on commit", projections.DefaultBatchSize))
	res := throughput("project/catch-up", n, catchUp,
		fmt.Sprintf("DB.CatchUp of a new projection file from offset 1 (%d journals, %d written at a time), then Close, which syncs it; peak RSS is the process's, embedded server included, sampled every %s",
			j, min(activeJournals, j), rssInterval))
	slower := min(readRes.Rate, putRes.Rate)
	res.Checks = append(res.Checks, benchkit.Check{Metric: "ratio to slower raw", Value: res.Rate / slower, Target: catchUpTarget, Unit: "x"})
	if peak.Total > 0 {
		res.Method += fmt.Sprintf(" (at the peak: %d MiB anonymous, %d MiB mapped files)", peak.Anon>>20, peak.File>>20)
		res.Checks = append(res.Checks, benchkit.Check{Metric: "peak RSS", Value: float64(peak.Total) / (1 << 20), Target: rssTarget / (1 << 20), Unit: "MiB", Max: true})
	}
	results := []benchkit.Result{res, readRes, putRes}

	live, err := r.visible(ctx, srv.store, projection)
	if err != nil {
		return nil, fmt.Errorf("project/append-to-visible: %w", err)
	}
	return append(results, live), nil
}

// catchUpOnce projects the log into a new file at path and returns how long
// CatchUp and Close took and the peak resident memory meanwhile.
func catchUpOnce(ctx context.Context, src projections.Source, path string, last uint64) (time.Duration, resident, error) {
	db, err := projections.Open(projections.DefaultConfig(path))
	if err != nil {
		return 0, resident{}, err
	}
	// Start from the memory the process holds, not what the last
	// measurement left for the collector.
	runtime.GC()
	debug.FreeOSMemory()
	rss := sampleRSS()
	var cp uint64
	// Closing syncs the file, which the commits, visible at once, left to
	// it: the time counts until the projection is on disk, as the raw put's
	// does.
	d, err := benchkit.Timed(func() error {
		if err := db.CatchUp(ctx, src, nil); err != nil {
			return errors.Join(err, db.Close())
		}
		cp, err = db.Checkpoint()
		return errors.Join(err, db.Close())
	})
	peak := rss.Stop()
	if err == nil && cp != last {
		err = fmt.Errorf("checkpoint %d after catching up, want %d", cp, last)
	}
	return d, peak, err
}

// checkProjection compares a few executions of the projection at path with
// a replay of their journals.
func checkProjection(ctx context.Context, st *eventstore.JetStreamStore, path string, refs []eventstore.Reference) (err error) {
	db, err := projections.Open(projections.DefaultConfig(path))
	if err != nil {
		return err
	}
	defer benchkit.CloseInto(db, &err)
	for _, i := range []int{0, len(refs) / 2, len(refs) - 1} {
		ref := refs[i]
		var recs []eventstore.Record
		for e, err := range st.ReadJournal(ctx, ref, 1) {
			if err != nil {
				return err
			}
			recs = append(recs, e.Record)
		}
		want, err := execution.Replay(recs)
		if err != nil {
			return fmt.Errorf("replay %s: %w", ref, err)
		}
		got, err := db.Execution(ref.AgentExecutionID)
		if err != nil {
			return err
		}
		want.Timeline, got.Timeline = nil, nil
		if !reflect.DeepEqual(want, got) {
			return fmt.Errorf("execution %s differs from a replay of its journal", ref.AgentExecutionID)
		}
	}
	return nil
}

// readRaw reads n messages on filter with an ordered consumer pulling as
// many at a time as Follow does, without decoding them.
func readRaw(ctx context.Context, stream jetstream.Stream, filter string, n int) error {
	return scanRaw(ctx, stream, filter, n, func([]byte) error { return nil })
}

// scanRaw hands the data of the first n messages on filter to fn.
func scanRaw(ctx context.Context, stream jetstream.Stream, filter string, n int, fn func([]byte) error) error {
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return fmt.Errorf("ordered consumer on %s: %w", filter, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(eventstore.FollowPull))
	if err != nil {
		return fmt.Errorf("ordered consumer on %s: %w", filter, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for range n {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("read %s: %w", filter, err)
		}
		if err := fn(m.Data()); err != nil {
			return err
		}
	}
	return nil
}

// saveValues writes the data of the log's n records to path, each behind
// its length, and returns their total size.
func saveValues(ctx context.Context, stream jetstream.Stream, filter string, n int, path string) (total int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer benchkit.CloseInto(f, &err)
	w := bufio.NewWriterSize(f, 1<<20)
	var size [4]byte
	err = scanRaw(ctx, stream, filter, n, func(data []byte) error {
		binary.BigEndian.PutUint32(size[:], uint32(len(data)))
		total += int64(len(data))
		if _, err := w.Write(size[:]); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return 0, err
	}
	return total, w.Flush()
}

// loadValues reads what saveValues wrote.
func loadValues(path string) ([][]byte, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var values [][]byte
	for len(buf) > 0 {
		if len(buf) < 4 {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		size := int(binary.BigEndian.Uint32(buf))
		if len(buf) < 4+size {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		values = append(values, buf[4:4+size:4+size])
		buf = buf[4+size:]
	}
	return values, nil
}

// putRaw writes the values saved at valuesPath into a new bbolt file at
// path keyed by their offset, perTx to a transaction, and returns how long
// the puts and commits took. The file is removed afterwards.
func putRaw(valuesPath, path string, perTx int) (_ time.Duration, err error) {
	values, err := loadValues(valuesPath)
	if err != nil {
		return 0, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		return 0, err
	}
	defer func() {
		err = errors.Join(err, db.Close(), os.Remove(path))
	}()
	bucket := []byte("log")
	return benchkit.Timed(func() error {
		for from := 0; from < len(values); from += perTx {
			err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(bucket)
				if err != nil {
					return err
				}
				for i := from; i < min(from+perTx, len(values)); i++ {
					var k [8]byte
					binary.BigEndian.PutUint64(k[:], uint64(i+1))
					if err := b.Put(k[:], values[i]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// liveJournals is how many journals the latency measurements append to.
const liveJournals = 8

// visible follows the log with a projector on the projection file at path
// and appends LatencyRecords records at Rate records/s, timing each from
// just before its Append to when the projection shows it.
func (r *runner) visible(ctx context.Context, st *eventstore.JetStreamStore, path string) (_ benchkit.Result, err error) {
	db, err := projections.Open(projections.DefaultConfig(path))
	if err != nil {
		return benchkit.Result{}, err
	}
	defer benchkit.CloseInto(db, &err)
	pctx, cancel := context.WithCancel(ctx)
	projected := make(chan error, 1)
	go func() {
		err := db.Project(pctx, st)
		if err != nil {
			cancel() // the waits below would never end
		}
		projected <- err
	}()
	defer func() {
		cancel()
		err = errors.Join(err, <-projected)
	}()

	n := r.cfg.LatencyRecords
	gens := make([]*generator, liveJournals)
	for i := range gens {
		ref, err := reference("live", i)
		if err != nil {
			return benchkit.Result{}, err
		}
		gens[i] = newGenerator(ref, n/liveJournals+2)
		if _, err := st.EnsureJournal(ctx, ref, gens[i].header()); err != nil {
			return benchkit.Result{}, err
		}
	}
	last, err := st.LastOffset(ctx)
	if err != nil {
		return benchkit.Result{}, err
	}
	if err := db.WaitFor(pctx, last); err != nil {
		return benchkit.Result{}, err
	}
	// Each record becomes visible with a commit, whose fsync would
	// otherwise wait behind the writeback of the catch-up's files.
	benchkit.SettleDisk()

	type sent struct {
		offset uint64
		start  time.Time
	}
	appended := make(chan sent, n)
	latencies := make([]time.Duration, 0, n)
	watched := make(chan error, 1)
	go func() {
		for s := range appended {
			if err := db.WaitFor(pctx, s.offset); err != nil {
				watched <- err
				return
			}
			latencies = append(latencies, time.Since(s.start))
		}
		watched <- nil
	}()
	began := time.Now()
	err = paced(ctx, n, r.cfg.Rate, func(i int) error {
		g := gens[i%len(gens)]
		rec := g.next()
		start := time.Now()
		e, err := st.Append(ctx, g.ref, rec)
		if err != nil {
			return err
		}
		appended <- sent{e.Offset, start}
		return nil
	})
	close(appended)
	if werr := <-watched; err == nil {
		err = werr
	}
	if err != nil {
		return benchkit.Result{}, err
	}
	took := time.Since(began)
	res := benchkit.Result{Name: "project/append-to-visible", Count: n, Elapsed: took,
		P50: benchkit.Percentile(latencies, 0.50), P99: benchkit.Percentile(latencies, 0.99),
		Method: fmt.Sprintf("Append to %d journals paced at %d records/s (achieved %.0f) while Project follows the log; each record timed from before Append to DB.WaitFor of its offset, on a disk with nothing left to write back; the slowest took %s",
			liveJournals, r.cfg.Rate, benchkit.Rate(n, took), slices.Max(latencies).Round(10*time.Microsecond))}
	res.Checks = []benchkit.Check{{Metric: "p99", Value: ms(res.P99), Target: ms(visibleTarget), Unit: "ms", Max: true}}
	return res, nil
}

// paced calls fn for 0 … n-1, at most rate calls a second.
func paced(ctx context.Context, n, rate int, fn func(i int) error) error {
	t := time.NewTicker(max(time.Second/time.Duration(rate), time.Microsecond))
	defer t.Stop()
	for i := range n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := fn(i); err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
