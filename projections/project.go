package projections

import (
	"context"
	"iter"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/follower"
)

// Source is the log a projection reads.
type Source = eventstore.LogSource

// Project follows src from the checkpoint + 1 and applies each batch, until
// ctx ends; it then returns nil. It returns an error when the source fails,
// a batch does not follow the checkpoint (ErrGap) or the file cannot be
// written; calling it again resumes from the checkpoint.
func (db *DB) Project(ctx context.Context, src Source) error {
	db.useLineage(src)
	return db.f.Follow(ctx, src)
}

// CatchUp is Project until the checkpoint reaches the last offset of src as
// read when CatchUp starts. progress, when not nil, is called after every
// batch with the offsets applied so far and the number to apply, both
// counted from the checkpoint CatchUp started at. A ctx that ends first is
// an error: the projection did not catch up.
func (db *DB) CatchUp(ctx context.Context, src Source, progress func(done, total uint64)) error {
	db.useLineage(src)
	return db.f.CatchUp(ctx, src, progress)
}

// followerConfig is how a DB's follower commits: transactions of
// BatchSize entries while catching up, and the linger below once caught
// up.
func followerConfig(cfg Config) follower.Config {
	return follower.Config{
		Name:        "projection " + cfg.Path,
		TxSize:      cfg.BatchSize,
		Linger:      maxLinger,
		LingerAfter: lingerAbove,
		Logger:      cfg.Logger,
	}
}

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

// maxLinger is a variable for tests only, which make it long; a DB takes
// its value when it opens.
var maxLinger = 30 * time.Millisecond

// Lag is how far a projection is behind its log.
type Lag = follower.Lag

// Lag compares the checkpoint with the end of src.
func (db *DB) Lag(ctx context.Context, src Source) (Lag, error) {
	return db.f.Lag(ctx, src)
}

// sink is a DB as its follower sees it: the live DB (liveSink) or one a
// rebuild builds (freshSink).
type sink struct{ db *DB }

var (
	_ follower.Rebuilder   = liveSink{}
	_ follower.Replacement = freshSink{}
	_ follower.Verifier    = freshSink{}
)

// Checkpoint implements follower.Sink.
func (s sink) Checkpoint() (uint64, error) { return s.db.Checkpoint() }

// Commit implements follower.Sink.
func (s sink) Commit(batches iter.Seq[[]eventstore.Entry]) (uint64, error) {
	return s.db.apply(batches)
}
