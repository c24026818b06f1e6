// Package apibench measures the daemon's HTTP API end to end, in one process
// and one run, against the journal store it writes through, so that the
// API's cost is a ratio to a figure taken on the same machine a moment
// earlier rather than an absolute number that means nothing elsewhere.
//
// Run starts the whole daemon stack in a fresh subdirectory of Config.Dir,
// wired as the daemon wires it: an embedded NATS server that syncs every
// write (the daemon's default), the journal store, a projection fed by a
// projector goroutine, the policy subscriber, the execution runtime, and the
// API served by an http.Server on a loopback listener. It launches
// Config.Agents long-running agents through the API, each for a task of
// its own, and then measures, one after the other, letting the log go quiet
// between measurements (the policy decides on every observation appended):
//
//   - api/sendMessage: Config.Clients HTTP clients send Config.Requests
//     prompts, each with its own messageId, to the running agents, each
//     client keeping to one agent; every answer must report the message
//     delivered.
//   - api/recordObservation: the same with progress observations. The answer
//     waits for the policy's decision (record-only), so each request
//     includes the policy's round trip through the log.
//   - sse/fan-out: Config.Subscribers clients hold /v1/events open while
//     Config.Events activity updates are appended to the agents' journals
//     with the store, at a steady pace. Each (record, subscriber) pair is
//     timed from just before the Append to the arrival of the record's
//     first event at the subscriber, matched by the SSE id (the log offset);
//     a pair whose event never arrives is counted as missing.
//   - raw/append: Config.Clients goroutines append Config.Requests
//     observations (progress signals, the record recordObservation writes)
//     with the store's Append, to as many journals as there are agents, each
//     goroutine keeping to one journal. This is the baseline of the API
//     results.
//
// sendMessage and fan-out are measured once; recordObservation and
// raw/append three times each, taking turns after them, so that a slow
// spell of a shared machine falls on both, and each is reported by its
// round of median rate (the report's set-up lines give every round's).
//
// Every result reports p50 and p99 latencies, and the API results their
// rate and their p99 as ratios to raw/append's. api/recordObservation has two targets against
// the raw/append of the same run, each judged PASS or BELOW in the report:
// at least half its rate (a decision is an append of its own after the
// observation's), and a p99 at most three times its p99. A result below
// its target is not an error: benchkit.Report.Below lists them.
//
// The package owns the workload and what goes into its benchkit.Report;
// the report's form and its text and JSON writers are benchkit's. It does
// not own the stack's parts, the agent program or the command line: it wires the parts with
// their public constructors, launches whatever program Config.Agent names,
// and leaves flags and printing to its caller.
package apibench
