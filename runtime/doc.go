// Package runtime runs AgentExecutions: it launches agent processes on
// pipes or a terminal, supervises them (directly or through a supervisor
// process that outlives the daemon), reads their output through the
// agent's driver, which is its parser, delivers messages, records what it observed
// and how each run ended, and carries out stop, fork, resume, checkpoints,
// workspace snapshots, time limits and command invocations.
//
// What it records goes to the journal store; what an execution is, and how
// its records fold into state, is the execution package's. The runtime
// replays a journal to decide (whether a run is still open, what a fork
// inherits) but never keeps a second copy of state.
//
// What it records of a running execution goes through that execution's
// hold (hold.go): while the log does not answer, the records wait there,
// in order and within a bound, and are journaled once it does; what the
// bound kept out is journaled as counted, not silently dropped.
//
// The runtime also owns the queue of queued and scheduled launches
// (dispatch.go): starting a queued run is the second half of Launch, the
// limit it keeps counts the runtime's live executions, and Stop must find
// a queued run as well as a running one. The dispatch context's shape and
// validation are the journal header's (eventstore).
//
// What one agent CLI is and how it is driven and read lives in its own
// folder (runtime/claude, runtime/codex, runtime/copilot, runtime/acp,
// runtime/generic), which imports only the shared vocabulary of
// runtime/agent; agents.go registers each once, and every list of agents
// (Adapters, Agents, Native, the docs) is read from that registry.
package runtime
