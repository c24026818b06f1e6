package supervisor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config says how to run a supervisor.
type Config struct {
	// Binary is the program that runs Main: the daemon's own executable
	// (os.Executable()).
	Binary string
	// Args come before the state directory on its command line:
	// ["supervise"] for agentjournal.
	Args []string
	// ReadyTimeout bounds how long Start waits for the supervisor to run
	// the agent, on top of the context; 10s when zero.
	ReadyTimeout time.Duration
}

// DefaultConfig runs the current executable with the given arguments.
func DefaultConfig(args ...string) (Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return Config{}, fmt.Errorf("supervisor: find the executable: %w", err)
	}
	return Config{Binary: exe, Args: args, ReadyTimeout: 10 * time.Second}, nil
}

// Validate reports every problem of the config.
func (c Config) Validate() error {
	var errs []error
	if c.Binary == "" {
		errs = append(errs, errors.New("supervisor: config: empty Binary (want the path of the executable that runs supervisor.Main)"))
	}
	if c.ReadyTimeout < 0 {
		errs = append(errs, fmt.Errorf("supervisor: config: negative ReadyTimeout %s", c.ReadyTimeout))
	}
	return errors.Join(errs...)
}

// Handle is a daemon's side of one supervisor's state directory. It holds
// no goroutine; Close lets go of its files and connection, and leaves the
// supervisor and the directory alone.
type Handle struct {
	dir  string
	lock *os.File // a shared flock on it succeeds only once the supervisor is gone
	pids pids

	ctlMu sync.Mutex
	conn  net.Conn
	// inputMu keeps the requests of one Input together.
	inputMu sync.Mutex

	exitMu sync.Mutex
	exit   *ExitStatus

	closeOnce sync.Once
}

// Start makes the state directory dir (which must not exist), starts a
// supervisor on it that runs spec's agent, and returns once the agent runs.
// The supervisor is detached: it is no child of the caller, lives in a
// session of its own and outlives the caller. When Start fails no agent
// runs, and the directory is removed unless a supervisor might still hold
// it.
func Start(ctx context.Context, cfg Config, dir string, spec Spec) (*Handle, error) {
	if err := errors.Join(cfg.Validate(), spec.Validate()); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("supervisor: start: %w", err)
	}
	if err := checkSockPath(dir); err != nil {
		return nil, fmt.Errorf("supervisor: start: %w", err)
	}
	if spec.Dir == "" {
		// The supervisor runs in "/".
		if spec.Dir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("supervisor: start: %w", err)
		}
	}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	if err := os.MkdirAll(filepath.Dir(dir), dirPerm); err != nil {
		return nil, fmt.Errorf("supervisor: start: %w", err)
	}
	if err := os.Mkdir(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("supervisor: start: state directory: %w", err)
	}
	h, err := start(ctx, cfg, dir, spec)
	if err != nil {
		if gone, _ := supervisorGone(dir); gone {
			err = errors.Join(err, os.RemoveAll(dir))
		}
		return nil, fmt.Errorf("supervisor: start %s: %w", spec.Program, err)
	}
	return h, nil
}

