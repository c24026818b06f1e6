// Package web owns the operator console: one page of plain HTML, CSS and
// JavaScript, embedded in the binary, that the daemon serves at / (no build
// step, nothing fetched from elsewhere).
//
// The console is a client of the API and nothing more. It asks once for
// the API token (or takes it from #token=… in the address, which it then
// removes), keeps it in the tab's sessionStorage, and sends it as
// "Authorization: Bearer" on every call; the live event stream, which a
// browser's EventSource opens without headers, gets it in access_token.
// It shows:
//
//   - the executions, filtered by owner, lifecycle and attention, those
//     awaiting the operator or blocked marked and listed first, updated
//     live from the event stream; and a launch form;
//   - one execution: its timeline (the chat projection), status dimensions,
//     latest activity and token telemetry, journal metadata, and an answer
//     box for an open needs_input request, updated live;
//   - a prompt box that sends AgentExecution messages offered by the
//     execution's protocol descriptor, each labelled by its portability:
//     never raw terminal input (spec 003);
//   - the terminal lane, when the execution has one, labelled native and
//     advanced: its recent output and a player for its recording;
//   - time travel: the state and timeline as of any journal sequence, with
//     the raw records and their log offsets.
//
// Every error the API answers is shown in words: its message, the field at
// fault and the values accepted there.
//
// The package does not own routes, tokens or any API behaviour: package api
// mounts Handler and guards everything the page calls.
package web
