package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agentjournal/agentjournal/runtime"

	"golang.org/x/term"

	"github.com/agentjournal/agentjournal/terminal"
)

// stopKey stops an interactive run: Ctrl-], the escape key of telnet. In
// raw mode every other key, Ctrl-C included, goes to the agent.
const stopKey = 0x1d

// errStopKey is why a run the stop key stopped ended.
var errStopKey = errors.New("stopped with Ctrl-]")

// passthrough makes the user's terminal the agent's, as if the agent ran
// in it: the terminal is in raw mode, every key is typed into the agent's
// terminal lane through the runtime (and so into the lane's recording, as
// the API's terminal input is), and the lane's size follows the
// terminal's. The lane's output reaches the terminal through the runtime
// (runtime.Config.TerminalOutput). A question the agent asks through the
// journal is answered on a line read in the terminal's own mode
// (readLine).
type passthrough struct {
	fd    int         // run's stdin: the user's terminal
	saved *term.State // its mode before run, which close restores
	// keys is the same terminal opened again, so that close can end a
	// read of the next key (see openTerminal).
	keys   *os.File
	stderr *flushWriter // switched to CR LF line ends while raw
	stop   func()

	// Set by start; keys and sizes are not read before.
	rt    *runtime.Runtime
	terms *terminal.Registry
	id    string

	mu      sync.Mutex
	started bool // makeRaw was called
	closed  bool
	raw     bool
	stopped bool
	// line, while a question waits for its answer, gets the next line
	// typed; partial is what was typed of it so far.
	line    chan string
	partial []byte

	winch chan os.Signal
	quit  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// newPassthrough prepares passing the terminal on stdin through to an
// agent: makeRaw before the agent starts, so that its first output is
// shown as it comes too, then start. stop is called when the stop key is
// typed.
func newPassthrough(stdin *os.File, stderr *flushWriter, stop func()) (*passthrough, error) {
	fd := int(stdin.Fd())
	saved, err := term.GetState(fd)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's mode: %w", err)
	}
	keys, err := openTerminal(stdin)
	if err != nil {
		return nil, err
	}
	return &passthrough{fd: fd, saved: saved, keys: keys, stderr: stderr, stop: stop,
		winch: make(chan os.Signal, 1), quit: make(chan struct{})}, nil
}

// openTerminal opens the terminal f is on a second time. Keys are read
// through that descriptor, which the runtime's poller serves, so that
// close ends a read waiting for the next key; f's own descriptor, which
// run shares with the shell, is left as it is.
func openTerminal(f *os.File) (*os.File, error) {
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !strings.HasPrefix(name, "/dev/") {
		name = "/dev/tty"
	}
	keys, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open the terminal to read keys: %w", err)
	}
	return keys, nil
}

// size is the terminal's size, or 0 when it cannot be read.
func (p *passthrough) size() (cols, rows uint16) {
	w, h, err := term.GetSize(p.fd)
	if err != nil || w <= 0 || h <= 0 || w > 0xffff || h > 0xffff {
		return 0, 0
	}
	return uint16(w), uint16(h)
}

// makeRaw puts the terminal in raw mode, until close.
func (p *passthrough) makeRaw() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Size changes are watched from now on; start passes them on.
	signal.Notify(p.winch, syscall.SIGWINCH)
	p.started = true
	return p.applyMode()
}

// start passes keys and size changes to the terminal lane of execution id
// until close.
func (p *passthrough) start(rt *runtime.Runtime, terms *terminal.Registry, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.rt, p.terms, p.id = rt, terms, id
	// The lane started at the terminal's size; it may have changed since.
	p.resize()
	p.wg.Go(p.followSize)
	p.wg.Go(p.readKeys)
}

// applyMode puts the terminal in raw mode from makeRaw to close, except
// while a question reads a line, in the terminal's own mode. The caller
// holds mu.
func (p *passthrough) applyMode() error {
	want := p.started && !p.closed && p.line == nil
	if want == p.raw {
		return nil
	}
	var err error
	if want {
		_, err = term.MakeRaw(p.fd)
	} else {
		err = term.Restore(p.fd, p.saved)
	}
	if err != nil {
		return fmt.Errorf("set the terminal's mode: %w", err)
	}
	p.raw = want
	p.stderr.setCRLF(want)
	return nil
}

