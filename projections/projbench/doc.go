// Package projbench measures the read side of the daemon in one process and
// one run: how fast a projection catches up with the log against raw
// baselines taken on the same data a moment earlier, how soon an appended
// record is visible in a live projection, how fast an execution replays,
// and how long the policy takes to decide.
//
// Run writes a log of generated journals (a realistic mix: headers, operator
// prompts and answers, deliveries, observations of every signal with the
// real policy's decisions and the state changes, activity updates and owner
// effects that carry them out) to an embedded server in a fresh
// subdirectory of Config.Dir, at most 64 journals at a time as that many
// agents running at once would. It then restarts the server, as a daemon
// that catches up on start finds it, and empties the server's table of
// recent record ids: written in seconds, the log would otherwise have every
// one of its ids in that table, which no log grown over days has. Then it
// measures:
//
//   - project/catch-up: DB.CatchUp of a new projection file from offset 1,
//     with the process's peak resident memory meanwhile, against
//     raw/read-log (an ordered consumer on journal.> that does not decode)
//     and raw/bbolt-put (the same record bytes put into a new bbolt file
//     keyed by offset, a thousand to a transaction). The three alternate
//     over three rounds and the medians are reported; the ratio is taken to
//     the slower baseline.
//   - project/append-to-visible: records appended at Config.Rate while
//     Project follows the log, each timed from before its Append until
//     DB.WaitFor sees its offset.
//   - replay/fold: execution.Replay of one journal of 100,000 records.
//   - policy/decide: policy.Decide on the state of a running execution,
//     call by call.
//   - policy/append-to-decision: an observation appended, decided by a
//     policy.Subscriber on the log and its decision appended, on a log of
//     its own.
//
// Results carry targets; the report says PASS or BELOW for each. Run
// returns a benchkit.Report, the targets as its results' checks. The
// package owns the workload and what goes into the report; the report's
// form and its text and JSON writers are benchkit's. It does not own the
// store, the projection or the command line. Like eventstore/storebench it talks to JetStream and
// bbolt directly, because the raw baselines are those with nothing on top.
package projbench
