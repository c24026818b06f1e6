// Package provider turns the structured stdout of coding-agent CLIs into
// observations and activity updates: Claude Code `--output-format
// stream-json`, Codex `exec --json` and GitHub Copilot CLI `--output-format
// json`. New returns one Parser per launch; Parse takes one line and returns
// the Events found in it.
//
// The package owns the reading of provider output and nothing else. It does
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
//   - Token usage: a usage signal, confidence high. Increments add to the
//     running totals and cumulative totals replace them (UsageSignal); each
//     parser says below which of its numbers are which. The same numbers seen
//     twice are never counted twice. Input tokens include cached prompt
//     tokens on every provider.
//   - Tool calls: an activity update when a call starts, with the tool as
//     telemetry.activeToolName, capabilities.toolCallActive true, the
//     activity (editing for edit and write tools, reviewing for read and
//     search tools, executing for shell and other tools, planning for plan
//     tools) and the current target (the file for edit and read tools that
//     name one, the command for shell tools, the tool otherwise). Results are
//     matched to calls by the provider's tool call id, in any order and with
//     several calls open at once; when the last open call ends, an activity
//     update sets toolCallActive false. At most MaxOpenToolCalls calls are
//     tracked.
//   - The end of a run or turn: a completed_claim (the result text as
//     summary, clipped) or a failed_claim (the reason), confidence high.
//   - Anything not understood: a diagnostic observation, confidence
//     diagnostic, with the line clipped into rawText. Codes: unknown-event
//     (an event, content block or item type the parser does not know),
//     malformed-line (not JSON, or truncated), line-too-long (over
//     MaxLineBytes), bad-event (a known type with fields of the wrong shape),
//     provider-error (an error the provider reported that does not end the
//     run), too-many-events (a line produced more than MaxEventsPerLine
//     events). Parse never panics and never returns an error.
//   - Session metadata (init events, session and thread ids, MCP and skill
//     loading, turn delimiters, streamed deltas of messages that also arrive
//     whole, reasoning) produces nothing: it is transport evidence, and
//     recording it as observations would only add policy decisions that
//     record nothing.
//
// Ids are deterministic (see New), so parsing the same capture twice yields
// the same events.
//
// # Claude Code (stream-json)
//
//   - assistant: text blocks are messages; tool_use (and server_tool_use,
//     mcp_tool_use) blocks open calls; *_tool_result blocks close them;
//     thinking is skipped. Lines of a subagent (parent_tool_use_id set)
//     report tool calls only.
//   - user: tool_result blocks close calls by tool_use_id.
//   - result: usage (cumulative, below), then completed_claim with the
//     result text, or failed_claim when is_error is true or the subtype
//     starts with "error" (the result text, else the first of errors, else
//     the subtype, as reason).
//   - Lines repeating a uuid already read are dropped.
//   - Usage: message.usage of an assistant line is one step, an increment,
//     counted once per message id (the id repeats on every line of the step;
//     a later higher count adds only the difference). result.usage is the
//     total of the query it ends and is per query, not per process; the
//     parser sums the results of the launch and reports that sum as
//     cumulative. total_cost_usd and modelUsage are not read.
//
// # Codex (exec --json)
//
//   - item.completed agent_message: a message, remembered as the turn's
//     summary. reasoning and todo_list items are skipped.
//   - command_execution (command target), file_change (file target; the
//     first path, labelled "N files" when there are several), mcp_tool_call
//     and web_search items open a call on item.started and close it on
//     item.completed; an item that completes without starting opens and
//     closes at once. Item ids correlate.
//   - turn.completed: usage, then completed_claim with the turn's last
//     agent message. turn.failed: failed_claim with error.message. error
//     events and error items: provider-error diagnostics.
//   - Usage: turn.completed.usage is the thread's running total, reported
//     as cumulative (input_tokens already includes cached_input_tokens).
//
// # Copilot CLI (--output-format json)
//
//   - assistant.message: data.content is the message (the authoritative
//     text; assistant.message_delta is skipped); data.outputTokens is usage.
//   - tool.execution_start opens a call, tool.execution_complete closes it,
//     by toolCallId; toolRequests in assistant.message are not calls yet.
//   - session.task_complete: completed_claim with data.summary, or
//     failed_claim when data.success is false.
//   - result: failed_claim when exitCode is not 0 (Copilot exits 0 even
//     when the run failed); otherwise completed_claim with the last
//     assistant message, unless session.task_complete already claimed.
//   - Lines repeating an event id already read are dropped.
//   - Usage: outputTokens of each assistant.message is an increment of
//     output tokens, counted once per messageId. Copilot reports no input
//     tokens and no totals; result.usage counts premium requests, not tokens,
//     and is not read.
package provider
