package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// child is one process of an execution, reached through its lane.
type child struct {
	lane lane
	// lines, for a supervised process, is its count of journaled stdout
	// lines (and of kept stderr lines), and replayed (replayedErr) the
	// count a runtime before this one journaled (kept) (supervised.go).
	lines       *os.File
	replayed    int
	replayedErr int
	// prefix keeps the ids of observations from different processes of one
	// execution apart.
	prefix  string
	turnEnd *agent.TurnEnd // guarded by process.mu
	// parser reads the process's provider output: its stdout and, for a
	// CLI that writes part of it elsewhere, its session log. parseMu keeps
	// the two in one order.
	parseMu sync.Mutex
	parser  agent.Parser
	// exited is closed once the process's end has been dealt with.
	exited chan struct{}
}

// lane is how the runtime reaches one process of an execution: on pipes,
// on a terminal, or through the supervisor that holds it. Everything else
// about a process (its output, its turns, its end) is the same on every
// lane.
type lane interface {
	// write delivers structured input and says by which transport.
	write(data []byte) (eventstore.DeliveryTransport, error)
	// closeInput closes the agent's stdin, which tells a CLI that reads
	// its turns there that there are no more.
	closeInput()
	// signal reaches the process's whole group.
	signal(sig syscall.Signal) error
	pid() int
}

// pipeLane is a process of this runtime's own on pipes.
type pipeLane struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	// stdin is nil once closed, and for a CLI that gets /dev/null.
	stdin io.WriteCloser
}

func (l *pipeLane) write(data []byte) (eventstore.DeliveryTransport, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stdin == nil {
		return eventstore.TransportAdapter, errors.New("the agent's input is closed")
	}
	_, err := l.stdin.Write(data)
	return eventstore.TransportAdapter, err
}

func (l *pipeLane) closeInput() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stdin != nil {
		l.stdin.Close()
		l.stdin = nil
	}
}

func (l *pipeLane) signal(sig syscall.Signal) error { return syscall.Kill(-l.cmd.Process.Pid, sig) }
func (l *pipeLane) pid() int                        { return l.cmd.Process.Pid }

// terminalLane is a process on a PTY: structured input is typed into it.
type terminalLane struct{ t *terminal.Terminal }

func (l terminalLane) write(data []byte) (eventstore.DeliveryTransport, error) {
	return eventstore.TransportPTY, l.t.Input(data)
}

// closeInput does nothing: a terminal's input stays open until it exits.
func (terminalLane) closeInput()                       {}
func (l terminalLane) signal(sig syscall.Signal) error { return l.t.Signal(sig) }
func (l terminalLane) pid() int                        { return l.t.Pid() }

// supervisedLane is a process a supervisor holds, reached over its control
// socket, which may outlive this runtime (supervised.go). On a terminal
// lane, t is its terminal, adopted into the runtime's Terminals: the
// supervisor holds the PTY, structured input is typed into it.
type supervisedLane struct {
	h *supervisor.Handle
	t *terminal.Terminal
}

func (l supervisedLane) write(data []byte) (eventstore.DeliveryTransport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transport := eventstore.TransportAdapter
	if l.t != nil {
		transport = eventstore.TransportPTY
	}
	return transport, l.h.Input(ctx, data)
}

