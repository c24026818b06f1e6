package supervisor

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// The files of a state directory. Daemons of later versions read them, so
// the names never change.
const (
	specFile = "spec.json"      // what to run, written by Start
	lockFile = "lock"           // flocked by the supervisor while it lives
	pidsFile = "pids.json"      // the supervisor's and the agent's pids
	outFile  = "out"            // the output spool
	exitFile = "exit.json"      // how the agent ended, once the spool is whole
	sockFile = "ctl.sock"       // the control socket
	logFile  = "supervisor.log" // the supervisor's own stderr
	tmpExt   = ".tmp"           // a file being replaced
)

// The state holds the agent's output and the control of it: its owner's
// alone.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// The start handshake: the supervisor's one line to the starter.
const (
	readyMsg = "ready"   // the agent runs
	errorMsg = "error: " // it could not be started; the reason follows
)

// envStage tells Main it runs as the detached supervisor, not as the
// launcher that starts it.
const envStage = "AGENTJOURNAL_SUPERVISOR_DETACHED"

var (
	// ErrLost means the supervisor is gone without having recorded how the
	// agent ended (it was killed, or the machine went down): the agent's
	// fate is unknown, and the spool holds its output up to then.
	ErrLost = errors.New("supervisor: lost (the supervisor is gone and recorded no exit)")
	// ErrExited means the agent has exited: it takes no input or signal.
	ErrExited = errors.New("supervisor: the agent has exited")
	// ErrRunning means the supervisor still runs, so its state directory
	// cannot be removed.
	ErrRunning = errors.New("supervisor: still running")
	// ErrOutputIncomplete means the supervisor could not write all of the
	// agent's output to the spool (a full disk); ExitStatus.OutputError
	// says why.
	ErrOutputIncomplete = errors.New("supervisor: the spool lacks output the supervisor could not write")
	// ErrCorrupt means the spool holds bytes that are not a frame where a
	// frame should start: a resume offset that is not the End of a frame,
	// or a damaged file.
	ErrCorrupt = errors.New("supervisor: not a frame")
)

// Spec says which agent process to run. The zero values follow exec.Cmd.
type Spec struct {
	// Program is the executable; a name without a slash is looked up in the
	// PATH of the process calling Start.
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
	// Env is the agent's environment; nil means the environment of the
	// process calling Start. It is handed to the supervisor on a pipe and
	// never written to the state directory: it often holds credentials.
	Env []string `json:"-"`
	// Dir is the agent's working directory; empty means that of the process
	// calling Start.
	Dir string `json:"dir"`
	// Stdin gives the agent a pipe for Input; without it the agent reads
	// /dev/null.
	Stdin bool `json:"stdin"`
	// Terminal, when set, runs the agent on a PTY the supervisor holds
	// instead of pipes: its output (stdout and stderr as one) is spooled
	// as Stdout, Input types into it, and Resize sets its size.
	Terminal *TerminalSpec `json:"terminal,omitempty"`
}

// TerminalSpec is the PTY of an agent run on a terminal lane.
type TerminalSpec struct {
	// AgentExecutionID names the recording.
	AgentExecutionID string `json:"agentExecutionId"`
	// Cols and Rows are the size it starts with; zero means 120x40.
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
	// RecordingDir, when set, receives the terminal's asciicast v2
	// recording (package terminal), written by the supervisor, so that it
	// holds what the agent printed and was typed while no daemon ran.
	RecordingDir string `json:"recordingDir,omitempty"`
}

// Validate reports every problem of the spec.
func (s Spec) Validate() error {
	var errs []error
	if s.Program == "" {
		errs = append(errs, errors.New("supervisor: spec: empty program"))
	}
	if s.Terminal != nil && s.Stdin {
		errs = append(errs, errors.New("supervisor: spec: Stdin and Terminal both set (want one: an agent on a terminal reads its input there)"))
	}
	if t := s.Terminal; t != nil && t.RecordingDir != "" && t.AgentExecutionID == "" {
		errs = append(errs, errors.New("supervisor: spec: a terminal recording needs the agent execution id that names it"))
	}
	return errors.Join(errs...)
}

// startSpec is what the supervisor reads from the starter: the spec with
// its environment, which spec.json leaves out.
type startSpec struct {
	Spec
	Env []string `json:"env"`
}

// pids are the processes a state directory is about.
type pids struct {
	Supervisor int `json:"supervisor"`
	Agent      int `json:"agent"`
	// Recording is the path of a terminal lane's recording, if any.
	Recording string `json:"recording,omitempty"`
}

// ExitStatus is how the agent ended, as its supervisor recorded it in
// exit.json.
type ExitStatus struct {
	// Code is the exit code, -1 when a signal ended the agent.
	Code int `json:"code"`
	// Signal is the signal that ended the agent, 0 if none.
	Signal syscall.Signal `json:"signal,omitempty"`
	// Desc is os.ProcessState's wording: "exit status 1", "signal: killed".
	Desc string `json:"desc"`
	// Time is when the supervisor saw the agent end.
	Time time.Time `json:"time"`
	// OutputError, when set, says why output is missing from the spool.
	OutputError string `json:"output_error,omitempty"`
}

// Success reports whether the agent exited with code 0.
func (e ExitStatus) Success() bool { return e.Code == 0 && e.Signal == 0 }

func (e ExitStatus) String() string { return e.Desc }

// Stream is the agent's output stream a frame came from. The values are
// written into the spool: never renumber them.
type Stream byte

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("stream(%d)", byte(s))
}

// Frame is one read of the agent's output, as the supervisor spooled it.
type Frame struct {
	Stream Stream
	// Data is valid only until the iteration moves on.
	Data []byte
	// End is the spool offset just after the frame: resuming Output from it
	// yields the next frame.
	End int64
}

// signals are the signals a supervisor passes on to the agent.
var signals = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGKILL: true}

func checkSignal(sig syscall.Signal) error {
	if !signals[sig] {
		return fmt.Errorf("signal %q not passed on to an agent (want SIGINT, SIGTERM or SIGKILL)", sig)
	}
	return nil
}
