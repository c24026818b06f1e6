// Package fleet makes the daemons that share one log the hosts of one
// fleet, with NATS itself as the only coordinator: no process of the fleet
// is special, and none keeps state the log's NATS does not.
//
// Every daemon joins under a host name that is stable across its restarts
// (DefaultName: the machine's name and its data directory) and puts a
// heartbeat, its Host value, in a key-value bucket beside the journal
// stream every Lease/BeatsPerLease: its labels, its capacity (how many
// agents it may run, how many run, free memory) and the executions it
// runs. Every member watches the bucket, so each knows when it last heard
// from every other, by its own clock: a host not heard from for longer
// than its lease is lost; one that closed cleanly says it left. The bucket
// keeps the last heartbeat of a lost host, so the hosts list still shows
// what ran there.
//
// Commands for an execution reach the host that runs it by NATS
// request/reply: each member answers on a subject of its own (Subject) by
// serving the request through the API handler it was given, and Forward
// sends an API request there and returns that host's answer as it is. The
// member that forwards never writes a record for the command: the host
// does, once, so a retried command is told apart by its id there as it
// would be locally.
//
// The fleet also keeps, beside the stream, one queue of the launches that
// wait (queue.go: claimed by compare-and-set, started by exactly one host
// with room) and the slots of fleet-wide limits per agent kind (limits.go).
// The first live host by name acts for the fleet on what a lost host left:
// Config.Lost ends its executions, its claims are taken back, the slots of
// ended executions are given back.
//
// A forwarded request carries no API token: the fleet's subjects are as
// trusted as the log they sit beside, since whoever can publish on the
// log's NATS can already append records to it.
package fleet