func start(ctx context.Context, cfg Config, dir string, spec Spec) (*Handle, error) {
	public, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, specFile), append(public, '\n'), filePerm); err != nil {
		return nil, err
	}
	// The lock file exists from the start, so that a directory whose
	// supervisor never ran reads as lost rather than as no state at all.
	if err := os.WriteFile(filepath.Join(dir, lockFile), nil, filePerm); err != nil {
		return nil, err
	}
	private, err := json.Marshal(startSpec{Spec: spec, Env: spec.Env})
	if err != nil {
		return nil, err
	}
	timeout := cfg.ReadyTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	logf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specW.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, errors.Join(err, specR.Close())
	}
	defer readyR.Close()
	// The first process only starts the supervisor and exits: waiting for
	// it here leaves no zombie, and the supervisor is reparented away. It
	// needs no context: it ends by itself, at once.
	cmd := exec.Command(cfg.Binary, append(append([]string(nil), cfg.Args...), dir)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = specR, readyW, logf
	err = cmd.Start()
	specR.Close()
	readyW.Close()
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() { ready <- handshake(specW, readyR, private) }()
	var herr error
	select {
	case herr = <-ready:
	case <-ctx.Done():
		// Closing the pipes ends the handshake; a supervisor that then
		// finds nobody to tell it is ready kills its agent.
		specW.Close()
		readyR.Close()
		if herr = <-ready; herr != nil {
			herr = fmt.Errorf("wait for the supervisor: %w", ctx.Err())
			abort(dir)
		}
	}
	werr := cmd.Wait()
	if herr != nil {
		return nil, fmt.Errorf("%w (see %s)", herr, filepath.Join(dir, logFile))
	}
	if werr != nil {
		return nil, fmt.Errorf("supervisor launcher: %w", werr)
	}
	h, err := Attach(dir)
	if err != nil && h != nil {
		// Ready, then gone before this look: killed.
		err = errors.Join(err, h.Close())
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// abort kills the agent of a supervisor that Start gave up on: its ready
// line may sit unread in the closed pipe, and then it runs on believing
// Start knows. Through the socket, the signal reaches only that agent.
func abort(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h, err := Attach(dir)
	if h == nil {
		return
	}
	defer h.Close()
	if err == nil {
		h.Signal(ctx, syscall.SIGKILL)
	}
}

// handshake sends the spec and reads the supervisor's answer.
func handshake(w io.WriteCloser, r io.Reader, spec []byte) error {
	_, werr := w.Write(spec)
	werr = errors.Join(werr, w.Close())
	line, rerr := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == readyMsg:
		return nil
	case strings.HasPrefix(line, errorMsg):
		return errors.New(strings.TrimPrefix(line, errorMsg))
	case werr != nil:
		return fmt.Errorf("send the spec: %w", werr)
	case errors.Is(rerr, io.EOF):
		return errors.New("the supervisor exited before running the agent")
	case rerr != nil:
		return rerr
	}
	return fmt.Errorf("unexpected line from the supervisor: %q", line)
}

// Attach returns a handle on the state directory dir, whether its
// supervisor runs or is gone. When it is gone without an exit.json, Attach
// returns the handle and ErrLost: the spooled output can still be read.
func Attach(dir string) (*Handle, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("supervisor: attach: %w", err)
	}
	lock, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("supervisor: attach %s: not a supervisor state directory: %w", dir, err)
	}
	h := &Handle{dir: dir, lock: lock}
	if data, err := os.ReadFile(h.path(pidsFile)); err == nil {
		if err := json.Unmarshal(data, &h.pids); err != nil {
			return nil, errors.Join(fmt.Errorf("supervisor: attach %s: %s: %w", dir, pidsFile, err), h.Close())
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, errors.Join(fmt.Errorf("supervisor: attach %s: %w", dir, err), h.Close())
	}
	st, err := h.state()
	if err != nil {
		return nil, errors.Join(err, h.Close())
	}
	if st == stateLost {
		return h, ErrLost
	}
	return h, nil
}

// Dir is the state directory.
func (h *Handle) Dir() string { return h.dir }

// AgentPID is the agent's pid (and process group id); 0 when the
// supervisor did not get to start it.
func (h *Handle) AgentPID() int { return h.pids.Agent }

// SupervisorPID is the supervisor's pid.
func (h *Handle) SupervisorPID() int { return h.pids.Supervisor }

func (h *Handle) path(name string) string { return filepath.Join(h.dir, name) }

type state int

const (
	stateRunning state = iota
	stateExited
	stateLost
)

// state tells a live supervisor from one that ended well or was lost. The
// supervisor writes exit.json before it lets go of the lock, so a released
// lock and, after it, no exit.json means lost.
func (h *Handle) state() (state, error) {
	if _, ok, err := h.readExit(); ok || err != nil {
		return stateExited, err
	}
	switch held, err := h.alive(); {
	case err != nil:
		return stateLost, err
	case held:
		return stateRunning, nil
	}
	switch _, ok, err := h.readExit(); {
	case err != nil:
		return stateLost, err
	case ok:
		return stateExited, nil
	}
	return stateLost, nil
}

// Alive reports whether the supervisor runs. It asks the kernel whether
// the supervisor's flock is held, so neither a kill -9 nor a reused pid
// fools it.
func (h *Handle) Alive() bool {
	held, err := h.alive()
	return held && err == nil
}

func (h *Handle) alive() (bool, error) {
	held, err := flockHeld(h.lock)
	if err != nil {
		return false, fmt.Errorf("supervisor: check %s: %w", h.path(lockFile), err)
	}
	return held, nil
}

func flockHeld(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// supervisorGone reports whether no supervisor holds dir's lock.
func supervisorGone(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	held, err := flockHeld(f)
	return !held && err == nil, err
}

// Exited returns how the agent ended, once the supervisor recorded it.
func (h *Handle) Exited() (ExitStatus, bool) {
	st, ok, _ := h.readExit()
	return st, ok
}

func (h *Handle) readExit() (ExitStatus, bool, error) {
	h.exitMu.Lock()
	defer h.exitMu.Unlock()
	if h.exit != nil {
		return *h.exit, true, nil
	}
	data, err := os.ReadFile(h.path(exitFile))
	if errors.Is(err, fs.ErrNotExist) {
		return ExitStatus{}, false, nil
	}
	if err != nil {
		return ExitStatus{}, false, fmt.Errorf("supervisor: %w", err)
	}
	var st ExitStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return ExitStatus{}, false, fmt.Errorf("supervisor: %s: %w", h.path(exitFile), err)
	}
	h.exit = &st
	return st, true, nil
}

