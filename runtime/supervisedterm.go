package runtime

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// launchTerminal is the terminal lane of a supervised execution, as its
// launch file keeps it: a runtime that attaches after a restart serves the
// terminal again under the same id, so the clients that knew it keep
// reaching it.
type launchTerminal struct {
	ID string `json:"id"`
	// Command is the program and its arguments as they run.
	Command []string `json:"command"`
	Cols    uint16   `json:"cols,omitempty"`
	Rows    uint16   `json:"rows,omitempty"`
}

func (rt *Runtime) newLaunchTerminal(program string, args []string) *launchTerminal {
	cols, rows := rt.terminalSize()
	return &launchTerminal{ID: terminal.NewID(), Command: append([]string{program}, args...), Cols: cols, Rows: rows}
}

// spec is what the supervisor of an execution's terminal lane runs: the
// agent on a PTY it holds, recorded in recordings.
func (lt launchTerminal) spec(id, recordings string) supervisor.Spec {
	return supervisor.Spec{Program: lt.Command[0], Args: lt.Command[1:],
		Terminal: &supervisor.TerminalSpec{AgentExecutionID: id, Cols: lt.Cols, Rows: lt.Rows, RecordingDir: recordings}}
}

// adoptTerminal registers the terminal of a supervised agent in the
// runtime's Terminals.
func (rt *Runtime) adoptTerminal(id string, lt launchTerminal, h *supervisor.Handle) (*terminal.Terminal, error) {
	if rt.cfg.Terminals == nil || len(lt.Command) == 0 {
		return nil, fmt.Errorf("serve the terminal lane of %s: no terminal registry, or no command in its launch file", id)
	}
	t, err := rt.cfg.Terminals.Adopt(terminal.AdoptOptions{ID: lt.ID, AgentExecutionID: id, Command: lt.Command[0], Args: lt.Command[1:],
		Cols: lt.Cols, Rows: lt.Rows, Pid: h.AgentPID(), RecordingPath: h.RecordingPath(), Holder: terminalHolder{h}})
	if err != nil {
		return nil, fmt.Errorf("serve the terminal lane of %s: %w", id, err)
	}
	return t, nil
}

// terminalHolder passes an adopted terminal's input, resizes and signals
// to the supervisor that holds its PTY.
type terminalHolder struct{ h *supervisor.Handle }

var _ terminal.Holder = terminalHolder{}

func (th terminalHolder) Input(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return holderErr(th.h.Input(ctx, data))
}

func (th terminalHolder) Resize(cols, rows uint16) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return holderErr(th.h.Resize(ctx, cols, rows))
}

func (th terminalHolder) Signal(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return holderErr(th.h.Signal(ctx, sig))
}

// holderErr says in the terminal package's words that the agent is gone.
func holderErr(err error) error {
	if errors.Is(err, supervisor.ErrExited) || errors.Is(err, supervisor.ErrLost) {
		return fmt.Errorf("%w: %w", terminal.ErrExited, err)
	}
	return err
}

// terminalCode is a terminal's exit code for the end its supervisor
// recorded: 128+n for signal n, as the terminal package counts; -1 when the
// end is unknown.
func terminalCode(st supervisor.ExitStatus, lost bool) int {
	switch {
	case lost:
		return -1
	case st.Signal != 0:
		return 128 + int(st.Signal)
	}
	return st.Code
}
