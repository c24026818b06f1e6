// Package claude drives Claude Code in stream-json mode and reads its
// output. Agent is Claude Code as the runtime registers it; its Driver
// starts `claude -p --input-format stream-json --output-format stream-json
// --verbose --permission-prompt-tool stdio --include-partial-messages` (with
// --resume, --fork-session and --resume-session-at for a resume or a fork),
// writes prompts as user messages on the one process's stdin, answers
// permission requests and questions with control responses, and is the
// parser of the process's stdout: one parse of each line yields its events
// and keeps the control requests it will answer. What every parser reports
// is in the agent package's doc; what Claude Code's lines become follows.
// testdata holds captures of real output, with their sources and licenses.
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
package claude
