// Package provider turns the structured stdout of coding-agent CLIs into
// observations and activity updates: Claude Code `--output-format
// stream-json`, Codex `exec --json` and GitHub Copilot CLI `--output-format
// json`. New returns one Parser per launch; Parse takes one line and returns
// the Events found in it. KnownLineTypes lists, per CLI, the line types its
// parser reads; the sections below say what each becomes.
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
// Ids are deterministic (see New), so parsing the same capture twice yields
// the same events.
//
// # Claude Code (stream-json), tested with 2.1.328
//
//   - system: init names the session (session_id) and the version
//     (claude_code_version); api_retry is a provider-error (the attempt, the
//     HTTP status, the error); every other subtype (status, compact_boundary,
//     hook_started, hook_response, task_started, task_notification,
//     background_tasks_changed, …) is metadata. Every line's session_id is
//     the session, every line's uuid native.messageId.
//   - assistant: text blocks are messages; tool_use (and server_tool_use,
//     mcp_tool_use) blocks start calls; *_tool_result blocks end them;
//     thinking is skipped. A TodoWrite call's todos (pending, in_progress,
//     completed) become the plan when the call succeeds. Lines of a subagent
//     (parent_tool_use_id set) report tool calls and usage only; the text
//     Claude Code writes in place of a reply it did not get (model
//     "<synthetic>") is not a message, the result's claim says it. A plain
//     AskUserQuestion tool_use is a tool call like any other.
//   - user: tool_result blocks end calls by tool_use_id; is_error fails the
//     call with the result's text as error, and "Exit code N" at its start
//     is the exit code.
//   - stream_event (--include-partial-messages): message_delta gives its
//     response's final usage (message_start its prompt counts, when
//     message_delta leaves them out); the rest is deltas of what arrives
//     whole.
//   - result: the usage not counted yet (below), then completed_claim with
//     the result text, or failed_claim when is_error is true or the subtype
//     starts with "error" (the result text, else the first of errors, else
//     the subtype, as reason), then the turn end.
//   - control_request (--permission-prompt-tool stdio), subtype can_use_tool:
//     a permission request, "Allow Bash: make test?" (the tool and its
//     command, file, URL, pattern or query), with allow-always when
//     permission_suggestions is not empty; for the tool AskUserQuestion a
//     question instead, its questions' texts as the question and their
//     options' labels as the choices. native.requestId is request_id. Any
//     other subtype is an unknown-event diagnostic naming it: the CLI waits
//     for an answer the parser cannot ask for.
//   - tool_progress: an activity update with the running tool only.
//   - rate_limit_event: nothing while rate_limit_info.status is "allowed";
//     otherwise (allowed_warning, rejected) a provider-error naming the
//     status, the limit and when it resets.
//   - auth_status: a provider-error when it carries an error.
//   - control_response, control_cancel_request, keep_alive,
//     tool_use_summary, prompt_suggestion: nothing.
//   - Lines repeating a uuid already read are dropped.
//   - Usage: every usage signal brings the totals to what the server had
//     counted after some request. Claude Code prints each content block as
//     soon as it ends, before the response's final usage: an assistant
//     line's message.usage is the response's start (prompt counts final,
//     output a placeholder, 1 in every capture), so assistant lines count
//     nothing. A message_delta (partial messages) counts its response, prompt
//     and output, once per message id. A result's
//     model_usage_since_last_result is every request since the previous
//     result, per model, subagents and the CLI's own requests (a /compact
//     summary) included; the parser adds what it says beyond what it counted
//     since the previous result, so that after each result the totals are
//     what the server counted. In the captures: a background subagent's
//     10000/1000 tokens are in no result.usage (1100/110) but in
//     model_usage_since_last_result (11101/1111), and once its line shows,
//     message_delta lines wait for the result; a /compact result's usage is
//     0/0 where the summary request counted 1/1; a resumed process's
//     modelUsage (300/30) counts the first process, its
//     model_usage_since_last_result (200/20) does not. result.usage, the
//     query's own total, is used when a CLI does not print
//     model_usage_since_last_result. Everything is an increment, so a second
//     process of the execution adds to the first. Input is input_tokens +
//     cache_creation_input_tokens + cache_read_input_tokens.
//
// # Codex (exec --json), tested with 0.169.0
//
//   - thread.started: thread_id names the session; every observation after
//     it carries it. Codex prints no version and no turn ids.
//   - turn.started: nothing.
//   - item.started, item.updated, item.completed: agent_message (completed)
//     is a message, remembered as the turn's summary; reasoning is skipped;
//     todo_list (items: text, completed) is the plan, on each of the three
//     (the same list once). command_execution (command target),
//     file_change (file target; the first path, labelled "N files" when
//     there are several), mcp_tool_call, collab_tool_call and web_search
//     (the query as search target, a page opened as URL target) start a call
//     on item.started and end it on item.completed; an item that completes
//     without starting starts and ends at once. Item ids correlate. A
//     command ends failed when its status is failed or declined or its
//     exit_code is not 0 (exit code, and the end of aggregated_output as
//     error); an MCP or collab call, or a file change, when its status is
//     failed (with error.message). An error item is a provider-error.
//   - turn.completed: usage, then completed_claim with the turn's last agent
//     message, then the turn end.
//   - turn.failed: failed_claim with error.message, then the turn end. A
//     message that is itself an API error body ({"error":{"message":…}},
//     {"type":"error","error":{…}}) gives its message as reason and the body
//     as detail.
//   - error: Codex reports a failure that ends the turn twice, as an error
//     event and as the turn.failed after it with the same message; it also
//     reports retries ("Reconnecting... 1/5") as error events. So an error
//     event waits for the next line: a turn.failed with the same message
//     makes the one failed claim, anything else makes it a provider-error
//     diagnostic. Flusher reports one still waiting when stdout ends.
//   - Usage: turn.completed.usage is the thread's running total, reported as
//     cumulative: input_tokens already includes cached_input_tokens, and
//     output_tokens reasoning_output_tokens. It is the whole thread's even
//     across processes: `exec resume` starts a new process whose first
//     turn.completed counts the turns before it (in the captures, 100/4 then
//     280/9 for a second turn of 180/5).
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
//     and DELETE statements of sql calls that succeed (see copilot_todos.go),
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
//   - Every other line type KnownLineTypes lists (session setup, the echoed
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
package provider
