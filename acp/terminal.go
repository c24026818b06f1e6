package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

const (
	// defaultOutputLimit is the output a terminal keeps when the agent
	// names no outputByteLimit; maxOutputLimit caps what it may name.
	defaultOutputLimit = 1 << 20
	maxOutputLimit     = 16 << 20
	// maxTerminals bounds the terminals an agent holds at once: each is a
	// process.
	maxTerminals = 16
)

// terminals are the commands the agent runs through terminal/create. Each
// runs in the working directory (or a directory inside it), in a process
// group of its own so that kill reaches what it started, its stdout and
// stderr kept together up to its output limit.
type terminals struct {
	mu   sync.Mutex
	next int
	byID map[string]*term
}

type term struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the command has ended

	mu        sync.Mutex
	out       []byte
	limit     int
	truncated bool
	exit      *sdk.TerminalExitStatus
}

func (t *term) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, p...)
	if over := len(t.out) - t.limit; over > 0 {
		// Truncated from the beginning, at a character boundary.
		for over < len(t.out) && !utf8.RuneStart(t.out[over]) {
			over++
		}
		t.out = append(t.out[:0], t.out[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (t *term) status() *sdk.TerminalExitStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exit
}

// kill ends the command's process group; it is a no-op once it has ended.
func (t *term) kill() {
	select {
	case <-t.done:
	default:
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (ts *terminals) get(id string) (*term, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	if !ok {
		return nil, fmt.Errorf("no terminal %q (it was never created, or was released)", id)
	}
	return t, nil
}

// closeAll kills and forgets every terminal: the connection is over.
func (ts *terminals) closeAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, t := range ts.byID {
		t.kill()
		delete(ts.byID, id)
	}
}

var errTooManyTerminals = fmt.Errorf("the agent holds %d terminals already; release one first", maxTerminals)

func (h handler) CreateTerminal(ctx context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	dir := h.c.cfg.Dir
	if p.Cwd != nil {
		// The directory is opened through the working directory's Root,
		// and the command starts in the directory opened, not in whatever
		// the path names by the time it starts.
		d, err := h.c.openDir(*p.Cwd)
		if err != nil {
			return sdk.CreateTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalCreate, fmt.Errorf("cwd: %w", err))
		}
		defer d.Close()
		dir = dirName(d, *p.Cwd)
	}
	limit := defaultOutputLimit
	if p.OutputByteLimit != nil {
		if *p.OutputByteLimit < 0 || *p.OutputByteLimit > maxOutputLimit {
			return sdk.CreateTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalCreate,
				fmt.Errorf("outputByteLimit %d is not accepted (want 0 to %d)", *p.OutputByteLimit, maxOutputLimit))
		}
		limit = *p.OutputByteLimit
	}
	ts := &h.c.terms
	ts.mu.Lock()
	if len(ts.byID) >= maxTerminals {
		ts.mu.Unlock()
		return sdk.CreateTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalCreate, errTooManyTerminals)
	}
	ts.next++
	id := "term-" + strconv.Itoa(ts.next)
	ts.mu.Unlock()

	t := &term{limit: limit, done: make(chan struct{})}
	if len(p.Args) == 0 {
		// A command without args is a command line, as agents send what
		// their model wrote for a shell (claude-code-acp does): a shell
		// runs it.
		t.cmd = exec.Command("/bin/sh", "-c", p.Command)
	} else {
		t.cmd = exec.Command(p.Command, p.Args...)
	}
	t.cmd.Dir = dir
	t.cmd.Env = os.Environ()
	for _, e := range p.Env {
		t.cmd.Env = append(t.cmd.Env, e.Name+"="+e.Value)
	}
	t.cmd.Stdout, t.cmd.Stderr = t, t
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := t.cmd.Start(); err != nil {
		return sdk.CreateTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalCreate, fmt.Errorf("start %q: %w", p.Command, err))
	}
	go func() {
		err := t.cmd.Wait()
		st := &sdk.TerminalExitStatus{}
		var ee *exec.ExitError
		switch {
		case err == nil:
			code := 0
			st.ExitCode = &code
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				sig := ws.Signal().String()
				st.Signal = &sig
			} else {
				code := ee.ExitCode()
				st.ExitCode = &code
			}
		}
		t.mu.Lock()
		t.exit = st
		t.mu.Unlock()
		close(t.done)
	}()
	ts.mu.Lock()
	if ts.byID == nil {
		ts.byID = map[string]*term{}
	}
	ts.byID[id] = t
	ts.mu.Unlock()
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (h handler) TerminalOutput(ctx context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t, err := h.c.terms.get(p.TerminalId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, h.refuse(sdk.ClientMethodTerminalOutput, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return sdk.TerminalOutputResponse{Output: string(t.out), Truncated: t.truncated, ExitStatus: t.exit}, nil
}

func (h handler) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t, err := h.c.terms.get(p.TerminalId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, h.refuse(sdk.ClientMethodTerminalWaitForExit, err)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	st := t.status()
	return sdk.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

func (h handler) KillTerminal(ctx context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	t, err := h.c.terms.get(p.TerminalId)
	if err != nil {
		return sdk.KillTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalKill, err)
	}
	t.kill()
	return sdk.KillTerminalResponse{}, nil
}

func (h handler) ReleaseTerminal(ctx context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	ts := &h.c.terms
	ts.mu.Lock()
	t, ok := ts.byID[p.TerminalId]
	delete(ts.byID, p.TerminalId)
	ts.mu.Unlock()
	if !ok {
		return sdk.ReleaseTerminalResponse{}, h.refuse(sdk.ClientMethodTerminalRelease, fmt.Errorf("no terminal %q (it was never created, or was released)", p.TerminalId))
	}
	t.kill()
	return sdk.ReleaseTerminalResponse{}, nil
}
