// Package eventstore owns the AgentExecution journal: the record kinds
// and their strict JSON schemas (the journal record registry), the agent
// signal types (the signal registry), how each record reads for a person
// (Summary, the one line of a listing, and TimelineText, the sentence of a
// timeline or narrative, registered with each kind), journal references
// and deterministic ids, the reversible escaping that turns ids into
// subject tokens and file names, and the Store contract with its two
// implementations:
//
//   - JetStreamStore keeps every journal in one JetStream stream, one
//     subject per journal (journal.<ownerEntity>.<ownerId>.<agentExecutionId>).
//     A journal's sequence is gapless and assigned here; the stream sequence
//     is the record's offset in the global log.
//   - FileStore keeps the JSONL layout of the spec
//     (agent-journals/<escaped-id>.interaction.jsonl), used for export,
//     import and hosts without a log.
//
// Appends are optimistic: each carries the expected last subject sequence
// and a deterministic record id as its message id, so concurrent writers
// retry instead of interleaving and a retried append is not stored twice.
//
// Readers of the log: Follow (an ordered consumer, for projections),
// Consume (a durable consumer whose readers take turns) and
// ConsumePartitioned (members of a group sharing the journals by
// partition, each holding its partitions by locks in a key-value bucket
// with their saved progress). PublishDecided and SubscribeDecided carry
// notices between the processes on a log, never stored.
//
// The package does not interpret records: replay, policy and projections
// live in execution, policy and projections; terminal and HTML escaping of
// the texts are their callers'. It never hands out driver
// types; callers see Record, Reference and Entry.
package eventstore
