// Package terminal owns the PTY lanes of running agents: the Registry that
// starts processes on pseudo-terminals and keeps them addressable by
// terminal id, the raw bytes that cross a lane (output, input, resize), its
// exit, and the asciicast v2 recording of each lane.
//
// A Terminal is one process started in a new session with the PTY as its
// controlling terminal. One goroutine reads the PTY for as long as it is
// open and hands each chunk, in order, to the recording, to the optional
// OnOutput callback, to a bounded scrollback ring (Snapshot.Recent) and to
// live subscribers. Subscribers are fed through bounded queues: one that
// falls behind loses chunks instead of stalling the reader, so an agent can
// never block on a slow viewer and memory stays bounded whatever the agent
// prints.
//
// A registry also adopts terminals whose PTY another process holds (the
// supervisor of an agent that outlives the daemon): Adopt registers one,
// the caller feeds it the output its holder read, and input, resizes and
// signals are passed to the holder. Close detaches an adopted terminal
// instead of killing its process; Finish records its exit.
//
// Recordings are asciicast v2 files, one per AgentExecution, at
//
//	terminal-recordings/<escaped-agent-execution-id>.terminal.jsonl
//
// (a second lane for the same execution gets <escaped-id>.2.terminal.jsonl,
// and so on, because asciicast allows one header per file). The first line
// is the header object; every further line is an event
// [seconds_since_start, code, data] with code "o" (output), "i" (input),
// "r" (resize, data "COLSxROWS") or "m" (marker; the last one is
// "exit <code>"). Event data is always valid UTF-8: a rune split across two
// reads is carried to the next event and invalid bytes become U+FFFD.
// ReadRecording reads such a file strictly.
//
// The package does not own journals or semantic messages. Raw terminal
// input and output never become journal records: the execution package
// decides what a message is, appends it to the journal through eventstore
// and only then hands bytes to a lane. Replay never recreates terminals.
// Only this package imports github.com/creack/pty; callers see Terminal,
// Snapshot, Header and Event.
package terminal
