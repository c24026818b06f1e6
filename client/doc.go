// Package client is the Go client of the agentjournal daemon's HTTP API
// (docs/api.md; the OpenAPI document the daemon serves at
// GET /v1/openapi.yaml describes the same routes).
//
// It owns the calls: requests, the API's error shape, which it returns as
// *Error (errors.Is matches it against ErrNotFound, ErrConflict, ErrDamaged,
// ErrDiskFull, …), the NDJSON progress of a rebuild, the pages of journals
// and of the log, read as one sequence (Entries, LogEntries) or followed
// (FollowLog), journal files sent whole (ImportJournal), and the
// Server-Sent Events of GET /v1/events, read one connection at a time
// (Events) or followed across reconnections from a log offset (Follow). The
// agentjournal CLI calls the daemon through it and nothing else.
//
// It does not own the bodies: every one it sends or reads is a type of
// package wire (api/wire), which the daemon encodes and decodes too, named
// here by aliases (LaunchRequest, Execution, Health, …). Nor the meaning
// of what it carries: states and timeline items are the execution
// package's, records the eventstore package's, decoded as the daemon wrote
// them. A program that imports it must link nothing of the daemon's
// storage, search index, log server or processes: TestClientLinksNoServer
// names each such package the client links, and through which imports.
//
// It does not find a daemon: a local daemon writes its address, pid and
// token file to DATA/daemon.json, and the CLI reads that file and checks
// the process before calling New; other callers know their daemon's URL
// and token. It does not speak MCP (/mcp), the console's assets or the
// Prometheus text of /metrics.
//
//	c := client.New("http://127.0.0.1:7600", token)
//	defer c.Close()
//	res, err := c.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-42",
//		Agent: "generic", Command: []string{"./my-agent"}})
//	if errors.Is(err, client.ErrInvalidField) { … }
package client
