// Package api owns the daemon's HTTP surface: the JSON API over executions,
// their journals and terminal lanes, the live event stream (Server-Sent
// Events), Prometheus metrics, the health probe, and the tokens that guard
// them.
//
// Routes (JSON in and out; request bodies are decoded strictly, so an
// unknown field, or a key given twice in one object, is an error that names
// it; an {id} longer than an execution id can be is an unknown execution):
//
//	GET  /                                      no token: the operator console (package web)
//	GET  /healthz                               no token: {status, checkpoint, lastOffset, lag}
//	GET  /metrics                               Prometheus text format
//	GET  /v1/executions                         ?owner=Entity[/id]&lifecycle=&attention=&limit=
//	POST /v1/executions                         launch: 201 {reference, state}
//	GET  /v1/executions/{id}                    projected state + live {running, terminalId}
//	POST /v1/executions/{id}/stop               the state once the stop is recorded
//	POST /v1/executions/{id}/messages           sendMessage: the acknowledgement
//	POST /v1/executions/{id}/observations       recordObservation: the policy's decision
//	POST /v1/executions/{id}/terminal           openTerminal
//	POST /v1/executions/{id}/terminal/attach    attachTerminal {terminalId}
//	GET  /v1/executions/{id}/terminal           readTerminal
//	POST /v1/executions/{id}/terminal/input     sendTerminalInput {data, cols, rows}
//	GET  /v1/executions/{id}/terminal/recording the lane's asciicast v2 recording
//	GET  /v1/executions/{id}/timeline           ?before=&limit= -> {items, next}
//	GET  /v1/executions/{id}/records            ?fromSeq=&limit= -> {records, next}
//	GET  /v1/executions/{id}/replay             ?toSeq=&limit= -> {toSeq, state, records}
//	GET  /v1/log                                ?fromOffset=&limit= -> {entries, next}
//	POST /v1/projections/rebuild                NDJSON {done, total} lines, then {…, executions} or {…, error}
//	GET  /v1/events                             ?execution=ID: Server-Sent Events
//	*    /mcp                                   the MCP handler, when configured
//
// Every error has one shape:
//
//	{"error": {"code": "invalid_field", "message": "…", "field": "…", "accepted": ["…"]}}
//
// with code one of invalid_field (400), unauthorized (401), forbidden (403),
// not_found (404), method_not_allowed (405), conflict (409), too_large
// (413), internal (500), unavailable (503) and timeout (504).
//
// Every route but /healthz and the console's page and assets (/ and
// /console/) needs a token in "Authorization: Bearer <token>":
// the API token (LoadOrCreateToken keeps it in a 0600 file), accepted
// everywhere, or a token scoped to one execution (Server.ScopedToken), which
// an agent gets at launch and which is accepted only for that execution's
// observations and by the MCP handler. GET /v1/events alone also takes the
// API token in the access_token query parameter, since a browser's
// EventSource cannot send headers; every other route refuses it there.
//
// Live events are derived from log records and published only after the
// projection has applied the record they describe, so a client that reads
// the API when an event arrives sees at least that record's effect. Each
// event carries the record's log offset as its SSE id; a client that
// reconnects with Last-Event-ID gets every later event, read from the log,
// then the live ones, with no gap and no duplicate. Events are fanned out in
// process through bounded buffers: a subscriber that falls behind is
// disconnected with a final overflow event and resumes with Last-Event-ID,
// and never slows the others. A client whose connection takes no data for
// Config.StreamWriteTimeout (its buffers stay full: it does not read) is
// disconnected too, without a final event, and resumes the same way.
//
// The package does not own records, replay, policy or read models: it
// calls execution's Runtime to launch, message, observe and stop, reads
// projections and the store, and leaves deciding to the policy subscriber.
// It does not start the HTTP listener, the projector or the policy: the
// daemon wires those.
package api
