// Package execution owns the AgentExecution entity: its state (lifecycle,
// attention, semantic activity, the current input request, the ids it has
// processed, the latest activity and telemetry, journal metadata, protocol
// descriptor and timeline) and the pure replay fold that rebuilds that state
// from journal records.
//
// Replay depends on records alone: no clock, no process, no terminal. Live
// process data is laid over replayed state by callers and never flows back
// into it. Timeline items come from signals through the eventstore signal
// registry, the one place that says how each signal is shown.
//
// The runtime also owns the queue of queued and scheduled launches
// (dispatch.go): it lives here rather than in a package of its own because
// starting a queued run is the second half of Launch, the limit it keeps
// counts the runtime's live executions, and Stop must find a queued run
// as well as a running one. It does not own the dispatch context's shape
// and validation, which are the journal header's (eventstore).
package execution
