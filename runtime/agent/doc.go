// Package agent is the vocabulary every agent CLI's folder under runtime/
// speaks: the Agent an agent CLI is (its id, capabilities, shapes,
// messages, approvals, line types), the Driver of one launch and the
// Reader, a driver that is also the parser of its CLI's output; the Events
// a parser finds in a line; the Stream every parser builds its events on
// (deterministic ids, bounds, open tool calls, usage already counted,
// plans, diagnostics); and the extraction of a tool call's activity and
// target. The CLI folders (runtime/claude, runtime/codex, runtime/copilot,
// runtime/acp, runtime/generic) import it and never the runtime; the
// runtime registers each CLI's Agent once (runtime/agents.go).
//
// Beyond that, it owns the reading of provider output and nothing else. It does
// not append records (the runtime fills the base fields and appends), does
// not decide what an observation means for the execution (policy does), and
// keeps no raw output: the provider JSON itself is transport evidence, kept
// by the runtime's output recording, and becomes semantic truth only through
// the observations appended from it (spec 003, "transport evidence vs
// semantic truth").
//
// # What every parser reports
//
//   - Assistant text: an observation with a message signal (markdown),
//     confidence high, source provider-output. Blank text is skipped; text is
//     clipped to 64 KiB.
//   - Token usage: a usage signal, confidence high, where the output says
//     what the server counted: after each one the running totals are the
//     server's after some request, never a mix of counts it never had.
//     Increments add to the running totals and cumulative totals replace
//     them (UsageSignal); each section below says which a CLI's numbers are,
//     and what its output proves about them. An increment always carries its
//     total (input plus output), so that the running total stays the sum of
//     the two. The same numbers seen twice are never counted twice. Input
//     tokens include cached prompt tokens on every CLI.
//   - Tool calls: an activity update when a call starts, with the call
//     (toolCall: the CLI's call id, the tool, status started), the tool as
//     telemetry.activeToolName, capabilities.toolCallActive true, the
//     activity (editing for edit and write tools, reviewing for read, search
//     and fetch tools, executing for shell and other tools, planning for plan
//     tools) and the current target: the file for edit and read tools that
//     name one, the command for shell tools, the pattern or query (label) and
//     the directory (path) for search tools, the URL for fetch tools, the
//     tool otherwise. When a call ends, an activity update with the call's
//     status, succeeded or failed, and for a failed call what the CLI said
//     (error, clipped to 4 KiB) and a shell command's exit code. Ends are
//     matched to starts by the CLI's call id, in any order and with several
//     calls open at once; the update that ends the last open call also sets
//     toolCallActive false. At most MaxOpenToolCalls calls are tracked.
//   - Plans: the agent's todo list, whole, as a plan signal (items open,
//     in-progress, done or dropped), each time it changes; the same list
//     again is not reported.
//   - Requests the CLI waits on: a needs-input signal, confidence high, with
//     the CLI's request id (or a stable one derived from it when the journal
//     cannot keep it), a one-line question, the choices, the kind (question,
//     or permission with the answers allow, deny and, when the CLI can
//     remember the answer, allow-always) and the tool call with its input
//     (left out above 256 KiB, to keep the record within the store's limit).
//   - The CLI's session: an Event{Session} when the output first names the
//     session (and the CLI's version, when it says it), and again when either
//     changes. Every observation after it carries the session id in
//     native.sessionId, with the CLI's ids of its line (native.messageId,
//     turnId, requestId) where the output has them.
//   - The end of a turn: a completed_claim (the result text as summary,
//     clipped) or a failed_claim (the reason), confidence high, then an
//     Event{TurnEnd}.
//   - Anything not understood: a diagnostic observation, confidence
//     diagnostic, with the line clipped into rawText and the adapter, the
//     CLI's line type and the CLI's version when known. Codes: unknown-event
//     (a line, content block or item type the parser does not know, once per
//     type and parser: a CLI that prints a new kind of line prints it again
//     and again), malformed-line (not JSON, or truncated), line-too-long
//     (over MaxLineBytes), bad-event (a known type with fields of the wrong
//     shape), provider-error (an error the CLI reported that does not end the
//     turn: a retry, a rate limit, a warning), too-many-events (a line
//     produced more than MaxEventsPerLine events). Parse never panics and
//     never returns an error.
//   - Session metadata (init lines beyond the session id, MCP and skill
//     loading, turn and model call delimiters, streamed deltas of messages
//     that also arrive whole, reasoning, hooks) produces nothing: it is
//     transport evidence, and recording it as observations would only add
//     policy decisions that record nothing.
//
// Ids are deterministic (see Reader.Output), so parsing the same capture
// twice yields the same events. Each CLI's doc.go says what its lines
// become.
package agent
