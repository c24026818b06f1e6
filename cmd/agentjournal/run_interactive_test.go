package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/terminal"
)

// runProcWait bounds each wait of the tests that run agentjournal run as a
// process; none is a timing assertion.
const runProcWait = 60 * time.Second

// ptyRun is agentjournal run on a terminal the test owns, as a person
// starts it in a terminal window: a process of its own, or Main in this
// process (where the race detector sees it) with the terminal as its
// stdin, stdout and stderr.
type ptyRun struct {
	t         *testing.T
	ptmx, tty *os.File
	cmd       *exec.Cmd          // nil in process
	interrupt context.CancelFunc // in process: what SIGTERM does to main
	exited    chan struct{}
	code      int // set before exited is closed
	readDone  chan struct{}

	mu     sync.Mutex
	screen bytes.Buffer
}

// startOnPTY starts agentjournal with args on a new terminal of cols x
// rows: as a process, the session leader with that terminal as its
// controlling terminal, or in process. Everything it prints is collected
// as the screen.
func startOnPTY(t *testing.T, inProcess bool, cols, rows uint16, args ...string) *ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: cols, Rows: rows}); err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{t: t, ptmx: ptmx, tty: tty, exited: make(chan struct{}), readDone: make(chan struct{})}
	if inProcess {
		ctx, cancel := context.WithCancel(context.Background())
		r.interrupt = cancel
		go func() {
			defer close(r.exited)
			m := Main{Stdin: tty, Stdout: tty, Stderr: tty, Getenv: func(string) string { return "" },
				HomeDir: func() (string, error) { return "", errors.New("tests name the data directory") }}
			r.code = m.Run(ctx, args)
		}()
	} else {
		r.cmd = exec.Command(agentjournalBinary(t), args...)
		r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, tty, tty
		r.cmd.Env = append(os.Environ(), "AGENTJOURNAL_DATA=")
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(r.exited)
			_ = r.cmd.Wait()
			r.code = r.cmd.ProcessState.ExitCode()
		}()
	}
	go func() {
		defer close(r.readDone)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			r.sigterm()
			select {
			case <-r.exited:
			case <-time.After(runProcWait):
				t.Errorf("run did not stop")
			}
		}
		// With the last descriptor of the terminal's side closed, a read
		// of the test's side ends.
		tty.Close()
		select {
		case <-r.readDone:
		case <-time.After(runProcWait):
			t.Errorf("the terminal's output was not read to its end")
		}
		ptmx.Close()
		if t.Failed() {
			t.Logf("the terminal showed:\n%q", r.text())
		}
	})
	return r
}

// sigterm does what SIGTERM does to run.
func (r *ptyRun) sigterm() {
	if r.cmd != nil {
		r.cmd.Process.Signal(syscall.SIGTERM)
		return
	}
	r.interrupt()
}

// resize resizes the terminal; the kernel sends SIGWINCH to the process
// whose terminal it is, and the test sends it itself when run is in this
// process.
func (r *ptyRun) resize(cols, rows uint16) {
	r.t.Helper()
	if err := pty.Setsize(r.ptmx, &pty.Winsize{Cols: cols, Rows: rows}); err != nil {
		r.t.Fatal(err)
	}
	if r.cmd == nil {
		syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	}
}

