// Package mcp is the MCP surface for agent signals: the same signals an
// agent can print as stdout markers (runtime/marker), offered as MCP
// tools, with the official Go SDK.
//
// # Tools
//
// One tool per surfaced signal type of the eventstore signal registry,
// named signal_<type>: signal_progress, signal_status, signal_needs_input,
// signal_blocked, signal_ready_for_verification, signal_completed_claim,
// signal_failed_claim, signal_message, signal_plan and signal_checkpoint. A tool's
// description and input schema are the registry's description and payload
// JSON Schema, and its arguments are the payload: signal_needs_input takes
// {"requestId": …, "question": …, "choices": […]}. Arguments are decoded
// strictly through the registry, exactly as a marker's payload is; an
// unknown field, a wrong type or a missing required field is a tool error
// (not a protocol error) naming the field and the arguments the tool
// accepts, and nothing is recorded.
//
// A valid call becomes an observation.recorded with source mcp, confidence
// authoritative and the signal, handed to a Recorder, which appends it and
// returns the policy's decision. The tool answers
// "recorded observation <id>: decision <action> (<reason>)", with
// {"observationId", "decision"} as structured content. Apart from the
// observation id and the source, the observation is the one the same
// signal makes as a stdout marker, so the policy decides the same.
//
// # Observation ids
//
// A client may give a call its own id in _meta (MetaCallID); the
// observation id is then "mcp-" and a hash of the execution, the tool and
// that call id, so a retried call is recorded once and answered with the
// first decision. Without one, the id hashes the execution, the tool, the
// canonical arguments, the MCP session (or, as the endpoint keeps none, the
// handler instance) and a call counter: every call is its own observation.
//
// # Transports
//
// NewHandler is the daemon's streamable HTTP endpoint. Every request
// carries the bearer token the daemon scoped to one execution; the token,
// never an argument, decides the journal a call records into, and a
// request without a valid token is answered 401 before MCP sees it.
// RunStdioBridge serves stdio MCP for agents that only speak stdio and
// forwards each call to that endpoint (the `agentjournal mcp` command).
//
// The package does not append records, decide on observations or issue
// tokens: the Recorder and the Authorizer, given by the daemon, do.
package mcp
