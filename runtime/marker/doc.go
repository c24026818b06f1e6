// Package marker reads stdout signal markers: lines an agent prints to send
// the daemon a signal without MCP. It owns the marker syntax, the per-launch
// nonce and the observation a marker line becomes. It does not read the
// process output (the runtime hands it lines), append records or decide what
// a signal means (policy does, exactly as for the same signal sent through
// MCP).
//
// # Syntax
//
// A marker is one line of the agent's output:
//
//		@@agentjournal <nonce> <signal-json>
//
//	  - The line starts with exactly "@@agentjournal " (the word, then one
//	    space) at its first byte: no leading space, escape sequence or other
//	    text. The same text anywhere else in a line is ordinary output.
//	  - The line ends at "\n"; one "\r" before it is ignored, so CRLF output
//	    works.
//	  - <nonce> is the launch's nonce: 32 lower-case hex characters (16 bytes
//	    from crypto/rand), given to the agent in the environment variable
//	    AGENTJOURNAL_MARKER_NONCE. One space separates it from the signal.
//	  - <signal-json> is the rest of the line (white space around it is
//	    ignored): one JSON object {"type": "<signal type>", "payload": {…}},
//	    exactly as the signal field of an observation.recorded record. It is decoded strictly: an unknown
//	    field at any level, a missing or invalid payload, or anything after
//	    the object is refused. Only the surfaced signal types are accepted:
//	    progress, status, needs_input, blocked, ready_for_verification,
//	    completed_claim, failed_claim, message, plan and checkpoint (usage
//	    and diagnostic come from the daemon's own parsers, never from
//	    agents). The payload fields
//	    are those of the signal reference; every one is shown below.
//	  - A marker line is at most 1 MiB.
//
// # What a line becomes
//
//   - A marker with the launch's nonce and a valid signal: an observation
//     carrying the signal, confidence authoritative, recorded with the source
//     of the lane the line came from (pty for a PTY lane, provider-output
//     for a structured stdout lane).
//   - A marker with another nonce, or none: evidence only. It is recorded
//     with confidence low and the line as raw text, and never carries a
//     signal, whatever follows the nonce. Output the agent merely relays (a
//     file it prints, a command's output) cannot know the nonce, so it cannot
//     forge a signal.
//   - A marker with the launch's nonce whose signal is refused: a diagnostic
//     observation (code bad-marker, the reason as message) with the line as
//     raw text, its nonce redacted.
//   - Any other line: nothing; it stays ordinary output.
//
// # Examples
//
// With the nonce 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e, one line per surfaced
// signal type:
//
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"progress","payload":{"summary":"Running the test suite","detail":"3 of 10 packages pass so far","units":{"completed":3,"total":10,"unit":"packages"}}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"status","payload":{"summary":"Writing tests for the retry logic","phase":"testing"}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"needs_input","payload":{"requestId":"delete-migrations","question":"Delete the three unused migration files?","choices":["yes","no"]}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"blocked","payload":{"reason":"The staging database refuses connections","needs":"Network access to staging"}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"ready_for_verification","payload":{"summary":"Retries with backoff are in place","evidence":["go test ./retry/...","retry/retry.go"]}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"completed_claim","payload":{"summary":"Fixed the flaky upload test","evidence":["upload/upload_test.go"]}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"failed_claim","payload":{"reason":"The storage API has no batch endpoint","detail":"POST /v2/batch answers 404 on every region"}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"message","payload":{"text":"Found two callers of the old API; both are updated.","format":"plain"}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"plan","payload":{"items":[{"id":"1","text":"Port the lexer","status":"done"},{"id":"2","text":"Port the parser","status":"in-progress"}]}}
//	@@agentjournal 3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e {"type":"checkpoint","payload":{"title":"Lexer ported","summary":"All lexer tests pass; the parser is next"}}
//
// From a shell:
//
//	printf '@@agentjournal %s %s\n' "$AGENTJOURNAL_MARKER_NONCE" '{"type":"progress","payload":{"summary":"Compiling"}}'
//
// The needs_input answer arrives as a message that names the requestId.
// Format builds a marker line for a signal; Parse reads one.
package marker
