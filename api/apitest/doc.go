// Package apitest starts the whole daemon stack in one test process, as
// serve assembles it: an embedded NATS on a temporary directory, the journal
// store, a projection file fed by its projector, the policy subscriber, the
// runtime with terminal lanes and recordings, and the API on a loopback
// httptest server. Every part is real; the tests of api and of the console
// drive it over HTTP.
package apitest
