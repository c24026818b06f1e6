// Package lineage owns the graph of executions and journal records and the
// lineage queries over it: the nodes and typed edges of the agent DAG
// (AGENT_HAS_RUN, RUN_HAS_EVENT, CALLS_TOOL, RETURNS_RESULT, FORKED_FROM,
// DERIVED_FROM, INTERRUPTS, SNAPSHOT_OF, RESTORES_TO), built from journals,
// and the questions asked of it: a run's ancestry and the fork tree below
// it, its history with the inherited prefix marked, tool call and result
// pairs, the snapshots of a working directory at a time, and the execution
// a record was first written in.
//
// It does not own the records nor their storage: it reads journals through
// Source, which eventstore's stores implement, so it works on a store and on
// anything else that yields records. Nothing here is persisted; the graph
// is derived again from the journals whenever it is asked for, and event
// nodes are named by their content-hashed event ids (eventstore.EventID).
package lineage
