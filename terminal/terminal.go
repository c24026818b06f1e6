package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
)

const (
	// readBufferSize is the largest chunk read from the PTY at once.
	readBufferSize = 32 << 10

	// drainGrace is how long the reader may keep draining the PTY after
	// the process exited. Output still buffered is read in microseconds;
	// the grace only matters when a background child holds the PTY open,
	// and then the lane is closed under it.
	drainGrace = time.Second

	// inputTimeout bounds one Input: a child that does not read its
	// terminal must not hold the caller forever.
	inputTimeout = 10 * time.Second
)

// Snapshot is the state of one terminal at one moment.
type Snapshot struct {
	ID               string `json:"id"`
	AgentExecutionID string `json:"agentExecutionId,omitempty"`
	// Command is the command line, arguments quoted as a shell would need.
	Command string `json:"command"`
	Cols    uint16 `json:"cols"`
	Rows    uint16 `json:"rows"`
	// Connected reports that the PTY is open and its output is being read.
	Connected bool `json:"connected"`
	// Dead reports that the process has exited; ExitCode and ExitedAt are
	// set from then on.
	Dead bool `json:"dead"`
	// ExitCode is the process's exit status, or 128+n when signal n
	// killed it (the shell convention).
	ExitCode *int `json:"exitCode,omitempty"`
	// Recent is the tail of the output, at most ScrollbackBytes, raw
	// (escape sequences included) and starting on a rune boundary.
	Recent        string     `json:"recent"`
	RecordingPath string     `json:"recordingPath,omitempty"`
	StartedAt     time.Time  `json:"startedAt"`
	ExitedAt      *time.Time `json:"exitedAt,omitempty"`
}

// Terminal is one process running on its own PTY. All methods are safe for
// concurrent use.
type Terminal struct {
	id, agentExecutionID, command string
	startedAt                     time.Time
	pid                           int
	cmd                           *exec.Cmd
	master                        *os.File
	rec                           *recorder // nil when not recording
	onOutput                      func([]byte)
	logger                        *slog.Logger
	wg                            *sync.WaitGroup
	// holder, for an adopted terminal, holds its PTY in another process;
	// cmd, master and rec are then nil (adopt.go).
	holder        Holder
	recordingPath string
	endOnce       sync.Once

	inMu   sync.Mutex // orders PTY writes with their "i" events
	sizeMu sync.Mutex // orders resizes with their "r" events

	mu         sync.Mutex // guards the fields below
	cols, rows uint16
	connected  bool
	exited     bool
	exitCode   int
	exitedAt   time.Time
	waitErr    error
	scroll     ring
	subs       map[*subscriber]struct{}
	subsClosed bool

	readerDone chan struct{}
	done       chan struct{}
}

// start creates the recording, starts the process on a new PTY and the
// goroutines that serve it. Every goroutine is counted in wg.
func start(o OpenOptions, logger *slog.Logger, wg *sync.WaitGroup) (*Terminal, error) {
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	term := lookupEnv(env, "TERM")
	if term == "" {
		term = DefaultTerm
		env = append(env[:len(env):len(env)], "TERM="+term)
	}
	command := commandLine(o.Command, o.Args)
	now := time.Now()

	var rec *recorder
	if o.RecordingDir != "" {
		var err error
		rec, err = createRecording(o.RecordingDir, o.AgentExecutionID, Header{
			Version:   2,
			Width:     int(o.Cols),
			Height:    int(o.Rows),
			Timestamp: now.Unix(),
			Command:   command,
			Env:       map[string]string{"TERM": term},
		}, now)
		if err != nil {
			return nil, err
		}
	}
	abandon := func(err error) (*Terminal, error) {
		if rec != nil {
			rec.abandon()
		}
		return nil, err
	}

	cmd := exec.Command(o.Command, o.Args...)
	cmd.Env = env
	cmd.Dir = o.Dir
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: o.Cols, Rows: o.Rows})
	if err != nil {
		return abandon(fmt.Errorf("start %s: %w", o.Command, err))
	}
	master, err := pollable(ptmx)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return abandon(fmt.Errorf("start %s: %w", o.Command, err))
	}

	t := &Terminal{
		id:               o.ID,
		agentExecutionID: o.AgentExecutionID,
		command:          command,
		startedAt:        now,
		pid:              cmd.Process.Pid,
		cmd:              cmd,
		master:           master,
		rec:              rec,
		onOutput:         o.OnOutput,
		logger:           logger,
		wg:               wg,
		cols:             o.Cols,
		rows:             o.Rows,
		connected:        true,
		scroll:           ring{size: o.ScrollbackBytes},
		subs:             make(map[*subscriber]struct{}),
		readerDone:       make(chan struct{}),
		done:             make(chan struct{}),
	}
	if rec != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.flushLoop()
		}()
	}
	wg.Add(2)
	go t.readLoop()
	go t.waitLoop()
	logger.Debug("terminal started", logKeyExecution, o.AgentExecutionID, logKeyPid, t.pid)
	return t, nil
}

