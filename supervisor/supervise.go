package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/internal/durable"
	"github.com/agentjournal/agentjournal/terminal"
)

// Main runs a supervisor on the state directory args[0] and returns its
// exit code. Start runs it through Config.Binary, which must call Main
// with the arguments after Config.Args; Main runs itself again from the
// same command line (os.Args), so it must be reached the same way twice.
//
// The first run only starts the second, detached in a session of its own,
// and exits; the second is the supervisor. It reads the spec from stdin,
// answers "ready" on stdout once the agent runs, and logs to stderr.
func Main(args []string) int {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintln(os.Stderr, "usage: supervise DIR (the absolute path of a state directory made by supervisor.Start)")
		return 2
	}
	if os.Getenv(envStage) == "" {
		return detach()
	}
	os.Unsetenv(envStage)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := open(args[0], log)
	if err != nil {
		fmt.Fprintf(os.Stdout, "%s%v\n", errorMsg, err)
		return 1
	}
	_, err = fmt.Fprintln(os.Stdout, readyMsg)
	if err != nil {
		// Start gave up and reports that no agent runs: make it so.
		log.Error("tell the starter the agent runs; killing it", "err", err)
		syscall.Kill(-s.pid, syscall.SIGKILL)
		return 1
	}
	os.Stdout.Close()
	if err := s.run(log); err != nil {
		log.Error("supervise", "err", err)
		return 1
	}
	return 0
}

// detach starts the supervisor proper in a session of its own, so that
// signals to the starter's process group or terminal do not reach it, and
// returns: the starter waits for this process, and the supervisor, an
// orphan, is reaped by init rather than left a zombie of the daemon.
func detach() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stdout, "%sfind the executable: %v\n", errorMsg, err)
		return 1
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envStage+"=1")
	// "/" keeps no filesystem busy; the spec names the agent's directory.
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stdout, "%sstart the supervisor: %v\n", errorMsg, err)
		return 1
	}
	return 0
}

// super is a running supervisor.
type super struct {
	dir   string
	lock  *os.File
	spool *spool
	ctl   *net.UnixListener
	agent *exec.Cmd // nil on a terminal
	// term is the agent's terminal when it runs on one, in a registry of
	// its own; the supervisor then holds the PTY (terminal.go).
	term   *terminal.Terminal
	terms  *terminal.Registry
	pid    int // the agent's, also its process group's
	input  *agentInput
	stdout io.ReadCloser
	stderr io.ReadCloser
	// exited is set once the agent is reaped: its pid may be reused.
	exited atomic.Bool
}

// open takes the state directory and starts the agent.
func open(dir string, log *slog.Logger) (s *super, err error) {
	// Ignoring SIGHUP and SIGPIPE with signal.Ignore would pass the
	// ignoring on to the agent through exec; a handler is reset there.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGPIPE)
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, fmt.Errorf("read the spec: %w", err)
	}
	os.Stdin.Close()
	var spec startSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("read the spec: %w", err)
	}
	s = &super{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.abandon())
		}
	}()
	if s.lock, err = os.OpenFile(s.path(lockFile), os.O_RDWR, 0); err != nil {
		return s, err
	}
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return s, fmt.Errorf("lock %s: %w (another supervisor runs on it)", s.path(lockFile), err)
	}
	out, err := os.OpenFile(s.path(outFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, filePerm)
	if err != nil {
		return s, err
	}
	s.spool = newSpool(out)
	if s.ctl, err = listenCtl(dir); err != nil {
		return s, fmt.Errorf("listen on the control socket: %w", err)
	}
	if spec.Terminal != nil {
		err = s.startTerminal(spec.Spec, spec.Env, log)
	} else {
		err = s.startAgent(spec.Spec, spec.Env)
	}
	if err != nil {
		return s, err
	}
	p := pids{Supervisor: os.Getpid(), Agent: s.pid}
	if s.term != nil {
		p.Recording = s.term.Snapshot().RecordingPath
	}
	if err := writeJSON(s.path(pidsFile), p, false); err != nil {
		syscall.Kill(-p.Agent, syscall.SIGKILL)
		return s, err
	}
	return s, nil
}

