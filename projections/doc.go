// Package projections owns the read models that the daemon serves from a
// bbolt file: each AgentExecution's replayed state, its timeline items,
// summaries with secondary indexes for listing by owner, lifecycle and
// attention, and the checkpoint (the offset of the last log record applied).
//
// A DB is fed by the log through a Source (the JetStream store implements
// it) by a follower.Follower, whose sink it is: Project follows the log
// from the checkpoint + 1 and applies records in batches, each transaction
// writing the data and the new checkpoint together, so a crash never
// applies a record twice or skips one. While
// catching up, a transaction takes BatchSize entries across several read
// batches; once caught up, it commits what has arrived, waiting a few
// milliseconds for more only after a transaction of many records (a steady
// load, where fewer, larger commits rewrite fewer pages). Records are folded with execution.State.Apply; the projection never
// decides anything itself. A record that does not fit its execution (no
// header yet, another journal's record, out of order) is logged and skipped,
// so one bad record never stops the projector.
//
// File layout (format version 5), every uint64 big-endian so cursor order is
// numeric order:
//
//	meta          "format" -> 5, "checkpoint" -> last applied offset,
//	              "unsynced" -> boot id (while commits go unsynced)
//	executions    execution id -> State JSON (without the timeline and
//	              without the processed ids and decisions)
//	summaries     execution id -> Summary JSON plus the journal id
//	timeline      execution id -> nested bucket: sequence -> TimelineItem (codec.go);
//	              a tool call's item is rewritten in place, at its start's sequence,
//	              when its end arrives
//	processed     execution id -> nested bucket:
//	                message id \x00 m     -> sequence
//	                observation id \x00 o -> sequence
//	                decided id \x00 d     -> DecisionRef (codec.go)
//	by-owner      ownerEntity \x00 escaped ownerId \x00 execution id -> ""
//	by-lifecycle  lifecycle \x00 execution id -> ""
//	by-attention  attention \x00 execution id -> ""
//	by-session    session id \x00 execution id -> ""
//	contract      execution id -> nested bucket: the runtime contract's fold
//	              of the execution (contract.Run), from which the AgentRun,
//	              AgentSession, AgentTask and AgentCheckpoint shapes are built:
//	                "h"                    -> the run without its lists (JSON)
//	                part byte, u32 index   -> one todo (t), approval (a),
//	                                          artifact (f) or checkpoint (c)
//	              Items are written when they change, the head with every
//	              batch that touches the run.
//
// The processed ids grow with the journal, so the stored state, rewritten by
// every batch that touches its execution, leaves them out: a batch looks up
// only the ids its records carry, to fold duplicates exactly as a replay
// does, and adds the new ones. The DB keeps the states of recently touched
// executions decoded between batches, and reads the log one batch ahead of
// the one it applies. Execution returns the whole state, ids included.
//
// Commits are visible to readers without waiting for the disk (see
// Config.SyncCommits): before the first unsynced commit the file durably
// records the system's boot id, and Close syncs it and removes the record.
// A killed process leaves its writes in the page cache, so the file is
// trusted in the same boot; after the system restarts it may have lost any
// of them and is rebuilt from the log, which stays the source of truth. A
// file whose sync fails at Close is moved aside, so the next Open starts a
// new one.
//
// Open refuses a file it cannot trust with an error matching ErrCorrupt that
// names the file and the problem; OpenOrRebuild moves such a file aside
// (never deleting it) and builds a new one from the log. Rebuild builds a
// fresh file beside the live one and swaps it in while readers keep reading;
// a projector running on the live DB may keep running across the swap and
// continues from the new file's checkpoint.
//
// WaitFor returns once the checkpoint reaches an offset, so a caller that
// appended a record can wait until readers see it.
//
// The package does not append to the log, decide policy or publish live
// events, and it is the only package that imports bbolt (besides its
// benchmark, projbench, whose baseline is bbolt with nothing on top):
// callers see execution.State, Summary, TimelineItem and
// eventstore.Reference.
package projections
