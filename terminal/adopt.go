package terminal

import (
	"cmp"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Holder is the process that holds an adopted terminal's PTY (the agent's
// supervisor, which outlives the daemon): the terminal passes its input,
// resizes and signals on to it. A Holder that finds the process gone
// returns an error wrapping ErrExited.
type Holder interface {
	Input(data []byte) error
	Resize(cols, rows uint16) error
	Signal(sig syscall.Signal) error
}

// AdoptOptions describes a terminal whose process and PTY another process
// holds.
type AdoptOptions struct {
	// ID is the terminal id; empty means a new one (NewID). A terminal
	// adopted again after a restart keeps the id it had.
	ID               string
	AgentExecutionID string
	Command          string
	Args             []string
	// Cols and Rows are the size the PTY has now; zero means 120x40.
	Cols, Rows uint16
	// Pid is the process's pid, also its process group and session id.
	Pid int
	// RecordingPath names the recording its holder writes, if any.
	RecordingPath string
	// StartedAt is when the process started; zero means now.
	StartedAt       time.Time
	ScrollbackBytes int
	Holder          Holder
}

// NewID returns a new terminal id: "term-" and 16 random hex digits.
func NewID() string { return newTerminalID() }

// Adopt registers a terminal whose PTY o.Holder holds, so that it is
// served as any other: snapshots, subscribers, input and resizes. Its
// output is what the caller hands to Feed (which fills the scrollback and
// feeds subscribers); Finish records its exit and Detach lets it go
// without one. Close detaches adopted terminals and never signals them:
// their process belongs to their holder.
func (r *Registry) Adopt(o AdoptOptions) (*Terminal, error) {
	var errs []error
	if o.ID != "" {
		if _, err := eventstore.EscapeID(o.ID); err != nil {
			errs = append(errs, fmt.Errorf("terminal id: %w", err))
		}
	}
	if o.Holder == nil {
		errs = append(errs, errors.New("no holder (want the process that holds the PTY)"))
	}
	if o.Pid <= 0 {
		errs = append(errs, fmt.Errorf("pid %d (want the process's pid)", o.Pid))
	}
	if o.ScrollbackBytes < 0 {
		errs = append(errs, fmt.Errorf("scrollback bytes %d is negative (want 0 for the default or a positive size)", o.ScrollbackBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("adopt terminal: %w", err)
	}
	if o.ID == "" {
		o.ID = newTerminalID()
	}
	t := &Terminal{
		id:               o.ID,
		agentExecutionID: o.AgentExecutionID,
		command:          commandLine(o.Command, o.Args),
		startedAt:        cmp.Or(o.StartedAt, time.Now()),
		pid:              o.Pid,
		holder:           o.Holder,
		recordingPath:    o.RecordingPath,
		logger:           r.logger.With(logKeyTerminal, o.ID),
		wg:               &r.wg,
		cols:             cmp.Or(o.Cols, DefaultCols),
		rows:             cmp.Or(o.Rows, DefaultRows),
		connected:        true,
		scroll:           ring{size: cmp.Or(o.ScrollbackBytes, DefaultScrollbackBytes)},
		subs:             make(map[*subscriber]struct{}),
		readerDone:       make(chan struct{}),
		done:             make(chan struct{}),
	}
	close(t.readerDone)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("adopt terminal %s: %w", o.ID, ErrClosed)
	}
	if _, used := r.terms[o.ID]; used {
		return nil, fmt.Errorf("adopt terminal %s: %w", o.ID, ErrExists)
	}
	r.terms[o.ID] = t
	return t, nil
}

// Adopted reports whether another process holds the terminal's PTY.
func (t *Terminal) Adopted() bool { return t.holder != nil }

// Feed hands an adopted terminal output its holder read from the PTY, in
// order: to the scrollback and the subscribers. Output fed after Finish or
// Detach is dropped. It must be called from one goroutine at a time.
func (t *Terminal) Feed(data []byte) {
	if t.holder == nil || t.isDone() {
		return
	}
	t.output(data)
}

// Finish records that an adopted terminal's process exited with code
// (128+n for signal n): the snapshot says so, and subscribers are told
// there is no more output. Later calls, and calls after Detach, do nothing.
func (t *Terminal) Finish(code int) { t.end(true, code) }

// Detach lets an adopted terminal go without an exit: its process runs on
// under its holder, and this terminal is done here (Done is closed; its
// snapshot stays readable, not connected).
func (t *Terminal) Detach() { t.end(false, 0) }

func (t *Terminal) end(exited bool, code int) {
	if t.holder == nil {
		return
	}
	t.endOnce.Do(func() {
		t.mu.Lock()
		t.connected = false
		if exited {
			t.exited, t.exitCode, t.exitedAt = true, code, time.Now()
		}
		t.subsClosed = true
		for s := range t.subs {
			s.close()
		}
		t.mu.Unlock()
		close(t.done)
	})
}

func (t *Terminal) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// holderErr maps a holder's error to this package's: a gone process is
// ErrExited.
func (t *Terminal) holderErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrExited) {
		return fmt.Errorf("%s terminal %s: %w", op, t.id, ErrExited)
	}
	return fmt.Errorf("%s terminal %s: %w", op, t.id, err)
}
