// Package supervisor runs one agent process under a small supervisor
// process that outlives the daemon: the supervisor, not the daemon, holds
// the agent's pipes, or the PTY of an agent on a terminal lane, so a daemon killed with SIGKILL, or by a signal to its
// terminal's process group, loses neither the agent nor its output, and a
// restarted daemon attaches again.
//
// The package owns a state directory per agent process, given by the
// caller:
//
//	spec.json        what runs: program, args, working directory, stdin or terminal (never the environment)
//	lock             flocked by the supervisor for as long as it lives
//	pids.json        the supervisor's and the agent's pids, and a terminal's recording
//	out              the output spool: frames of stream (1 byte), length (4, big-endian), data
//	exit.json        how the agent ended, written (atomically, synced) once the spool is whole
//	ctl.sock         control: write to the agent's stdin (or type into its terminal), close it, resize the terminal, signal its process group
//	supervisor.log   the supervisor's own stderr
//
// An agent on a terminal (Spec.Terminal) runs on a PTY the supervisor
// opens through package terminal, recorded there as the daemon's own lanes
// are; what it prints is spooled as Stdout frames, so that a daemon that
// attaches again rebuilds the terminal's screen from the spool.
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
// serve terminals to clients: that is the execution runtime's. It does not
// remove a state directory by itself: the daemon calls Remove once it has
// journaled everything.
package supervisor
