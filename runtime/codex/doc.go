// Package codex drives `codex exec --json` and reads its output. Agent is
// Codex as the runtime registers it; its Driver starts a process per turn,
// the prompt on its command line and stdin closed, the next turn resuming
// the thread (`codex exec resume`), and is the parser of each process's
// stdout. What every parser reports is in the agent package's doc; what
// Codex's lines become follows. testdata holds captures of real output,
// with their sources and licenses.
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
package codex
