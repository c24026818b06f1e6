// Command agentjournal is the agentjournal binary: it keeps, for every
// AgentExecution, a durable journal of what the agent was asked, what was
// observed, what was decided and how its state moved.
//
// One binary holds the daemon (serve), the client commands that talk to a
// running daemon over its HTTP API (launch, fork, resume, send, observe,
// stop, queue, tail, logs, token, ls, show, timeline, search, sessions,
// narrative, graph, lineage, snapshots, checkpoint, cmd, ...), the bridges
// that put a daemon behind another protocol (mcp, acp), a daemon-less run
// of one agent (run), and the tools that work on a data directory directly
// (journal, log, replay, rebuild, demo). The list, in the order help shows
// it, is commandNames in usage.go; `agentjournal help` prints it with a line
// each, and docs/cli.md describes every command and flag.
//
// A command that works on a data directory itself (--data,
// $AGENTJOURNAL_DATA, $XDG_DATA_HOME/agentjournal or
// ~/.local/share/agentjournal) opens the embedded NATS server on it and
// closes it before it exits; only one process may hold a data directory at
// a time, and a second one fails at once and names the holder. A client
// command finds the running daemon through the daemon.json it wrote there.
//
// This package owns flags, output formats and exit codes (0 success, 1
// failure, 2 bad usage). Each command is a type with Run(ctx, args) and its
// own flag set, a thin layer over the packages that own the work: records
// and stores (eventstore), the bus, the runtime, the read models, the API
// client.
package main
