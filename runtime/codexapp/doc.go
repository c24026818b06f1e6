// Package codexapp drives `codex app-server` and reads its output. Agent
// is Codex as the codex-app agent: one process for the whole execution,
// spoken to in JSON-RPC on its stdin and stdout, where the codex agent
// (runtime/codex) runs `codex exec` once per turn. Its Driver is the
// client side of that process: it runs the handshake (initialize,
// initialized, then thread/start, or thread/resume of a resumed thread,
// or thread/fork of a forked one through the turn it is forked at),
// starts each turn with turn/start, steers a running turn with
// turn/steer, interrupts it with turn/interrupt, and answers Codex's
// approval requests with the operator's answer.
//
// It is also the parser of the process's stdout. Each notification that
// `codex exec --json` has an event for is rendered as that event and read
// by the exec parser (runtime/codex), so that a message, a tool call, a
// plan, an error or the end of a turn become the same records whichever
// way Codex runs; what exec has no event for (usage as it grows, approval
// requests, interrupted turns, responses) this package reports on the
// same stream of ids. What each method becomes is in docs/agents.md
// ("Codex through app-server"); what every parser reports is in the agent
// package's doc.
//
// The runtime owns the process and its pipes; what the driver needs from
// it once the process runs (write to stdin, record a diagnostic) comes in
// an agent.Conversation.
package codexapp
