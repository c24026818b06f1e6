// Package hostbench measures what a fleet of daemons costs a request that
// reaches a host other than the one it is for: a message sent through the
// host that does not run the agent, and a launch placed on a host other than
// the one that took it, each against the same request served where it
// arrived, measured in the same run.
//
// Run opens two whole daemons on one log in this process, as `serve
// --nats-listen` and `serve --nats-url` open them: alpha on an embedded
// NATS server listening on loopback with a secret, beta joined to it by
// URL, each in a data directory of its own under a fresh subdirectory of
// Config.Dir and with its API on loopback; search is off on both. It waits
// until alpha sees beta live, then measures, one request at a time, in
// pairs of one local and one forwarded request whose order is swapped every
// pair, so that a slow spell of the machine falls on both:
//
//   - message/local and message/routed: Config.Agent is launched on alpha
//     and Config.Messages prompts are sent to it through alpha and as many
//     through beta, which forwards each to alpha over NATS; each is timed
//     until the answer that it was delivered. The agent is stopped after.
//   - launch/local and launch/remote: Config.Launches launches of
//     Config.LaunchAgent are sent to alpha placed on alpha, and as many
//     placed on beta, which alpha forwards there; each is timed until its
//     answer, which comes once the agent runs on the host it was placed on.
//   - launch/placed: all those launches over the time from the first's
//     request to the last's answer, in launches per second.
//
// Every result but launch/placed gives p50 and p99 and, as its rate, the
// requests over the time spent in them; each forwarded one gives its rate
// and p99 as ratios to its local one's and what it adds at p50. Two are
// judged, each PASS or BELOW in the report: message/routed's p99 at most
// twice message/local's, and launch/remote's p50 less than 50 ms above
// launch/local's. A result below its target is not an error:
// benchkit.Report.Below lists them.
//
// The package owns the workload and what goes into its benchkit.Report; the
// report's form and its writers are benchkit's. It does not own the daemon,
// the fleet or the command line: it opens daemons with daemon.Open and
// calls them through package client, as any caller of the API does, and
// leaves flags and printing to its caller.
package hostbench
