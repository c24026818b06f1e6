// Package web owns the operator console: one page of plain HTML, CSS and
// JavaScript modules (native ES modules, one per screen and per card, the
// entry app.js; docs/console.md), embedded in the binary, that the daemon
// serves at / (no build step, nothing fetched from elsewhere). Three
// libraries are vendored beside it, each with its licence and version
// (static/vendor/README.md): xterm.js, marked and DOMPurify. Scripts are
// served as text/javascript whatever the host's MIME tables say: a
// browser runs a module only when it comes as JavaScript.
//
// The console is a client of the API and nothing more. It asks once for
// the API token (or takes it from #token=… in the address, which it then
// removes), keeps it in the browser's localStorage, so that a link to an
// execution opens in any tab without a new sign-in, until "Forget token"
// or a refusal removes it (from every tab), and sends it as
// "Authorization: Bearer" on every call; the live event stream, which a
// browser's EventSource opens without headers, gets it in access_token.
// It shows:
//
//   - the executions, filtered by owner, lifecycle and attention, those
//     awaiting the operator or blocked marked and listed first, each with
//     its open question or newest progress, agent, host and age, the row
//     an event is about updated in place; and a launch form whose owner is the
//     last one launched for in this browser, at first System/console, its
//     agents those the daemon lists (GET /v1/agents), that places the
//     launch in the fleet (a live host, labels, an environment profile)
//     and says which host took it;
//   - one execution: its timeline (the chat projection), agents' messages
//     rendered from Markdown and sanitized, status dimensions, latest
//     activity and token telemetry, journal metadata, why it is blocked
//     and what it needs, and an answer box for an open needs_input
//     request, its choices as buttons, updated live in place: an event's
//     own data and at most one request (the newest timeline items), the
//     items shown keeping their elements so a selection and a click
//     survive;
//   - the last lines of the agent's plain output, opened at the newest
//     and followed while it runs unless scrolled up, its ANSI colours
//     drawn, under the exit status of an execution that failed;
//   - a prompt box that sends AgentExecution messages offered by the
//     execution's protocol descriptor, each labelled by its portability:
//     never raw terminal input (spec 003);
//   - the terminal lane, when the execution has one, labelled native and
//     advanced: a terminal emulator of the lane's size showing its output
//     (marker lines left out by the daemon) that sends what is typed into
//     it to the lane, and a player for its recording;
//   - time travel: the state, timeline, todos, approvals and output as of
//     any journal sequence, the position kept in the address, with the raw
//     records and their log offsets;
//   - an inbox of every open permission request and question across
//     executions, counted in the navigation, each answered in place;
//   - the runtime contract's shapes (spec 004): an execution's todos, with
//     their status history, and approval checkpoints, updated live, and a
//     link to its session; the sessions, and a session's runs in order,
//     tasks, todos, approvals and checkpoints;
//   - full-text search over every execution, filtered by agent, lifecycle,
//     owner and time, each hit opening its execution at the record;
//   - the fleet: each execution's host, marked when it is not the daemon
//     serving the console, and the hosts, live, lost or left, with their
//     load, labels and the executions running there, read again every
//     few seconds while shown.
//
// Every error the API answers is shown in words: its message, the field at
// fault and the values accepted there.
//
// The page's Content-Security-Policy admits only its own scripts, and
// <style> elements only with the nonce of its response, which the page
// stamps on those the terminal emulator creates.
//
// The package does not own routes, tokens or any API behaviour: package api
// mounts Handler and guards everything the page calls.
package web