func (s *super) startAgent(spec Spec, env []string) error {
	cmd := exec.Command(spec.Program, spec.Args...)
	cmd.Dir, cmd.Env = spec.Dir, env
	// A process group of its own, so a signal reaches the agent's children
	// too and never the supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdin *os.File
	if spec.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		cmd.Stdin, stdin = r, w
	}
	var err error
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		return err
	}
	if s.stderr, err = cmd.StderrPipe(); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		if stdin != nil {
			stdin.Close()
		}
		return err
	}
	s.agent, s.input, s.pid = cmd, &agentInput{f: stdin}, cmd.Process.Pid
	return nil
}

// abandon undoes a start that failed. The lock goes before the starter
// hears of the failure, so that it finds the directory free to remove.
func (s *super) abandon() error {
	var errs []error
	if s.ctl != nil {
		errs = append(errs, s.ctl.Close(), os.Remove(s.path(sockFile)))
	}
	if s.terms != nil {
		errs = append(errs, s.terms.Close())
	}
	if s.spool != nil {
		errs = append(errs, s.spool.f.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// run spools the agent's output until both of its pipes end, reaps it and
// records its end.
func (s *super) run(log *slog.Logger) error {
	go s.serveCtl(s.ctl)
	if s.term != nil {
		return s.runTerminal(log)
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); s.spool.pump(Stdout, s.stdout) }()
	go func() { defer pumps.Done(); s.spool.pump(Stderr, s.stderr) }()
	pumps.Wait()
	s.spool.end()
	werr := s.agent.Wait()
	s.exited.Store(true)
	s.input.close()
	return s.finish(log, exitStatus(s.agent.ProcessState, werr))
}

// finish records the agent's end, with the spool whole.
func (s *super) finish(log *slog.Logger, st ExitStatus) error {
	if s.spool.err != nil {
		st.OutputError = s.spool.err.Error()
	}
	// exit.json promises a whole spool: it is synced first, once.
	err := s.spool.f.Sync()
	if err == nil {
		err = writeJSON(s.path(exitFile), st, true)
	}
	log.Info("agent exited", "status", st.Desc, "spooled", s.spool.size)
	return errors.Join(err, s.ctl.Close(), os.Remove(s.path(sockFile)), s.spool.f.Close())
}

func exitStatus(ps *os.ProcessState, werr error) ExitStatus {
	st := ExitStatus{Code: -1, Time: time.Now().UTC()}
	if ps == nil {
		st.Desc = fmt.Sprint(werr)
		return st
	}
	st.Code, st.Desc = ps.ExitCode(), ps.String()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = ws.Signal()
	}
	return st
}

func (s *super) path(name string) string { return filepath.Join(s.dir, name) }

// writeJSON replaces path atomically, and durably when sync is set.
func writeJSON(path string, v any, sync bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if sync {
		return durable.WriteFile(path, data, filePerm)
	}
	if err := os.WriteFile(path+tmpExt, data, filePerm); err != nil {
		return err
	}
	return os.Rename(path+tmpExt, path)
}

// agentInput is the agent's stdin. A write that waits for the agent to
// read does not hold up close, so the daemon can always end the input.
type agentInput struct {
	writeMu sync.Mutex // one request at a time, so inputs do not interleave
	mu      sync.Mutex
	f       *os.File // nil when the agent has no stdin pipe or it was closed
	closed  bool
}

func (in *agentInput) write(p []byte) error {
	in.writeMu.Lock()
	defer in.writeMu.Unlock()
	in.mu.Lock()
	f, closed := in.f, in.closed
	in.mu.Unlock()
	switch {
	case closed:
		return errors.New("the agent's input is closed")
	case f == nil:
		return errors.New("the agent has no input pipe (its spec reads /dev/null)")
	}
	_, err := f.Write(p)
	return err
}

func (in *agentInput) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f != nil && !in.closed {
		in.f.Close()
	}
	in.closed = true
}
