// Command agentjournal-bench runs the benchmark suites and prints their
// reports as one: the journal store against raw JetStream and an SQLite peer
// (store), the read side (read), the HTTP API (api), deciding with one to
// three daemons on a cluster (fleet) and requests forwarded between the
// daemons of one log (hosts). --help explains each suite and the report.
//
// It is a binary of its own so that the daemon, cmd/agentjournal, links
// neither the harnesses (eventstore/storebench, projections/projbench,
// api/apibench, policy/fleetbench, daemon/hostbench, internal/benchkit) nor the SQLite driver
// the store suite races as a yardstick; a test there holds it so.
//
// This package owns the flags, which suites run, printing their reports
// together and the exit code (0 success, 1 failure, 2 bad usage). It does
// not own any workload or the report's form: each suite's package measures
// and fills in a benchkit.Report, and benchkit writes it. The fleet suite
// starts this binary again, with fleetbench.MemberCommand, for each daemon
// it holds to a CPU budget.
package main
