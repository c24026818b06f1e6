package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/terminal"
)

// startTerminal starts the agent on a PTY this supervisor holds, through
// package terminal as the daemon's own lanes are: the same recording, the
// same end of the lane. Every chunk read from the PTY goes to the spool
// as a Stdout frame, so a daemon that attaches again reads what the agent
// printed while none ran, and rebuilds the screen from it.
func (s *super) startTerminal(spec Spec, env []string, log *slog.Logger) error {
	s.terms = terminal.NewRegistry(log)
	// The reading goroutine calls OnOutput, one chunk at a time: one
	// buffer serves every frame.
	buf := make([]byte, headerLen, headerLen+32<<10)
	t, err := s.terms.Open(context.Background(), terminal.OpenOptions{
		AgentExecutionID: spec.Terminal.AgentExecutionID, Command: spec.Program, Args: spec.Args, Env: env, Dir: spec.Dir,
		Cols: spec.Terminal.Cols, Rows: spec.Terminal.Rows, RecordingDir: spec.Terminal.RecordingDir,
		OnOutput: func(data []byte) {
			buf = append(buf[:headerLen], data...)
			s.spool.append(Stdout, buf)
		},
	})
	if err != nil {
		return errors.Join(err, s.terms.Close())
	}
	// A terminal has no stdin pipe to close: CloseInput does nothing.
	s.term, s.pid, s.input = t, t.Pid(), &agentInput{}
	return nil
}

// runTerminal waits for the agent on the terminal to exit and its output
// to be spooled, and records its end.
func (s *super) runTerminal(log *slog.Logger) error {
	<-s.term.Done()
	s.spool.end()
	code, werr := s.term.Wait(context.Background())
	s.exited.Store(true)
	cerr := s.terms.Close()
	st := terminalExit(code, werr)
	return errors.Join(s.finish(log, st), cerr)
}

// terminalExit is the ExitStatus of a terminal's exit code, which is
// 128+n for a process killed by signal n; its Desc reads as
// os.ProcessState's does for a process on pipes.
func terminalExit(code int, werr error) ExitStatus {
	st := ExitStatus{Code: code, Time: time.Now().UTC()}
	switch {
	case werr != nil:
		st.Code, st.Desc = -1, werr.Error()
	case code > 128:
		st.Code, st.Signal = -1, syscall.Signal(code-128)
		st.Desc = "signal: " + st.Signal.String()
	default:
		st.Desc = fmt.Sprintf("exit status %d", code)
	}
	return st
}