// ID returns the terminal id.
func (t *Terminal) ID() string { return t.id }

// Pid returns the process id of the terminal's process, which is also its
// process group and session id.
func (t *Terminal) Pid() int { return t.pid }

// Done is closed once the process has exited, its output has been read,
// the recording has been completed and closed, and subscribers have been
// told there is no more output.
func (t *Terminal) Done() <-chan struct{} { return t.done }

// Wait blocks until Done is closed or ctx ends, and returns the exit code
// (128+n for a process killed by signal n).
func (t *Terminal) Wait(ctx context.Context) (exitCode int, err error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return -1, fmt.Errorf("wait for terminal %s: %w", t.id, ctx.Err())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exitCode, t.waitErr
}

// Signal delivers sig to the terminal's process group: the process and
// every child it did not move to another group. It reports ErrExited once
// the process has exited.
func (t *Terminal) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal terminal %s: unsupported signal %v (want a syscall.Signal)", t.id, sig)
	}
	t.mu.Lock()
	exited := t.exited
	t.mu.Unlock()
	if exited {
		return fmt.Errorf("signal terminal %s: %w", t.id, ErrExited)
	}
	return t.killGroup(s)
}

func (t *Terminal) killGroup(s syscall.Signal) error {
	if t.holder != nil {
		return t.holderErr("signal", t.holder.Signal(s))
	}
	if err := syscall.Kill(-t.pid, s); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal terminal %s: %w", t.id, ErrExited)
		}
		return fmt.Errorf("signal terminal %s with %v: %w", t.id, s, err)
	}
	return nil
}

// Input writes raw bytes to the terminal, as if typed. They go to the PTY
// and to the recording ("i" events), nowhere else. It reports ErrExited
// once the process has exited, and an error after inputTimeout when the
// child does not read its terminal.
func (t *Terminal) Input(data []byte) error {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	if t.hasExited() {
		return fmt.Errorf("input to terminal %s: %w", t.id, ErrExited)
	}
	if t.holder != nil {
		// The holder writes it and records it.
		return t.holderErr("input to", t.holder.Input(data))
	}
	if err := t.master.SetWriteDeadline(time.Now().Add(inputTimeout)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return fmt.Errorf("input to terminal %s: %w", t.id, laneErr(err))
	}
	n, err := t.master.Write(data)
	if n > 0 && t.rec != nil {
		t.rec.input(data[:n])
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("input to terminal %s: %d of %d bytes written, the process is not reading its terminal: %w", t.id, n, len(data), err)
		}
		return fmt.Errorf("input to terminal %s: %w", t.id, laneErr(err))
	}
	return nil
}

// Resize changes the terminal's size; the kernel sends SIGWINCH to the
// foreground process group. The recording gets an "r" event "COLSxROWS".
func (t *Terminal) Resize(cols, rows uint16) error {
	if cols == 0 || rows == 0 {
		return fmt.Errorf("resize terminal %s: size %dx%d (want columns and rows above 0)", t.id, cols, rows)
	}
	t.sizeMu.Lock()
	defer t.sizeMu.Unlock()
	if t.hasExited() {
		return fmt.Errorf("resize terminal %s: %w", t.id, ErrExited)
	}
	if t.holder != nil {
		if err := t.holder.Resize(cols, rows); err != nil {
			return t.holderErr("resize", err)
		}
	} else if err := setSize(t.master, cols, rows); err != nil {
		return fmt.Errorf("resize terminal %s: %w", t.id, laneErr(err))
	}
	t.mu.Lock()
	t.cols, t.rows = cols, rows
	t.mu.Unlock()
	if t.rec != nil {
		t.rec.resize(cols, rows)
	}
	return nil
}

// Subscribe calls fn on its own goroutine with every output chunk read
// from now on, in order. The chunk is shared with other subscribers and
// must not be modified. A subscriber that falls more than
// subscriberQueueBytes behind loses the chunks that do not fit, so it can
// never stall the terminal; it can resynchronise from Snapshot().Recent.
// When the terminal finishes, queued chunks are still delivered and then
// fn is no longer called. The returned function unsubscribes; it does not
// wait for a running fn and may be called from inside fn. fn must return:
// Registry.Close waits for it.
func (t *Terminal) Subscribe(fn func(data []byte)) (unsubscribe func()) {
	s := newSubscriber(fn)
	t.mu.Lock()
	if t.subsClosed {
		t.mu.Unlock()
		return func() {}
	}
	t.subs[s] = struct{}{}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		s.run()
	}()
	return func() {
		t.mu.Lock()
		delete(t.subs, s)
		t.mu.Unlock()
		s.stop()
	}
}

// stopSubscribers ends every subscriber delivery still running.
func (t *Terminal) stopSubscribers() {
	t.mu.Lock()
	subs := make([]*subscriber, 0, len(t.subs))
	for s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
}

