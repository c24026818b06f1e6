// Package supervisor runs one agent process under a small supervisor
// process that outlives the daemon: the supervisor, not the daemon, holds
// the agent's pipes, so a daemon killed with SIGKILL, or by a signal to its
// terminal's process group, loses neither the agent nor its output, and a
// restarted daemon attaches again.
//
// The package owns a state directory per agent process, given by the
// caller:
//
//	spec.json        what runs: program, args, working directory, stdin (never the environment)
//	lock             flocked by the supervisor for as long as it lives
//	pids.json        the supervisor's and the agent's pids
//	out              the output spool: frames of stream (1 byte), length (4, big-endian), data
//	exit.json        how the agent ended, written (atomically, synced) once the spool is whole
//	ctl.sock         control: write to the agent's stdin, close it, signal its process group
//	supervisor.log   the supervisor's own stderr
//
// The supervisor is the daemon's binary run again (Main, behind a hidden
// command), detached in a session of its own; the agent runs in a process
// group of its own. Start starts one, Attach finds one again after a
// restart, and a Handle reads the spool from any frame boundary, so a
// reader that resumes where it stopped gets every byte once.
//
// The spool is not synced per write: the page cache survives the daemon's
// crash, the fault this package addresses; a machine crash may lose the
// spool's tail (and, without exit.json, reads as ErrLost).
//
// The package does not parse output, write journals, decide lifecycles or
// run agents on a terminal: that is the execution runtime's. It does not
// remove a state directory by itself: the daemon calls Remove once it has
// journaled everything.
package supervisor
