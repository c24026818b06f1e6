package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Source is the log a projection reads.
type Source = eventstore.LogSource

// errSourceEnded reports a Follow that stopped on its own.
var errSourceEnded = errors.New("the log source stopped yielding")

// Project follows src from the checkpoint + 1 and applies each batch, until
// ctx ends; it then returns nil. It returns an error when the source fails,
// a batch does not follow the checkpoint (ErrGap) or the file cannot be
// written; calling it again resumes from the checkpoint.
func (db *DB) Project(ctx context.Context, src Source) error {
	// The end of the log as it is now is what there is to catch up with
	// in full transactions; without it (the source failing, which Follow
	// reports) every transaction commits what has been read.
	end, _ := src.LastOffset(ctx)
	err := db.follow(ctx, src, 0, end, nil)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CatchUp is Project until the checkpoint reaches the last offset of src as
// read when CatchUp starts. progress, when not nil, is called after every
// batch with the offsets applied so far and the number to apply, both
// counted from the checkpoint CatchUp started at. A ctx that ends first is
// an error: the projection did not catch up.
func (db *DB) CatchUp(ctx context.Context, src Source, progress func(done, total uint64)) error {
	target, err := src.LastOffset(ctx)
	if err != nil {
		return fmt.Errorf("catch up %s: last offset: %w", db.cfg.Path, err)
	}
	return db.catchUpTo(ctx, src, target, progress)
}

func (db *DB) catchUpTo(ctx context.Context, src Source, target uint64, progress func(done, total uint64)) error {
	if target == 0 {
		return nil
	}
	return db.follow(ctx, src, target, target, progress)
}

// follow applies src from the checkpoint + 1, until ctx ends or, when
// target is not 0, the checkpoint reaches target. The log is read one
// batch ahead: while a batch is applied, the next one is fetched and
// decoded. Up to offset behind, which the log is known to hold, each
// transaction takes BatchSize entries; after it, a transaction commits
// what has been read, so that a follower shows each record at once.
func (db *DB) follow(ctx context.Context, src Source, target, behind uint64, progress func(done, total uint64)) error {
	db.useLineage(src)
	cp, err := db.Checkpoint()
	if err != nil {
		return err
	}
	if target > 0 && cp >= target {
		return nil
	}
	start := cp
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	batches := make(chan fetched, readAhead)
	wg.Go(func() { read(ctx, src, cp+1, readBatch(db.cfg.BatchSize), batches) })
	// held is a batch taken from the reader to extend a transaction that
	// could not take it (an error, or more entries than it had room for),
	// handled after the commit.
	var held *fetched
	// reached is the offset of the last entry handed to a transaction.
	var reached uint64
	wait := time.NewTimer(0)
	defer wait.Stop()
	// lingerUntil is until when a transaction that has caught up with the
	// log may wait for more of it: set under load (see lingerAbove), zero
	// otherwise.
	var lingerUntil time.Time
	linger := time.NewTimer(0)
	defer linger.Stop()
	// more extends a transaction with the next batch, when it has room for
	// it, so that a projection catching up writes BatchSize entries per
	// transaction while holding only a few read batches in memory. Up to
	// behind it waits for the batch, but not past maxSpanWait: the log may
	// lack records up to behind (deleted ones), and a transaction must not
	// hold back what it applied for long.
	more := func(room int) []eventstore.Entry {
		if target > 0 && reached >= target {
			return nil
		}
		var f fetched
		var ok bool
		if reached < behind {
			wait.Reset(maxSpanWait)
			select {
			case f, ok = <-batches:
			case <-wait.C:
			}
			wait.Stop()
		} else if left := time.Until(lingerUntil); left > 0 && !db.awaited() {
			// Nobody waits for this transaction's records to be
			// visible: it takes more of the log until one does.
			linger.Reset(left)
			select {
			case f, ok = <-batches:
			case <-linger.C:
			case <-db.arrived:
			}
			linger.Stop()
		} else {
			select {
			case f, ok = <-batches:
			default:
			}
		}
		switch {
		case !ok:
			return nil
		case f.err != nil || len(f.batch) > room:
			held = &f
			return nil
		}
		reached = lastOffset(f.batch, reached)
		return f.batch
	}
	for {
		var f fetched
		if held != nil {
			f, held = *held, nil
		} else {
			var ok bool
			if f, ok = <-batches; !ok {
				break
			}
		}
		var bad *eventstore.OffsetError
		switch {
		case errors.As(f.err, &bad):
			// A record no reader can decode (written past the store, or
			// by a newer version) must not freeze the read models: it
			// is logged and passed over, as the policy does. Replaying
			// its journal reports it too.
			db.log.Warn("skip undecodable record", logKeyOffset, bad.Offset, logKeyErr, bad.Err)
			if cp, err = db.skip(bad.Offset); err != nil {
				return err
			}
		case f.err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("project %s: follow log after offset %d: %w", db.cfg.Path, cp, f.err)
		default:
			reached = lastOffset(f.batch, reached)
			before := cp
			if cp, err = db.apply(f.batch, more); err != nil {
				return err
			}
			// A transaction of many records means records come faster
			// than transactions end: the next one waits a little for
			// more, and writes its pages once for all of them.
			lingerUntil = time.Time{}
			if cp-before >= lingerAbove {
				lingerUntil = time.Now().Add(maxLinger)
			}
		}
		if target == 0 {
			continue
		}
		if progress != nil {
			progress(min(cp, target)-start, target-start)
		}
		if cp >= target {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("project %s: after offset %d: %w", db.cfg.Path, cp, errSourceEnded)
}

// lastOffset is the offset of batch's last entry, or else.
func lastOffset(batch []eventstore.Entry, or uint64) uint64 {
	if len(batch) == 0 {
		return or
	}
	return batch[len(batch)-1].Offset
}

// readBatch is how many entries the log is read in, for transactions of
// txSize entries: a batch is held in memory from its read to its apply,
// a transaction's entries are not.
func readBatch(txSize int) int {
	return min(txSize, maxReadBatch)
}

// maxReadBatch bounds the read batches.
const maxReadBatch = 1000

// maxSpanWait is the longest a transaction waits for the next batch of the
// log to extend it. Catching up, batches follow each other within
// milliseconds; the bound only matters when the log lacks records it was
// known to hold, and then costs that transaction this much delay.
const maxSpanWait = time.Second

// lingerAbove and maxLinger set when a caught-up projection waits for more
// of the log before it commits: after a transaction of at least lingerAbove
// records, the next may wait for more until maxLinger after that one
// ended. Every commit rewrites each page it touched, and under a steady
// load of many journals a transaction of ten records touches nearly as many
// pages as one of a hundred, so fewer, larger commits leave more of the
// machine to the writers (bench --suite api: see docs/architecture.md). A
// projection that sees records one at a time never waits, and a WaitFor
// call ends the wait: someone reads, and wants the records visible. So the
// wait can be long enough for a hundred records or more under load without
// a reader paying for it: the API's reads and the answers that settle wait
// with WaitFor.
const lingerAbove = 8

// maxLinger is a variable for tests only, which make it long.
var maxLinger = 30 * time.Millisecond

// readAhead is how many batches the reader of follow may fetch before the
// applier takes them. One keeps reading and applying overlapped; more only
// hold more of the log in memory.
const readAhead = 1

// fetched is one batch read from the log, or the error that ended reading.
type fetched struct {
	batch []eventstore.Entry
	err   error
}

// read sends src's batches from offset from to out until the source stops,
// fails or ctx ends, and closes out. An undecodable record does not stop
// it.
func read(ctx context.Context, src Source, from uint64, maxBatch int, out chan<- fetched) {
	defer close(out)
	for batch, err := range src.Follow(ctx, from, maxBatch) {
		select {
		case out <- fetched{batch, err}:
		case <-ctx.Done():
			return
		}
		var bad *eventstore.OffsetError
		if err != nil && !errors.As(err, &bad) {
			return
		}
	}
}

// Lag is how far a projection is behind its log.
type Lag struct {
	// Checkpoint is the offset of the last record applied.
	Checkpoint uint64
	// LastOffset is the offset of the newest record in the log.
	LastOffset uint64
	// Records is the number of records not applied yet.
	Records uint64
}

// Lag compares the checkpoint with the end of src.
func (db *DB) Lag(ctx context.Context, src Source) (Lag, error) {
	cp, err := db.Checkpoint()
	if err != nil {
		return Lag{}, err
	}
	last, err := src.LastOffset(ctx)
	if err != nil {
		return Lag{}, fmt.Errorf("lag of %s: last offset: %w", db.cfg.Path, err)
	}
	l := Lag{Checkpoint: cp, LastOffset: last}
	if last > cp {
		l.Records = last - cp
	}
	return l, nil
}