func (r *ptyRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// exitedReadWait is how long the screen is read after run exited.
const exitedReadWait = 5 * time.Second

// waitFor waits until cond holds for the screen.
func (r *ptyRun) waitFor(what string, cond func(screen string) bool) {
	r.t.Helper()
	deadline := time.Now().Add(runProcWait)
	exited := false
	for !cond(r.text()) {
		select {
		case <-r.exited:
			if !exited {
				// What run wrote last may still be on its way through the
				// terminal: read on a little before calling it missing.
				exited, deadline = true, time.Now().Add(exitedReadWait)
			}
		default:
		}
		if time.Now().After(deadline) {
			if exited {
				r.t.Fatalf("run exited before %s", what)
			}
			r.t.Fatalf("waited %s for %s", runProcWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shows waits until the screen holds s.
func (r *ptyRun) shows(s string) {
	r.t.Helper()
	r.waitFor("the terminal to show "+s, func(screen string) bool { return strings.Contains(screen, s) })
}

// lflag is the local mode of the terminal run is on.
func (r *ptyRun) lflag() uint32 {
	r.t.Helper()
	tio, err := unix.IoctlGetTermios(int(r.tty.Fd()), unix.TCGETS)
	if err != nil {
		r.t.Fatal(err)
	}
	return tio.Lflag
}

// waitRaw waits until run has put its terminal in raw mode: no echo, no
// line editing.
func (r *ptyRun) waitRaw() {
	r.t.Helper()
	r.waitFor("raw mode", func(string) bool { return r.lflag()&(unix.ECHO|unix.ICANON) == 0 })
}

// wait waits for run to exit and returns its exit code.
func (r *ptyRun) wait() int {
	r.t.Helper()
	awaitRunExit(r.t, r.exited)
	return r.code
}

// awaitRunExit waits for exited to close, as it does when run exits.
func awaitRunExit(t *testing.T, exited <-chan struct{}) {
	t.Helper()
	select {
	case <-exited:
	case <-time.After(runProcWait):
		t.Fatalf("run did not exit within %s", runProcWait)
	}
}

// typeKeys writes keys to run's terminal, as typed.
func (r *ptyRun) typeKeys(keys string) {
	r.t.Helper()
	if _, err := r.ptmx.WriteString(keys); err != nil {
		r.t.Fatal(err)
	}
}

// TestRunInteractiveIsTheAgentsTerminal: run --interactive on a terminal
// passes it through to the agent as if the agent ran in it: the agent's
// terminal starts at the terminal's size and follows its resizes, a
// prompt without a line feed shows, keys typed (Ctrl-C included) reach
// the agent unchanged, and the terminal's mode is restored at the end.
func TestRunInteractiveIsTheAgentsTerminal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inProcess bool
	}{{"process", false}, {"in process", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := startOnPTY(t, tc.inProcess, 91, 27, "--data", dir, "run", "--interactive", "--", fixtures.AgentBinary(t), "winch",
				`signal:{"type":"status","payload":{"summary":"asking for a name"}}`, "keys:3:name? ")
			before := r.lflag()
			if before&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
				t.Fatalf("the test's terminal starts with lflag %#x, want echo and icanon", before)
			}
			r.shows("Ctrl-] stops it")
			r.waitRaw()
			r.shows("size: 91x27\r\n")

			r.resize(100, 30)
			r.shows("size: 100x30\r\n")

			// The prompt shows as the agent printed it, with nothing after it.
			r.waitFor(`the prompt "name? " at the end of the screen`, func(s string) bool { return strings.HasSuffix(s, "name? ") })
			r.typeKeys("ab\x03")
			r.shows(`keys: "ab\x03"`)

			if code := r.wait(); code != exitOK {
				t.Fatalf("run exited %d, want 0", code)
			}
			r.shows("lifecycle:         completed")
			if strings.Contains(r.text(), "@@agentjournal") {
				t.Errorf("the agent's marker line was shown:\n%q", r.text())
			}
			if after := r.lflag(); after&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
				t.Fatalf("after run the terminal's lflag is %#x, want echo and icanon back (before: %#x)", after, before)
			}
		})
	}
}

// TestRunInteractiveStops: Ctrl-], or a SIGTERM to run, stops an
// interactive run's agent, and the terminal's mode is restored.
func TestRunInteractiveStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(r *ptyRun)
		want string
	}{
		{"stop key", func(r *ptyRun) { r.typeKeys("\x1d") }, "stopped with Ctrl-]"},
		{"SIGTERM", (*ptyRun).sigterm, "agentjournal: interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startOnPTY(t, false, 80, 24, "--data", t.TempDir(), "run", "--interactive", "--grace", "2s", "--", fixtures.AgentBinary(t), "say:started", "sleep:60s")
			r.shows("started")
			r.waitRaw()
			tc.stop(r)
			if code := r.wait(); code != exitError {
				t.Fatalf("run exited %d, want 1", code)
			}
			// What run wrote last may still be on its way through the
			// terminal: shows reads on after the exit.
			for _, want := range []string{"agentjournal: stopping", "lifecycle:         cancelled", tc.want} {
				r.shows(want)
			}
			if lf := r.lflag(); lf&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
				t.Fatalf("after run the terminal's lflag is %#x, want echo and icanon back", lf)
			}
		})
	}
}

// procRun is agentjournal run started as a process with no terminal.
type procRun struct {
	t              *testing.T
	dir            string
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	exited         chan struct{}
}

