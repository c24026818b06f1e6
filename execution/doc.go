// Package execution is the AgentExecution entity: its state (lifecycle,
// attention, semantic activity, the current input request, the ids it has
// processed, the latest activity and telemetry, journal metadata, protocol
// descriptor and timeline), the pure replay fold that rebuilds that state
// from journal records, the attention table, fork and resume lineage
// (a fork's prefix is read through its link, never copied), interruptions
// and the slash commands an agent advertised.
//
// It imports the record model (eventstore) and nothing else of the
// project: no process, no terminal, no clock. Replay depends on records
// alone; live process data is laid over replayed state by callers and
// never flows back into it. Timeline items come from signals through the
// eventstore signal registry, the one place that says how each signal is
// shown.
//
// It does not run anything: the runtime package launches and supervises
// the processes whose journals this package reads, and the policy and the
// read models depend on this package, never on the runtime.
package execution
