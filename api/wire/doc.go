// Package wire declares the bodies of the daemon's HTTP API once: every
// request a route decodes and every answer it encodes, the error shape, the
// data of the live events, and the names of those events and of the error
// codes. Package api encodes and decodes these types; package client sends
// and reads the same ones, so the two cannot drift apart, and a test holds
// them to the OpenAPI document (api/openapi.yaml) property by property.
//
// It owns the JSON form, not the meaning: what a field holds is the record
// model's (eventstore), the execution's (execution.State and its timeline),
// the runtime contract's (contract), the lineage's, the slash commands'. It
// refers to those packages where an answer carries their types as they are,
// and only where they link nothing of the daemon's storage, index or
// processes, so that a program that imports the client links no server.
// Where a server package's own type is the wire form (the read model's
// execution summary, the search index's hits), that package aliases the
// type declared here. A runtime request (launch, fork, resume, message,
// command) is declared here in its wire form, and package api converts it
// to the runtime's.
//
// It does not validate: the API refuses a body that does not hold what a
// route accepts, with an error that names the field (docs/api.md).
package wire
