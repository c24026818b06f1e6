// Package outputlog keeps the plain output of agent executions: the lines
// an agent prints on stdout and stderr that are neither markers nor
// provider events, and so are in no journal record. It is transport
// evidence, like a terminal recording: kept beside the journals, per
// execution, bounded in size, never synced and never replayed.
//
// Each execution has, in the output directory (DATA/agent-output for the
// daemon):
//
//	<escaped id>.output.jsonl     the current file
//	<escaped id>.output.1.jsonl   the file before it, once the current one filled
//
// Each line of a file is one JSON object:
//
//	{"n":12,"t":"2025-01-02T15:04:05.123456789Z","stream":"stderr","line":"text","clipped":true}
//
// n numbers the execution's kept lines from 1, in the order they were
// written (both streams together; the order between the two streams is
// the order the reader saw them in, not necessarily the order the agent
// wrote them); t is when the line was read; clipped is present when the
// line was longer than the longest kept line and was cut.
//
// A write that would take the current file past its limit first renames it
// to the .1 name, replacing the one there: each file stays within the
// limit, and at least the newest limit's worth of output is kept. Readers
// find lines by n, so rotation does not disturb a reader that pages or
// follows.
//
// The package does not decide which lines are plain (the execution
// runtime does) and does not serve them (the API does).
package outputlog
