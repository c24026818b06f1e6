package terminal

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

var (
	// ErrNotFound reports a terminal id the registry does not know.
	ErrNotFound = errors.New("terminal: not found")

	// ErrExited reports an operation on a terminal whose process has exited.
	ErrExited = errors.New("terminal: process exited")

	// ErrExists reports an Open with a terminal id that is already in use.
	ErrExists = errors.New("terminal: id already in use")

	// ErrClosed reports an Open on a registry that has been closed.
	ErrClosed = errors.New("terminal: registry closed")

	// ErrRunning reports a Remove of a terminal that has not finished.
	ErrRunning = errors.New("terminal: still running")
)

// Defaults applied by Open to zero OpenOptions fields.
const (
	DefaultCols            = 120
	DefaultRows            = 40
	DefaultScrollbackBytes = 256 << 10
	DefaultTerm            = "xterm-256color"
)

// DefaultKillGrace is how long Close waits after SIGTERM before it sends
// SIGKILL, when Registry.KillGrace is zero.
const DefaultKillGrace = 3 * time.Second

// Log attribute keys.
const (
	logKeyTerminal  = "terminal"
	logKeyExecution = "agent_execution"
	logKeyPid       = "pid"
	logKeyExitCode  = "exit_code"
	logKeyPath      = "path"
	logKeyErr       = "err"
)

// OpenOptions describes the process to start on a new terminal.
type OpenOptions struct {
	// ID is the terminal id. When empty, Open generates one ("term-" and
	// 16 random hex digits).
	ID string
	// AgentExecutionID names the recording file. Required when
	// RecordingDir is set.
	AgentExecutionID string
	// Command is the program to run, looked up in PATH when it holds no
	// slash. Required.
	Command string
	Args    []string
	// Env is the process environment. Nil means the daemon's own
	// environment. TERM=DefaultTerm is added when Env holds no TERM.
	Env []string
	// Dir is the working directory; empty means the daemon's.
	Dir string
	// Cols and Rows are the initial size; zero means 120x40.
	Cols, Rows uint16
	// RecordingDir is the data directory's terminal-recordings folder,
	// created 0700 when missing. Empty means no recording.
	RecordingDir string
	// ScrollbackBytes bounds the recent output kept for Snapshot.Recent;
	// zero means 256 KiB.
	ScrollbackBytes int
	// OnOutput, when set, is called on the reading goroutine with each
	// output chunk, in order. The slice is reused after the call returns
	// (copy it to keep it). It must not block long: the agent's output
	// waits while it runs.
	OnOutput func(data []byte)
}

// withDefaults fills zero fields and reports every problem at once.
func (o OpenOptions) withDefaults() (OpenOptions, error) {
	var errs []error
	if o.ID != "" {
		if _, err := eventstore.EscapeID(o.ID); err != nil {
			errs = append(errs, fmt.Errorf("terminal id: %w", err))
		}
	}
	if o.Command == "" {
		errs = append(errs, errors.New("command is empty (want a program name or path)"))
	}
	if o.RecordingDir != "" {
		if o.AgentExecutionID == "" {
			errs = append(errs, errors.New("agent execution id is empty (required when recording)"))
		} else if _, err := eventstore.EscapeID(o.AgentExecutionID); err != nil {
			errs = append(errs, fmt.Errorf("agent execution id: %w", err))
		}
	}
	if o.ScrollbackBytes < 0 {
		errs = append(errs, fmt.Errorf("scrollback bytes %d is negative (want 0 for the default or a positive size)", o.ScrollbackBytes))
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	o.Cols = cmp.Or(o.Cols, DefaultCols)
	o.Rows = cmp.Or(o.Rows, DefaultRows)
	o.ScrollbackBytes = cmp.Or(o.ScrollbackBytes, DefaultScrollbackBytes)
	return o, nil
}

// Registry keeps the live terminals of one daemon, addressable by id. A
// terminal stays in the registry after its process exits, so its snapshot
// and exit code remain readable, until Remove drops it.
type Registry struct {
	// KillGrace is how long Close waits after SIGTERM before SIGKILL.
	// Zero means DefaultKillGrace. Set it before calling Close.
	KillGrace time.Duration

	logger *slog.Logger

	mu      sync.Mutex
	terms   map[string]*Terminal // a nil value reserves an id during Open
	closed  bool
	pending sync.WaitGroup // Opens past the closed check

	wg        sync.WaitGroup // every goroutine of every terminal
	closeOnce sync.Once
	closeErr  error
}

// NewRegistry returns an empty registry. A nil logger discards.
func NewRegistry(logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{logger: logger, terms: make(map[string]*Terminal)}
}

// Open starts o.Command on a new PTY and registers it. The context bounds
// only the start; the process lives until it exits, is signalled, or the
// registry is closed. When o.RecordingDir is set the recording file is
// created before the process starts, so a lane that cannot be recorded
// never runs.
func (r *Registry) Open(ctx context.Context, o OpenOptions) (*Terminal, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open terminal: %w", err)
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open terminal: %w", err)
	}
	if o.ID == "" {
		o.ID = newTerminalID()
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("open terminal %s: %w", o.ID, ErrClosed)
	}
	if _, used := r.terms[o.ID]; used {
		r.mu.Unlock()
		return nil, fmt.Errorf("open terminal %s: %w", o.ID, ErrExists)
	}
	r.terms[o.ID] = nil
	r.pending.Add(1)
	r.mu.Unlock()
	defer r.pending.Done()

	t, err := start(o, r.logger.With(logKeyTerminal, o.ID), &r.wg)
	r.mu.Lock()
	if err != nil {
		delete(r.terms, o.ID)
	} else {
		r.terms[o.ID] = t
	}
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("open terminal %s: %w", o.ID, err)
	}
	return t, nil
}

