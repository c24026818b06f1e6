// Package contract owns the ecosystem runtime contract's shapes (004) as
// they are read from an execution's journal: todos and approval
// checkpoints to start with. It does not own the records nor their
// storage; its functions are pure over an execution's records, in order,
// so the daemon, the CLI on a data dir and tests read the same answer.
// docs/contract.md says, field by field, which values are observed (copied
// from a record) and which are derived (a mapping).
package contract