// Wait returns how the agent ended once the supervisor has recorded it,
// with the spool whole, and exited; ErrLost if it is gone without.
func (h *Handle) Wait(ctx context.Context) (ExitStatus, error) {
	var w waiter
	defer w.close()
	poll := minPoll
	for {
		switch st, err := h.state(); {
		case err != nil:
			return ExitStatus{}, err
		case st == stateLost:
			return ExitStatus{}, ErrLost
		case st == stateExited && !h.Alive():
			es, _ := h.Exited()
			return es, nil
		case st == stateRunning:
			// Blocks until the spool is whole, or the supervisor is gone.
			if _, err := w.waitPast(ctx, h.dir, math.MaxInt64); err != nil {
				return ExitStatus{}, err
			}
		}
		if err := sleep(ctx, poll); err != nil {
			return ExitStatus{}, err
		}
		poll = min(2*poll, maxPoll)
	}
}

// Output yields the agent's output frames from the spool offset from (0,
// or the End of a frame) on, in the order the supervisor read them,
// waiting for more while the agent runs. It ends after the last frame once
// the agent has exited; with ErrLost after the last whole frame if the
// supervisor died without recording an exit; with ctx's error when ctx
// ends. A reader that resumes from the End of the last frame it dealt with
// gets every byte once.
func (h *Handle) Output(ctx context.Context, from int64) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		r, err := h.openSpool(from)
		if err != nil {
			yield(Frame{}, err)
			return
		}
		defer r.close()
		for {
			fr, err := r.next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(fr, err) || err != nil {
				return
			}
		}
	}
}

// Input writes p to the agent's stdin, after any other Input of this
// handle and never interleaved with one. It returns once the supervisor
// has written all of p to the pipe, which waits for the agent to read when
// the pipe is full. If ctx ends first, a part of p may still be delivered.
func (h *Handle) Input(ctx context.Context, p []byte) error {
	h.inputMu.Lock()
	defer h.inputMu.Unlock()
	for len(p) > 0 {
		n := min(len(p), maxInputChunk)
		if err := h.request(ctx, opInput, p[:n]); err != nil {
			return fmt.Errorf("supervisor: input: %w", err)
		}
		p = p[n:]
	}
	return nil
}

// CloseInput closes the agent's stdin, which tells a CLI that reads its
// turns there that there are no more.
func (h *Handle) CloseInput(ctx context.Context) error {
	if err := h.request(ctx, opCloseInput, nil); err != nil {
		return fmt.Errorf("supervisor: close input: %w", err)
	}
	return nil
}

// Signal sends sig (SIGINT, SIGTERM or SIGKILL) to the agent's process
// group.
func (h *Handle) Signal(ctx context.Context, sig syscall.Signal) error {
	if err := checkSignal(sig); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	if err := h.request(ctx, opSignal, signalPayload(sig)); err != nil {
		return fmt.Errorf("supervisor: signal %s: %w", sig, err)
	}
	return nil
}

// Resize sets the size of the terminal of an agent run on one
// (Spec.Terminal); the kernel tells the agent with SIGWINCH.
func (h *Handle) Resize(ctx context.Context, cols, rows uint16) error {
	payload := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, cols), rows)
	if err := h.request(ctx, opResize, payload); err != nil {
		return fmt.Errorf("supervisor: resize to %dx%d: %w", cols, rows, err)
	}
	return nil
}

// RecordingPath is the path of the recording of an agent run on a
// terminal, empty when it keeps none.
func (h *Handle) RecordingPath() string { return h.pids.Recording }

// Close lets go of the handle's files and connection; the supervisor runs
// on. It is safe to call twice; outputs being iterated fail after it.
func (h *Handle) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.ctlMu.Lock()
		if h.conn != nil {
			err = h.conn.Close()
			h.conn = nil
		}
		h.ctlMu.Unlock()
		err = errors.Join(err, h.lock.Close())
	})
	return err
}

// Remove deletes the state directory, once the daemon has dealt with the
// agent's output and end. It refuses while the supervisor runs.
func (h *Handle) Remove() error {
	gone, err := supervisorGone(h.dir)
	if err != nil {
		return fmt.Errorf("supervisor: remove %s: %w", h.dir, err)
	}
	if !gone {
		return fmt.Errorf("remove %s: %w", h.dir, ErrRunning)
	}
	return errors.Join(h.Close(), os.RemoveAll(h.dir))
}