// Attach returns the terminal with the given id, running or exited.
func (r *Registry) Attach(id string) (*Terminal, error) {
	r.mu.Lock()
	t := r.terms[id]
	r.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("terminal %q: %w", id, ErrNotFound)
	}
	return t, nil
}

// Snapshot returns the current state of a terminal.
func (r *Registry) Snapshot(id string) (Snapshot, error) {
	t, err := r.Attach(id)
	if err != nil {
		return Snapshot{}, err
	}
	return t.Snapshot(), nil
}

// Input writes raw bytes to a terminal. See Terminal.Input.
func (r *Registry) Input(id string, data []byte) error {
	t, err := r.Attach(id)
	if err != nil {
		return err
	}
	return t.Input(data)
}

// Resize changes a terminal's size. See Terminal.Resize.
func (r *Registry) Resize(id string, cols, rows uint16) error {
	t, err := r.Attach(id)
	if err != nil {
		return err
	}
	return t.Resize(cols, rows)
}

// all returns the terminals registered now, in no order; the map's nil
// entries (an id being opened) are left out.
func (r *Registry) all() []*Terminal {
	r.mu.Lock()
	defer r.mu.Unlock()
	terms := make([]*Terminal, 0, len(r.terms))
	for _, t := range r.terms {
		if t != nil {
			terms = append(terms, t)
		}
	}
	return terms
}

// List returns a snapshot of every terminal, oldest first.
func (r *Registry) List() []Snapshot {
	terms := r.all()
	out := make([]Snapshot, 0, len(terms))
	for _, t := range terms {
		out = append(out, t.Snapshot())
	}
	slices.SortFunc(out, func(a, b Snapshot) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Remove drops a finished terminal (Done closed) from the registry,
// releasing its scrollback. It reports ErrNotFound for an unknown id and
// ErrRunning for a terminal that has not finished.
func (r *Registry) Remove(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.terms[id]
	if t == nil {
		return fmt.Errorf("terminal %q: %w", id, ErrNotFound)
	}
	select {
	case <-t.done:
	default:
		return fmt.Errorf("remove terminal %s: %w (signal it and wait for Done first)", id, ErrRunning)
	}
	delete(r.terms, id)
	return nil
}

// Close stops every terminal still running: SIGTERM to its process group,
// then SIGKILL after KillGrace. An adopted terminal is detached instead:
// its process belongs to the process that holds its PTY. It waits for the processes to exit, the
// recordings to be written and closed, and every goroutine of the registry
// (readers, waiters, flushers, subscriber deliveries) to return. Subscribers
// still draining are stopped. Open fails after Close; Attach, Snapshot and
// List keep working. Close is safe to call twice.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *Registry) close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.pending.Wait()

	terms := r.all()
	for _, t := range terms {
		// Its process is its holder's, and runs on.
		t.Detach()
	}

	var errs []error
	running := func() []*Terminal {
		var out []*Terminal
		for _, t := range terms {
			select {
			case <-t.done:
			default:
				out = append(out, t)
			}
		}
		return out
	}
	for _, t := range running() {
		if err := t.killGroup(syscall.SIGTERM); err != nil && !errors.Is(err, ErrExited) {
			errs = append(errs, err)
		}
	}
	grace := r.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	timer := time.NewTimer(grace)
wait:
	for _, t := range running() {
		select {
		case <-t.done:
		case <-timer.C:
			break wait
		}
	}
	timer.Stop()
	for _, t := range running() {
		r.logger.Warn("terminal ignored SIGTERM; killing", logKeyTerminal, t.id, logKeyPid, t.pid)
		if err := t.killGroup(syscall.SIGKILL); err != nil && !errors.Is(err, ErrExited) {
			errs = append(errs, err)
		}
	}
	for _, t := range terms {
		<-t.done
		t.stopSubscribers()
	}
	r.wg.Wait()
	return errors.Join(errs...)
}

// newTerminalID returns "term-" and 16 random hex digits.
func newTerminalID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return "term-" + hex.EncodeToString(b[:])
}
