// Package storebench measures the JetStream journal store against raw
// JetStream doing the same work, in one process and one run, so that the
// store's overhead is a ratio to a figure taken on the same machine a moment
// earlier rather than an absolute number that means nothing elsewhere.
//
// Run starts an embedded server per measurement in a fresh subdirectory of
// Config.Dir, measures each store operation and its raw counterpart back to
// back on that server, alternating which goes first over five rounds, and
// reports the median of each side:
//
//   - append/single-writer/sync-always: acknowledged Append of one journal
//     against JetStream publishes of the same encoded record, on a server
//     that syncs every write (the embedded default).
//   - disk/sync-per-record: no server, only the file system beneath the
//     durable lines: one writer syncing each record it appends to a file,
//     against one syncing each record it writes over bytes a file already
//     holds. A JetStream block grows with each record; SQLite's write-ahead
//     log, once grown, is written over from its start.
//   - append/single-writer/sync-interval: the same on a server that syncs on
//     an interval.
//   - append/<journals>-journals/<writers>-writers: concurrent appends
//     spread over many journals against concurrent publishes spread over as
//     many subjects.
//   - read/journal-<n>: ReadJournal of one journal interleaved with another
//     against an ordered consumer on the journal's subject that does not
//     decode.
//   - scan/log: ReadLog of the whole log against an ordered consumer on every
//     journal subject.
//
// The two durable append measurements (sync-always, and the concurrent one)
// also race an SQLite peer in the same rounds: an event table in WAL mode
// with synchronous=FULL, one row and one transaction per record, unique
// (journal, sequence), written with the same record bytes, so that "as fast
// as durable" has a yardstick. The report prints its records/s and the
// store's ratio to it. The peer's driver is pure Go and is imported by this
// package only.
//
// Some results carry a target ratio; the report says PASS or BELOW for them.
// Run returns its figures as a benchkit.Report: each result's store
// records/s and ratio to raw, the raw records/s and time, the peer's
// records/s and the targets as checks. The package owns the workloads and
// what goes into the report; the report's form and its text and JSON
// writers are benchkit's. It does not own the store, the server or the
// command line: cmd/agentjournal-bench and the Go
// benchmarks in this package's tests both call Run or the same workloads.
// Unlike other packages above eventstore, it talks to JetStream directly,
// because the raw baselines are JetStream with nothing on top.
package storebench
