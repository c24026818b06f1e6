// Package follower applies the global log to a sink that keeps its own
// checkpoint: the read models (package projections) and the full-text
// index (package search) are its sinks.
//
// A Follower reads the log from the sink's checkpoint + 1, one read batch
// ahead of the one it applies, and hands the sink a transaction's worth of
// entries at a time through Sink.Commit. The sink writes what it makes of
// them and the new checkpoint in one atomic commit, so a crash at any
// point leaves the checkpoint at the last entry whose data is durable: no
// entry is applied twice and none is skipped. While the follower catches up
// with the end of the log as it was when following began, a commit takes
// up to Config.TxSize entries across several read batches; once caught up,
// it commits what has arrived, waiting up to Config.Linger for more only
// after a commit of Config.LingerAfter entries or more (a steady load),
// unless a WaitFor call is waiting. A record in the log that no reader can
// decode is logged and handed to the sink as an entry without a record,
// which moves the checkpoint past it.
//
// WaitFor returns once the checkpoint reaches an offset, so a caller that
// appended a record can wait until readers of the sink see it. Lag compares
// the checkpoint with the end of the log.
//
// Rebuild builds a fresh copy of a sink beside the live one (Rebuilder,
// Replacement): it opens the copy, catches it up with the log as it is when
// the rebuild starts, reporting progress as it applies each read batch, not
// only after each commit (one commit may take the whole log), then catches it
// up with the live sink's checkpoint, checks it when it can (Verifier) and
// lets the live sink swap it in, the live sink's writers held off, so that
// a Follower running on the live sink continues from the copy's
// checkpoint. A rebuild that fails discards the copy and leaves the live
// sink as it was.
//
// The package does not know what a sink stores or how: it sees
// eventstore.Entry values and checkpoints, never a bbolt transaction or an
// index batch. Package followertest holds the contract every sink passes.
package follower
