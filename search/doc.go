// Package search owns the full-text index of executions' texts and its
// queries; it does not own the records (the log does) nor the read models
// (package projections).
//
// The index is a projection of the log like the read models, and is fed
// the same way, by a follower.Follower: Index.Follow reads the log from the
// index's own checkpoint + 1 and indexes each batch of records in one index
// batch that also writes the new checkpoint, so the documents and the
// checkpoint become durable together. Documents are
// keyed by (execution, sequence), so indexing a record again replaces its
// document: a crash between the index and its checkpoint can neither lose
// a document nor double one. Rebuild builds a fresh index beside the live
// one from offset 1 and swaps it in while queries keep reading.
//
// Indexed texts, one document per record that has any: prompts and other
// messages (message.accepted), agent signals (message text, needs_input
// question and choices, blocked reason and needs, plan items, progress,
// status and claims), tool targets (activity updates' current target:
// file paths, commands, URLs) and interruption reasons. Each document
// carries the execution id, its sequence, the record kind, the owner
// (entity and id), the agent (from the journal header, remembered in the
// index) and the record's time.
//
// Lifecycle is not indexed: it changes after the records are written, and
// re-indexing an execution's documents on each transition would cost more
// than it saves. A caller filters by lifecycle by passing the executions
// the read models list for it (Query.Executions).
//
// The full-text library (bleve) stays inside this package: callers see
// Query, Result and Hit.
package search