func (l supervisedLane) closeInput() {
	if l.t != nil {
		// As on a terminal of this runtime's: its input stays open.
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.h.CloseInput(ctx)
}

func (l supervisedLane) signal(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.h.Signal(ctx, sig)
}

func (l supervisedLane) pid() int { return l.h.AgentPID() }

func (c *child) write(data []byte) (eventstore.DeliveryTransport, error) { return c.lane.write(data) }
func (c *child) closeInput()                                             { c.lane.closeInput() }
func (c *child) signal(sig syscall.Signal) error                         { return c.lane.signal(sig) }
func (c *child) pid() int                                                { return c.lane.pid() }

// term returns the child's terminal, nil when it is not on a terminal lane.
func (c *child) term() *terminal.Terminal {
	switch l := c.lane.(type) {
	case terminalLane:
		return l.t
	case supervisedLane:
		return l.t
	}
	return nil
}

// handle returns the supervisor's handle of the child, nil when this
// runtime runs it itself.
func (c *child) handle() *supervisor.Handle {
	if l, ok := c.lane.(supervisedLane); ok {
		return l.h
	}
	return nil
}

// newChild counts a process of the execution and names its output ids: the
// first keeps the plain prefixes, later ones are numbered.
func (p *process) newChild() *child {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.children++
	c := &child{prefix: "out", exited: make(chan struct{})}
	if p.children > 1 {
		c.prefix = fmt.Sprintf("out%d", p.children)
	}
	// The driver reads its CLI's output: one parse of each line.
	if r, ok := p.driver.(agent.Reader); ok && p.adapter.Provider() != "" && r.Output(c.prefix) == nil {
		c.parser = r
	}
	return c
}

// startPipes runs a process of the execution on pipes: structured input on
// stdin (or /dev/null for a CLI that reads none), markers and provider
// events on stdout.
func (rt *Runtime) startPipes(p *process, program string, args []string, withStdin bool) error {
	program, args, err := p.command(program, args)
	if err != nil {
		return err
	}
	cmd := exec.Command(program, args...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	// A process group of its own, so Stop reaches the agent's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdin io.WriteCloser
	if withStdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// A resumed session's log already holds the turns before: only what
	// this process adds is read.
	sideLog, sideFrom := "", int64(0)
	if sl, ok := p.driver.(sideLogger); ok {
		if sideLog = sl.SideLog(p.env); sideLog != "" {
			if info, err := os.Stat(sideLog); err == nil {
				sideFrom = info.Size()
			}
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	rt.noteTurnProcess(p, cmd.Process.Pid)
	c := p.newChild()
	c.lane = &pipeLane{cmd: cmd, stdin: stdin}
	p.mu.Lock()
	p.child = c
	first := p.children == 1
	p.mu.Unlock()
	if first {
		rt.register(p)
	}
	rt.converse(p, c)
	var pumps sync.WaitGroup
	stdoutDone := make(chan struct{})
	pumps.Add(2)
	rt.wg.Add(1)
	go func() {
		defer pumps.Done()
		defer close(stdoutDone)
		rt.pump(p, c, stdout, true)
	}()
	go func() {
		defer pumps.Done()
		rt.pump(p, c, stderr, false)
	}()
	if sideLog != "" {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			rt.tail(p, c, sideLog, sideFrom, stdoutDone)
		}()
	}
	go func() {
		defer rt.wg.Done()
		// Wait only after the pipes are drained, as exec.Cmd requires.
		pumps.Wait()
		hangup(p)
		rt.flush(p, c)
		werr := cmd.Wait()
		rt.forgetTurnProcess(p)
		c.closeInput()
		ps := cmd.ProcessState
		switch {
		case ps != nil:
			rt.exited(p, c, exit{success: ps.Success(), desc: ps.String()})
		default:
			rt.exited(p, c, exit{desc: fmt.Sprint(werr)})
		}
	}()
	return nil
}

// startTerminal runs the agent on a PTY lane: the terminal is recorded,
// structured input is typed into it, and markers are read from its output.
func (rt *Runtime) startTerminal(ctx context.Context, p *process, program string, args []string) error {
	program, args, err := p.command(program, args)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	cols, rows := rt.terminalSize()
	t, err := rt.cfg.Terminals.Open(ctx, terminal.OpenOptions{
		AgentExecutionID: p.ref.AgentExecutionID, Command: program, Args: args, Env: p.env, Dir: p.dir,
		RecordingDir: rt.cfg.RecordingDir, Cols: cols, Rows: rows,
		// The pipe hands output to the line reader; it blocks only while
		// the journal is behind, which slows the agent instead of growing
		// memory.
		OnOutput: func(data []byte) {
			if rt.cfg.TerminalOutput != nil {
				rt.cfg.TerminalOutput.Write(data)
			}
			pw.Write(data)
		},
	})
	if err != nil {
		return err
	}
	c := p.newChild()
	c.lane = terminalLane{t}
	p.mu.Lock()
	p.child = c
	p.mu.Unlock()
	rt.register(p)
	pumped := make(chan struct{})
	rt.wg.Add(1)
	go func() {
		defer close(pumped)
		rt.pump(p, c, pr, true)
	}()
	go func() {
		defer rt.wg.Done()
		code, werr := t.Wait(context.Background())
		pw.Close()
		<-pumped
		rt.flush(p, c)
		switch {
		case werr != nil:
			rt.exited(p, c, exit{desc: werr.Error()})
		case code > 128:
			rt.exited(p, c, exit{desc: fmt.Sprintf("signal: %s", syscall.Signal(code-128))})
		default:
			rt.exited(p, c, exit{success: code == 0, desc: fmt.Sprintf("exit status %d", code)})
		}
	}()
	return nil
}

// terminalSize is the size a terminal lane starts with; 0 means the
// terminal package's default.
func (rt *Runtime) terminalSize() (cols, rows uint16) {
	if rt.cfg.TerminalSize != nil {
		return rt.cfg.TerminalSize()
	}
	return 0, 0
}

// TerminalID returns the terminal lane of a live interactive execution.
func (rt *Runtime) TerminalID(id string) (string, bool) {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	if !ok {
		return "", false
	}
	if c := p.current(); c != nil && c.term() != nil {
		return c.term().ID(), true
	}
	return "", false
}

// TerminalInput types raw input into an execution's terminal lane: the
// native terminal escape hatch. It reaches the PTY and the recording and
// never the journal.
func (rt *Runtime) TerminalInput(id string, data []byte) error {
	rt.mu.Lock()
	p, ok := rt.live[id]
	rt.mu.Unlock()
	var c *child
	if ok {
		c = p.current()
	}
	if c == nil || c.term() == nil {
		return fmt.Errorf("terminal input for %s: %w (no terminal lane)", id, ErrNotRunning)
	}
	return c.term().Input(data)
}
