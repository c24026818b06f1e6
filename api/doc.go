// Package api owns the daemon's HTTP surface: the JSON API over executions,
// their journals and terminal lanes, the live event stream (Server-Sent
// Events), Prometheus metrics, the health probe, and the tokens that guard
// them.
//
// Routes take and give JSON (request bodies are decoded strictly, so an
// unknown field, or a key given twice in one object, is an error that names
// it; an {id} longer than an execution id can be is an unknown execution).
// Every body is a type of package wire, declared once for this package and
// for the Go client; a test holds each route's types to openapi.yaml.
// Every route is described in openapi.yaml, embedded and served at
// GET /v1/openapi.yaml; a test holds it to the routes Server registers, so
// it is the list of routes, and docs/api.md says what each is for. Besides
// the console (GET /, package web) and /healthz they cover executions
// (launch, state, stop, messages, observations, scoped tokens, fork and
// resume), their terminal lanes, plain output, timelines, records, replay,
// lineage and narratives; journals (list, entries, import); the log; the
// graph; search; projection rebuilds; live events; and MCP at /mcp.
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