// followSize passes every change of the terminal's size on to the lane.
func (p *passthrough) followSize() {
	for {
		select {
		case <-p.quit:
			return
		case <-p.winch:
			p.resize()
		}
	}
}

// resize gives the lane the terminal's size; the kernel tells the agent
// with SIGWINCH. A lane that has exited has no size to set.
func (p *passthrough) resize() {
	cols, rows := p.size()
	if cols == 0 {
		return
	}
	if tid, ok := p.rt.TerminalID(p.id); ok {
		_ = p.terms.Resize(tid, cols, rows)
	}
}

// readKeys reads the terminal until close, and hands on what was typed.
func (p *passthrough) readKeys() {
	buf := make([]byte, 4096)
	for {
		n, err := p.keys.Read(buf)
		if n > 0 {
			p.typed(buf[:n])
		}
		if err != nil {
			// End of input at a question (Ctrl-D) answers nothing; the
			// terminal goes on. Any other end is the terminal's.
			if errors.Is(err, io.EOF) && p.endLine() {
				continue
			}
			return
		}
	}
}

// typed hands on keys: to a question waiting for its line, else to the
// agent, up to the stop key.
func (p *passthrough) typed(data []byte) {
	p.mu.Lock()
	if p.stopped || p.closed {
		p.mu.Unlock()
		return
	}
	if p.line != nil {
		p.partial = append(p.partial, data...)
		if i := bytes.IndexByte(p.partial, '\n'); i >= 0 {
			p.line <- string(p.partial[:i])
			p.line, p.partial = nil, nil
		}
		p.mu.Unlock()
		return
	}
	send, stop := data, false
	if i := bytes.IndexByte(data, stopKey); i >= 0 {
		send, stop = data[:i], true
		p.stopped = true
	}
	p.mu.Unlock()
	if len(send) > 0 {
		err := p.rt.TerminalInput(p.id, send)
		if err != nil && !errors.Is(err, runtime.ErrNotRunning) && !errors.Is(err, terminal.ErrExited) {
			fmt.Fprintf(p.stderr, "agentjournal: %v\n", err)
		}
	}
	if stop {
		p.stop()
	}
}

// endLine ends the line a question waits for without an answer, and
// reports whether one was waiting.
func (p *passthrough) endLine() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line == nil {
		return false
	}
	close(p.line)
	p.line, p.partial = nil, nil
	return true
}

// readLine implements lineReader: it puts the terminal back in its own
// mode, where the line is echoed and can be edited, and returns the next
// line typed. ok is false when done or close comes first, when input ends
// (Ctrl-D) or when the line holds the stop key, which stops the run.
func (p *passthrough) readLine(done <-chan struct{}) (string, bool) {
	ch := make(chan string, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", false
	}
	p.line, p.partial = ch, nil
	err := p.applyMode()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.line == ch {
			p.line, p.partial = nil, nil
		}
		if err := p.applyMode(); err != nil {
			fmt.Fprintf(p.stderr, "agentjournal: %v\n", err)
		}
		p.mu.Unlock()
	}()
	if err != nil {
		fmt.Fprintf(p.stderr, "agentjournal: %v\n", err)
		return "", false
	}
	select {
	case s, ok := <-ch:
		if !ok {
			return "", false
		}
		if strings.IndexByte(s, stopKey) >= 0 {
			p.mu.Lock()
			p.stopped = true
			p.mu.Unlock()
			p.stop()
			return "", false
		}
		return strings.TrimRight(s, "\r"), true
	case <-done:
	case <-p.quit:
	}
	return "", false
}

// close restores the terminal's mode and stops passing keys and sizes on.
// It is safe to call twice; only the first call returns an error.
func (p *passthrough) close() error {
	var err error
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		// The terminal is the user's again before anything is waited for.
		err = p.applyMode()
		p.mu.Unlock()
		signal.Stop(p.winch)
		close(p.quit)
		// Closing the descriptor ends the read of the next key.
		p.keys.Close()
		p.wg.Wait()
	})
	return err
}