// startRunProc starts agentjournal run on dir with args after "run". It has
// no controlling terminal, so nothing is asked there.
func startRunProc(t *testing.T, dir string, args ...string) *procRun {
	t.Helper()
	p := &procRun{t: t, dir: dir, exited: make(chan struct{})}
	p.cmd = exec.Command(agentjournalBinary(t), append([]string{"--data", dir, "run"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.Env = append(os.Environ(), "AGENTJOURNAL_DATA=")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("run's stdout:\n%s\nrun's stderr:\n%s", p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// served waits until run serves its API and returns the execution id,
// the API's address and its token.
func (p *procRun) served() (id, url, token string) {
	p.t.Helper()
	deadline := time.Now().Add(runProcWait)
	for {
		m := runningLine.FindStringSubmatch(p.stderr.String())
		data, err := os.ReadFile(daemon.Layout{Dir: p.dir}.DaemonInfo())
		var info daemon.Info
		if m != nil && err == nil && json.Unmarshal(data, &info) == nil && info.PID == p.cmd.Process.Pid {
			tok, err := os.ReadFile(info.TokenFile)
			if err != nil {
				p.t.Fatal(err)
			}
			return m[1], info.URL, strings.TrimSpace(string(tok))
		}
		select {
		case <-p.exited:
			p.t.Fatalf("run exited before it served; stderr:\n%s", p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("run did not announce its agent and write daemon.json within %s", runProcWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for run to exit and returns its exit code.
func (p *procRun) wait() int {
	p.t.Helper()
	awaitRunExit(p.t, p.exited)
	return p.cmd.ProcessState.ExitCode()
}

// awaitRequest waits until the execution's input request id is open.
func awaitRequest(t *testing.T, url, token, id, req string) {
	t.Helper()
	deadline := time.Now().Add(runProcWait)
	for {
		_, st := call(t, "GET", url+"/v1/executions/"+id, token, nil)
		if st["currentInputRequestId"] == req {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s never opened: %v", req, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cli runs agentjournal on dir as a process of its own, as from another
// shell, and returns its output and exit code.
func cli(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runProcWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentjournalBinary(t), append([]string{"--data", dir}, args...)...)
	cmd.Env = append(os.Environ(), "AGENTJOURNAL_DATA=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("agentjournal %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// deliveredMessage reports whether the journal holds the message of type
// typ whose payload has the text, and its delivery as delivered.
func deliveredMessage(records []eventstore.Record, typ, text string) bool {
	ids := map[string]bool{}
	for _, r := range records {
		switch x := r.(type) {
		case *eventstore.MessageAccepted:
			var p struct{ Text string }
			if x.MessageType == typ && json.Unmarshal(x.Payload, &p) == nil && p.Text == text {
				ids[x.MessageID] = true
			}
		case *eventstore.MessageDelivery:
			if ids[x.MessageID] && x.Status == eventstore.DeliveryDelivered {
				return true
			}
		}
	}
	return false
}

// TestRunIsReachedFromAnotherShell: while run runs, the commands that
// reach a daemon reach it: send answers the agent's question and sends it
// a message, show reads it; a launch through it is refused. The journal
// has both messages and their deliveries, and daemon.json goes with run.
func TestRunIsReachedFromAnotherShell(t *testing.T) {
	dir := t.TempDir()
	p := startRunProc(t, dir, "--", fixtures.AgentBinary(t), "ask:q1:Which branch?", "echo:1")
	id, url, token := p.served()
	awaitRequest(t, url, token, id, "q1")

	if r := cli(t, dir, "send", id, "--answer", "q1", "main"); r.code != exitOK || !strings.Contains(r.stdout, "delivered") {
		t.Fatalf("send --answer: exit %d, stdout %q, stderr %q; want it delivered", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, dir, "show", id); r.code != exitOK || !strings.Contains(r.stdout, id) {
		t.Errorf("show: exit %d, stdout %q, stderr %q; want the execution", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, dir, "launch", "--", fixtures.AgentBinary(t), "say:hi"); r.code != exitError || !strings.Contains(r.stderr, "agentjournal run") {
		t.Errorf("launch through run: exit %d, stderr %q; want exit 1 saying run launches nothing", r.code, r.stderr)
	}
	// The agent ends once it has read this one.
	if r := cli(t, dir, "send", id, "hello", "there"); r.code != exitOK || !strings.Contains(r.stdout, "delivered") {
		t.Fatalf("send: exit %d, stdout %q, stderr %q; want it delivered", r.code, r.stdout, r.stderr)
	}

	if code := p.wait(); code != exitOK {
		t.Fatalf("run exited %d, want 0", code)
	}
	for _, want := range []string{"answer q1: q1: main\n", "echo: hello there\n"} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("the agent did not print %q", want)
		}
	}
	records := journalOf(t, dir, id)
	if !deliveredMessage(records, "answer", "main") || !deliveredMessage(records, "prompt", "hello there") {
		t.Errorf("the journal lacks the answer or the message, or their deliveries")
	}
	if _, err := os.Stat(daemon.Layout{Dir: dir}.DaemonInfo()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json after run: %v, want it removed", err)
	}
}

// TestRunTerminalLaneAnswerIsTyped: the answer to a question an agent on
// a terminal lane asked is typed into its terminal as a person types it:
// the text and Enter, nothing else.
func TestRunTerminalLaneAnswerIsTyped(t *testing.T) {
	dir := t.TempDir()
	p := startRunProc(t, dir, "--interactive", "--", fixtures.AgentBinary(t), "ask:q1:Which branch?")
	id, url, token := p.served()
	awaitRequest(t, url, token, id, "q1")
	if r := cli(t, dir, "send", id, "--answer", "q1", "main"); r.code != exitOK {
		t.Fatalf("send --answer: exit %d, stderr %q", r.code, r.stderr)
	}
	if code := p.wait(); code != exitOK {
		t.Fatalf("run exited %d, want 0", code)
	}
	if !strings.Contains(p.stdout.String(), "answer q1: main\r\n") {
		t.Errorf("the agent did not read the answer main")
	}
	path, err := terminal.RecordingPath(daemon.Layout{Dir: dir}.Recordings(), id)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, events, err := terminal.ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	var typed strings.Builder
	for _, e := range events {
		if e.Code == "i" {
			typed.WriteString(e.Data)
		}
	}
	if typed.String() != "main\r" {
		t.Fatalf("typed into the agent's terminal: %q, want %q", typed.String(), "main\r")
	}
}