// Snapshot returns the terminal's current state.
func (t *Terminal) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{
		ID:               t.id,
		AgentExecutionID: t.agentExecutionID,
		Command:          t.command,
		Cols:             t.cols,
		Rows:             t.rows,
		Connected:        t.connected,
		Dead:             t.exited,
		Recent:           t.scroll.tail(),
		StartedAt:        t.startedAt,
	}
	if t.rec != nil {
		s.RecordingPath = t.rec.path
	}
	if t.holder != nil {
		s.RecordingPath = t.recordingPath
	}
	if t.exited {
		code, at := t.exitCode, t.exitedAt
		s.ExitCode, s.ExitedAt = &code, &at
	}
	return s
}

func (t *Terminal) hasExited() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exited
}

// readLoop reads the PTY until it reports end of file (EIO on Linux once
// every slave descriptor is closed) or waitLoop closes it, and hands every
// chunk on.
// Nothing it calls may block on a subscriber.
func (t *Terminal) readLoop() {
	defer t.wg.Done()
	defer close(t.readerDone)
	defer func() {
		t.mu.Lock()
		t.connected = false
		t.mu.Unlock()
	}()
	buf := make([]byte, readBufferSize)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			t.output(buf[:n])
		}
		if err != nil {
			if !endOfLane(err) {
				t.logger.Warn("terminal read failed", logKeyErr, err)
			}
			return
		}
	}
}

func (t *Terminal) output(p []byte) {
	if t.rec != nil {
		t.rec.output(p)
	}
	if t.onOutput != nil {
		t.onOutput(p)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scroll.write(p)
	if len(t.subs) > 0 {
		chunk := bytes.Clone(p)
		for s := range t.subs {
			s.push(chunk)
		}
	}
}

// waitLoop reaps the process, lets the reader drain the PTY (killing the
// rest of the process group if it still holds the terminal after
// drainGrace), then writes the exit marker, closes the recording and
// closes done.
func (t *Terminal) waitLoop() {
	defer t.wg.Done()
	err := t.cmd.Wait()
	code, waitErr := exitStatus(t.cmd.ProcessState, err)
	t.mu.Lock()
	t.exited = true
	t.exitCode = code
	t.exitedAt = time.Now()
	t.waitErr = waitErr
	t.mu.Unlock()

	timer := time.NewTimer(drainGrace)
	select {
	case <-t.readerDone:
	case <-timer.C:
		// Children of the process still hold the terminal. The lane ends
		// with its process: kill what is left of its group, and close
		// the master below, which wakes the reader.
		t.logger.Warn("terminal still open after its process exited; killing its process group")
		if err := syscall.Kill(-t.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.logger.Warn("kill process group", logKeyErr, err)
		}
	}
	timer.Stop()
	_ = t.master.Close()
	<-t.readerDone

	t.mu.Lock()
	t.subsClosed = true
	for s := range t.subs {
		s.close()
	}
	t.mu.Unlock()

	if t.rec != nil {
		// An Input that wrote before the exit records what it wrote
		// before the recording closes: the process may have read it and
		// ended in the meantime. No Input starts after the exit.
		t.inMu.Lock()
		t.inMu.Unlock()
		if err := t.rec.finish(code); err != nil {
			t.logger.Error("terminal recording incomplete", logKeyPath, t.rec.path, logKeyErr, err)
		}
	}
	t.logger.Debug("terminal exited", logKeyPid, t.pid, logKeyExitCode, code)
	close(t.done)
}

// exitStatus turns the result of cmd.Wait into an exit code, 128+n for a
// process killed by signal n, and an error only for a wait that failed.
func exitStatus(ps *os.ProcessState, err error) (int, error) {
	if ps == nil {
		return -1, fmt.Errorf("wait: %w", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return ps.ExitCode(), fmt.Errorf("wait: %w", err)
	}
	return ps.ExitCode(), nil
}

// endOfLane reports a read error that only means the lane is over: EOF,
// EIO (Linux, once the slave side is closed) or our own Close.
func endOfLane(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO) || errors.Is(err, os.ErrClosed)
}

// laneErr maps errors of a lane that is gone to ErrExited.
func laneErr(err error) error {
	if endOfLane(err) {
		return ErrExited
	}
	return err
}

// pollable replaces the master returned by pty (which that package leaves
// in blocking mode) with a non-blocking duplicate registered with the
// runtime poller, so that Close wakes a blocked Read and write deadlines
// work. The original descriptor is closed.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	nfd := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = errno
			return
		}
		nfd = int(r)
	}); err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("duplicate pty master: %w", dupErr)
	}
	if err := syscall.SetNonblock(nfd, true); err != nil {
		_ = syscall.Close(nfd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// setSize sets the window size without pty.Setsize, which would put the
// master back into blocking mode.
func setSize(f *os.File, cols, rows uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	ws := pty.Winsize{Cols: cols, Rows: rows}
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
		if errno != 0 {
			ioctlErr = errno
		}
	}); err != nil {
		return err
	}
	return ioctlErr
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as in exec
		}
	}
	return v
}

// commandLine joins a command and its arguments, quoting those a shell
// would split or interpret.
func commandLine(command string, args []string) string {
	var b strings.Builder
	b.WriteString(shellQuote(command))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
