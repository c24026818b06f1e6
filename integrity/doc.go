// Package integrity owns what the daemon knows of damage to its log:
// records lost from a damaged or truncated block file. It checks the log
// (Quick at every start, Deep in the background after it and in
// 'agentjournal journal verify'), words what it finds (Finding: the
// execution, the sequences or offsets missing, and what to do), and keeps
// the journals found damaged in a Guard, which the journal store asks
// before every write so that no writer (the API, the policy, the runtime,
// its recovery, the fleet) appends to a journal that lost records: its next
// record would take the sequence of a lost one, and the journal would read
// whole again with the damage hidden.
//
// One check cannot see every kind of damage, so the forms combine:
//
//   - the log's own state: the offsets it lists as deleted (it refuses
//     deletes, so each was lost) or lost on load, and how many records it
//     holds against what its journals count;
//   - each journal's head (the sequence of its last record held) against
//     the count of its records the log keeps beside it, which goes stale
//     when the middle of a block is cut out;
//   - the read model's applied last sequence of each execution, the only
//     witness of a lost tail: the log counts and heads agree there;
//   - and, in the deep form, a read of every journal whole, which alone
//     finds a hole that changes none of the above (bytes of a block
//     overwritten) and the records that do not decode.
//
// A Tally follows a read of the log in log order for the offsets and the
// journal sequences it skips, for a reader that prints the log.
//
// The package reads the log and the read model; it does not open, repair
// or write either. Restoring a damaged journal is an import of its export.
package integrity
