// Package acp drives agents that speak the Agent Client Protocol and reads
// their output. Agent is the acp agent (any command given after --) and
// each preset a known CLI in its ACP mode (copilot --acp, gemini --acp,
// claude-code-acp, codex-acp): a preset is one line in the presets table,
// and Agents lists them for the runtime's registry.
//
// The Driver is the client side of one agent process: it runs the
// handshake (initialize, then session/load of a resumed session when the
// agent offers it, else session/new), sends prompts as session/prompt,
// answers the agent's permission requests with the operator's answer, and
// is the parser of the process's stdout: each line goes to the client's
// JSON-RPC connection (the protocol package, which matches responses to
// requests) and is read once for the journal's events. session/update
// notifications become messages, tool calls, plans, usage and advertised
// commands; session/request_permission a needs-input permission request;
// file requests tool calls; a prompt's response the end of the turn. The
// history an agent replays after session/load is counted, not journaled
// again. What every parser reports is in the agent package's doc.
//
// The runtime owns the process and its pipes; what the driver needs from it
// once the process runs (write to stdin, record a diagnostic or a status,
// end a turn) comes in an agent.Conversation.
package acp
