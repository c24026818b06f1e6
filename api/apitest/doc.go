// Package apitest opens the daemon (package daemon) in one test process on
// a temporary data directory, as serve does, and serves its API on a
// loopback httptest server: an embedded NATS, the journal store, the read
// models fed by their projector, the policy subscriber, the runtime with
// terminal lanes and recordings, and the search index for a test that
// asks for it (WithSearch). Every part is real; the tests of api and
// of the console drive it over HTTP.
package apitest
