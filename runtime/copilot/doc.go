// Package copilot drives GitHub Copilot CLI in prompt mode
// (`copilot -p --output-format json`) and reads its output. Agent is
// Copilot CLI as the runtime registers it; its Driver starts a process per
// turn, gives a new session its id (--session-id) and resumes it on later
// turns, names the session's events file, which holds the token usage
// (SideLog), and is the parser of each process's stdout and of that file.
// What every parser reports is in the agent package's doc; what Copilot
// CLI's lines become follows. testdata holds captures of real output.
//
// # Copilot CLI (--output-format json), tested with 1.0.102
//
// The parser also reads the lines of the session's events file
// ($COPILOT_HOME/session-state/<session id>/events.jsonl), fed to the same
// parser as they are written: the events it shares with stdout carry the
// same ids and are read once, and it alone has the session's start and the
// token usage.
//
//   - assistant.message: data.content is the message (the authoritative
//     text; deltas are skipped); a sub-agent's (parentToolCallId set) is not.
//     Every line's event id is native.messageId; data.turnId of messages and
//     tool events is native.turnId.
//   - tool.execution_start starts a call, tool.execution_complete ends it, by
//     toolCallId; toolRequests in assistant.message are not calls yet. A call
//     ends failed when success is false (error.message as error), or when a
//     shell command's shellExecution.exitCode is not 0, which Copilot reports
//     as a success (exit code, and the end of the output as error).
//     tool.execution_progress is the running tool.
//   - Plans: Copilot CLI 1.0.102 keeps the todo list in the session's SQLite
//     table todos, written with its sql tool; session.todos_changed does not
//     say the rows. The parser follows the table through the INSERT, UPDATE
//     and DELETE statements of sql calls that succeed (see todos.go),
//     and reports the table as the plan (pending is open, in_progress
//     in-progress, done done, blocked open). An update_todo call's todos (a
//     markdown checklist, "- [ ]" / "- [x]", or a list) is the plan too,
//     once the call succeeds.
//   - session.task_complete: completed_claim with data.summary, or
//     failed_claim when data.success is false.
//   - session.error: the reason of the run's failure when the result fails;
//     a provider-error when the session goes on (assistant.turn_start) or the
//     run succeeds; Flusher reports one still held when stdout ends.
//     assistant.turn_retry is a provider-error naming the failed model call
//     before it (model.call_failure: status and message). session.warning is
//     a provider-error.
//   - result: names the session (sessionId: stdout says it nowhere earlier,
//     and no version; --session-id sets it up front). failed_claim when
//     exitCode is not 0 (Copilot exits 0 even when the run failed), with the
//     session's error as reason; otherwise completed_claim with the last
//     assistant message, unless session.task_complete already claimed. Then
//     the turn end.
//   - From the events file: session.start names the session and the version
//     (copilotVersion); session.usage_record and session.compaction_complete
//     are usage (below); session.resume, session.shutdown, system.message,
//     permission.requested and permission.completed are nothing.
//   - Every other line type Agent.LineTypes lists (session setup, the echoed
//     prompt, turn and model call delimiters, reasoning, deltas, partial tool
//     output, sub-agent lifecycle) is nothing.
//   - Lines repeating an event id already read are dropped.
//   - Usage: Copilot CLI 1.0.102 prints no token counts on stdout. Its JSON
//     output leaves out assistant.usage (each model call's usage) and
//     session.shutdown (the totals), and assistant.message has no
//     outputTokens. The events file has a session.usage_record per model
//     call and, in session.compaction_complete, a compaction's usage: each is
//     an increment of the call's input (cached prompt tokens included: 120 +
//     30 + 5 = 155 in the text capture) and output, so that after each the
//     totals are the server's after that call. In the compact capture the
//     records and the compaction make 113601 / 206, what the server counted;
//     session.shutdown says 113600 / 205, without the compaction, and counts
//     every run of a resumed session: it is not read. assistant.usage, if
//     stdout carries it, has the usage_record's shape; the outputTokens of
//     assistant.message (1.0.36 printed them) are one call's output. Each
//     call is counted once: by apiCallId, which every chunk of a call's
//     response shares, else by its accounting sequence, else by messageId. In
//     the 1.0.36 captures two calls of 56 and 146 output tokens make 202.
//     result.usage counts premium requests, not tokens, and is not read.
package copilot
