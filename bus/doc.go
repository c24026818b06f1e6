// Package bus owns the NATS side of agentjournal below the record level: it
// starts an embedded NATS server with JetStream on a data directory (or
// connects to an external one), holds the single client connection, and
// creates or updates the one journal stream whose configuration is a
// recorded architecture decision (see StreamConfig).
//
// An embedded server is the only copy of the log, so every acknowledged
// write is on disk by default (SyncAlways), and it refuses to share its data
// directory with a second process: Open takes an exclusive lock on the
// directory and reports who holds it instead of letting two servers write
// the same files. When only this process can publish to the server (no
// listener, no cluster), the fsyncs are its own: publishes through
// Bus.JetStream wait for a sync round that concurrent publishes share
// (groupsync.go), instead of the server fsyncing each message.
//
// An embedded server on its own guards its disk (disk.go): writes are
// refused, as a full disk, once no more than a reserve is free, and taken
// again once space is freed, without a restart; Bus.DiskSpace reports the
// last measurement. nats-server's own limit, fixed at start from the free
// space then, is lifted, and a stream left refusing writes by one that met a
// full disk anyway is loaded again once there is space.
//
// Config.Cluster makes the embedded server one node of a NATS cluster: it
// routes to its peers, JetStream is clustered across them, and the journal
// stream can hold Config.Replicas copies (3 is usual) so that the log
// outlives any one node. Open then waits until the cluster has a JetStream
// leader before it sets up the stream, which every node does and which
// tolerates the others doing it at the same time.
//
// The package does not know about records, journal references or the subject
// of any one journal; eventstore builds those on top of the connection and the
// stream handed out here. Apart from eventstore, no package should need to
// import bus or the nats packages.
package bus
