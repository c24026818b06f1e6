package supervisor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/supervisor"
)

func sh(script string, args ...string) supervisor.Spec {
	return supervisor.Spec{Program: "/bin/sh", Args: append([]string{"-c", script, "sh"}, args...)}
}

func TestOutputIsCompleteAndInOrderPerStream(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, sh(`
seq 0 99999
i=0
while [ $i -lt 5000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
seq 0 49999 >&2
`))
	got, err := readAll(ctx, h, 0)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	wantOut := seqText(0, 100000) + numbered("out", 0, 5000)
	wantErr := numbered("err", 0, 5000) + seqText(0, 50000)
	if got.out.String() != wantOut {
		t.Errorf("stdout: got %d bytes, want %d (the agent's, in order)", got.out.Len(), len(wantOut))
	}
	if got.err.String() != wantErr {
		t.Errorf("stderr: got %d bytes, want %d (the agent's, in order)", got.err.Len(), len(wantErr))
	}
	info, err := os.Stat(filepath.Join(h.Dir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	if got.end != info.Size() {
		t.Errorf("last frame ends at %d, want the spool's size %d", got.end, info.Size())
	}
	st, ok := h.Exited()
	if !ok || !st.Success() {
		t.Errorf("exit: got %+v (recorded %v), want success", st, ok)
	}
}

func seqText(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestInputRoundTrip(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, supervisor.Spec{Program: "cat", Stdin: true})
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: several requests
	big = append(big, '\n')
	want := "one\n" + string(big) + "two\n"
	if err := h.Input(ctx, []byte("one\n")); err != nil {
		t.Fatalf("Input: %v", err)
	}
	var got bytes.Buffer
	step := 0
	for f, err := range h.Output(ctx, 0) {
		if err != nil {
			t.Fatalf("read output: %v", err)
		}
		got.Write(f.Data)
		// Each input waits for the echo of the one before.
		switch {
		case step == 0 && got.String() == "one\n":
			err = h.Input(ctx, big)
			step++
		case step == 1 && got.Len() == 4+len(big):
			err = h.Input(ctx, []byte("two\n"))
			step++
		case step == 2 && got.String() == want:
			err = h.CloseInput(ctx)
			step++
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if got.String() != want {
		t.Errorf("output: got %d bytes, want the %d bytes of input", got.Len(), len(want))
	}
	st, err := h.Wait(ctx)
	if err != nil || !st.Success() {
		t.Errorf("Wait: got %+v, %v, want success", st, err)
	}
	if err := h.Input(ctx, []byte("late\n")); !errors.Is(err, supervisor.ErrExited) {
		t.Errorf("Input after the exit: got %v, want ErrExited", err)
	}
}

func TestInputWithoutStdin(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, sh("cat; echo done; exec sleep 600"))
	err := h.Input(ctx, []byte("x\n"))
	if err == nil || !strings.Contains(err.Error(), "no input pipe") {
		t.Errorf("Input: got %v, want an error saying the agent has no input pipe", err)
	}
	for f, err := range h.Output(ctx, 0) {
		if err != nil {
			t.Fatalf("read output: %v", err)
		}
		if string(f.Data) != "done\n" {
			t.Errorf("output: got %q, want \"done\\n\" (cat read /dev/null)", f.Data)
		}
		break
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   supervisor.ExitStatus
	}{
		{name: "success", script: "exit 0", want: supervisor.ExitStatus{Code: 0, Desc: "exit status 0"}},
		{name: "code", script: "exit 3", want: supervisor.ExitStatus{Code: 3, Desc: "exit status 3"}},
		{name: "signal", script: "kill -KILL $$", want: supervisor.ExitStatus{Code: -1, Signal: syscall.SIGKILL, Desc: "signal: killed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			h := startAgent(t, ctx, sh(tt.script))
			got, err := h.Wait(ctx)
			if err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if got.Code != tt.want.Code || got.Signal != tt.want.Signal || got.Desc != tt.want.Desc || got.Time.IsZero() {
				t.Errorf("exit: got %+v, want %+v with a time", got, tt.want)
			}
			if ex, ok := h.Exited(); !ok || ex != got {
				t.Errorf("Exited: got %+v, %v, want %+v, true", ex, ok, got)
			}
		})
	}
}

func TestSignalReachesTheProcessGroup(t *testing.T) {
	ctx := testContext(t)
	// The background sleep holds the agent's stdout: the agent's end is
	// recorded only once it is gone too.
	h := startAgent(t, ctx, sh(`sleep 600 & echo started; wait`))
	for f, err := range h.Output(ctx, 0) {
		if err != nil {
			t.Fatalf("read output: %v", err)
		}
		if string(f.Data) == "started\n" {
			break
		}
	}
	if err := h.Signal(ctx, syscall.SIGHUP); err == nil || !strings.Contains(err.Error(), "want SIGINT, SIGTERM or SIGKILL") {
		t.Errorf("Signal(SIGHUP): got %v, want a refusal naming the signals passed on", err)
	}
	if err := h.Signal(ctx, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	st, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if st.Signal != syscall.SIGTERM {
		t.Errorf("exit: got %+v, want ended by SIGTERM", st)
	}
	if err := h.Signal(ctx, syscall.SIGTERM); !errors.Is(err, supervisor.ErrExited) {
		t.Errorf("Signal after the exit: got %v, want ErrExited", err)
	}
}

// The agent prints its first lines, waits for the file named by its
// argument, then prints the rest and exits.
const twoPartAgent = `
i=0
while [ $i -lt 2000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
while [ ! -e "$1" ]; do sleep 0.01; done
while [ $i -lt 4000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
`

// daemonMain is the daemon of TestDaemonKilled: it starts the agent,
// journals (into files) the output up to its 500th stdout line, prints the
// offset it reached and waits to be killed.
func daemonMain(args []string) int {
	os.Unsetenv(envDaemon) // the supervisors it starts are no daemons
	dir, goFile, consumed := args[0], args[1], args[2]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := supervisor.Start(ctx, supervisor.Config{Binary: exe}, dir, sh(twoPartAgent, goFile))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := &streams{}
	for f, err := range h.Output(ctx, 0) {
		if err == nil {
			err = s.add(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if bytes.Count(s.out.Bytes(), []byte("\n")) >= 500 {
			break
		}
	}
	if err := errors.Join(os.WriteFile(consumed+".out", s.out.Bytes(), 0o600), os.WriteFile(consumed+".err", s.err.Bytes(), 0o600)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("offset %d\n", s.end)
	time.Sleep(time.Hour)
	return 0
}

// TestDaemonKilled kills a daemon, with SIGKILL to its whole process
// group, while its agent runs: the agent goes on, its supervisor spools
// what it prints while no daemon reads, and a new reader that attaches and
// resumes from the offset the dead daemon had reached gets every byte
// exactly once.
func TestDaemonKilled(t *testing.T) {
	ctx := testContext(t)
	tmp := t.TempDir()
	dir, goFile, consumed := filepath.Join(tmp, "agent.sup"), filepath.Join(tmp, "go"), filepath.Join(tmp, "consumed")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	daemon := exec.CommandContext(ctx, exe, dir, goFile, consumed)
	daemon.Env = append(os.Environ(), envDaemon+"=1")
	daemon.Stderr = os.Stderr
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		daemon.Wait()
		t.Fatalf("read the daemon's offset: %v", err)
	}
	offset, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "offset ")), 10, 64)
	if err != nil {
		t.Fatalf("daemon said %q: %v", line, err)
	}
	if err := syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("daemon: got %v, want killed", err)
	}

	h, err := supervisor.Attach(dir)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { stopAll(t, h) })
	// The agent waits for goFile: its supervisor must have outlived the
	// daemon.
	if !h.Alive() {
		t.Fatal("the supervisor died with the daemon")
	}
	if err := syscall.Kill(h.AgentPID(), 0); err != nil {
		t.Fatalf("the agent died with the daemon: %v", err)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, err := readAll(ctx, h, offset)
	if err != nil {
		t.Fatalf("read output from %d: %v", offset, err)
	}
	before := readFile(t, consumed+".out") + rest.out.String()
	if want := numbered("out", 0, 4000); before != want {
		t.Errorf("stdout read before and after the kill: got %d bytes, want %d: every line once, in order", len(before), len(want))
	}
	beforeErr := readFile(t, consumed+".err") + rest.err.String()
	if want := numbered("err", 0, 4000); beforeErr != want {
		t.Errorf("stderr read before and after the kill: got %d bytes, want %d: every line once, in order", len(beforeErr), len(want))
	}
	st, err := h.Wait(ctx)
	if err != nil || !st.Success() {
		t.Errorf("Wait: got %+v, %v, want success", st, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSupervisorKilledIsLost kills the supervisor in the middle of a
// frame: readers get the whole frames, never the torn one, then ErrLost,
// and so does a handle attached afterwards.
func TestSupervisorKilledIsLost(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, sh(`echo one; echo two >&2; exec sleep 600`))
	got := &streams{}
	var end error
	for f, err := range h.Output(ctx, 0) {
		if err != nil {
			end = err
			break
		}
		if err := got.add(f); err != nil {
			t.Fatal(err)
		}
		if got.out.Len()+got.err.Len() < len("one\ntwo\n") {
			continue
		}
		killSupervisor(t, ctx, h)
		// What a supervisor killed in the middle of a write leaves: a
		// header promising 100 bytes, and 10 of them.
		tear(t, filepath.Join(h.Dir(), "out"))
	}
	if !errors.Is(end, supervisor.ErrLost) {
		t.Errorf("live reader's end: got %v, want ErrLost", end)
	}
	if got.out.String() != "one\n" || got.err.String() != "two\n" {
		t.Errorf("live reader: got %q and %q, want the whole frames only", got.out.String(), got.err.String())
	}

	h2, err := supervisor.Attach(h.Dir())
	if !errors.Is(err, supervisor.ErrLost) || h2 == nil {
		t.Fatalf("Attach: got %v, %v, want a handle and ErrLost", h2, err)
	}
	defer h2.Close()
	again, err := readAll(ctx, h2, 0)
	if !errors.Is(err, supervisor.ErrLost) || again.out.String() != "one\n" || again.err.String() != "two\n" {
		t.Errorf("reader after Attach: got %q, %q, %v, want the whole frames, then ErrLost", again.out.String(), again.err.String(), err)
	}
	if _, err := h2.Wait(ctx); !errors.Is(err, supervisor.ErrLost) {
		t.Errorf("Wait: got %v, want ErrLost", err)
	}
	if err := h2.Signal(ctx, syscall.SIGTERM); !errors.Is(err, supervisor.ErrLost) {
		t.Errorf("Signal: got %v, want ErrLost", err)
	}
}

func killSupervisor(t *testing.T, ctx context.Context, h *supervisor.Handle) {
	t.Helper()
	if err := syscall.Kill(h.SupervisorPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for h.Alive() {
		select {
		case <-ctx.Done():
			t.Fatal("the supervisor's lock outlived a SIGKILL")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func tear(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	frame := binary.BigEndian.AppendUint32([]byte{byte(supervisor.Stdout)}, 100)
	frame = append(frame, "torn part!"...)
	if _, err := f.Write(frame); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestResumeOffsetMustBeAFrame(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, sh(`echo hello`))
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(ctx, h, 2); !errors.Is(err, supervisor.ErrCorrupt) {
		t.Errorf("read from the middle of a frame: got %v, want ErrCorrupt", err)
	}
}

func TestAttachAfterTheExitAndRemove(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, sh(`echo hi`))
	want, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := supervisor.Attach(h.Dir())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if h2.Alive() {
		t.Error("Alive: got true after the exit, want false")
	}
	if st, ok := h2.Exited(); !ok || st != want {
		t.Errorf("Exited: got %+v, %v, want %+v, true", st, ok, want)
	}
	got, err := readAll(ctx, h2, 0)
	if err != nil || got.out.String() != "hi\n" {
		t.Errorf("output: got %q, %v, want \"hi\\n\"", got.out.String(), err)
	}
	if err := h2.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(h.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory after Remove: got %v, want it gone", err)
	}
	if _, err := supervisor.Attach(h.Dir()); err == nil || !strings.Contains(err.Error(), "not a supervisor state directory") {
		t.Errorf("Attach after Remove: got %v, want not a supervisor state directory", err)
	}
}

func TestRemoveRefusesWhileRunning(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, supervisor.Spec{Program: "cat", Stdin: true})
	if err := h.Remove(); !errors.Is(err, supervisor.ErrRunning) {
		t.Errorf("Remove: got %v, want ErrRunning", err)
	}
	if err := h.CloseInput(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStartFails(t *testing.T) {
	ctx := testContext(t)
	dir := filepath.Join(t.TempDir(), "agent.sup")
	_, err := supervisor.Start(ctx, testConfig(t), dir, supervisor.Spec{Program: "/nonexistent/agent"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/agent") {
		t.Errorf("Start: got %v, want an error naming the program", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory after a failed Start: got %v, want it removed", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := supervisor.Start(ctx, testConfig(t), dir, sh("true")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Start on an existing directory: got %v, want ErrExist", err)
	}
}

// TestDeepStateDir uses a state directory whose socket path is longer
// than a unix socket address holds.
func TestDeepStateDir(t *testing.T) {
	ctx := testContext(t)
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60)+".sup")
	if n := len(filepath.Join(dir, "ctl.sock")); n <= 108 {
		t.Fatalf("socket path of %d bytes, want one too long for sun_path", n)
	}
	h, err := supervisor.Start(ctx, testConfig(t), dir, supervisor.Spec{Program: "cat", Stdin: true})
	if runtime.GOOS != "linux" {
		if err == nil || !strings.Contains(err.Error(), "too deep") {
			t.Errorf("Start: got %v, want a state directory too deep for its socket", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { stopAll(t, h) })
	if err := errors.Join(h.Input(ctx, []byte("deep\n")), h.CloseInput(ctx)); err != nil {
		t.Fatalf("control through the socket: %v", err)
	}
	got, err := readAll(ctx, h, 0)
	if err != nil || got.out.String() != "deep\n" {
		t.Errorf("output: got %q, %v, want \"deep\\n\"", got.out.String(), err)
	}
}

// TestOutputErrorEndsTheRead reads a state directory whose supervisor
// recorded that it could not spool all output: the whole frames, then
// ErrOutputIncomplete.
func TestOutputErrorEndsTheRead(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	frame := binary.BigEndian.AppendUint32([]byte{byte(supervisor.Stdout)}, 3)
	frame = append(frame, "ok\n"...)
	files := map[string]string{
		"lock":      "",
		"out":       string(frame),
		"exit.json": `{"code":0,"desc":"exit status 0","time":"2026-01-02T03:04:05Z","output_error":"write the spool at byte 8: no space left on device"}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := supervisor.Attach(dir)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer h.Close()
	got, err := readAll(ctx, h, 0)
	if !errors.Is(err, supervisor.ErrOutputIncomplete) || !strings.Contains(err.Error(), "no space left") || got.out.String() != "ok\n" {
		t.Errorf("read: got %q, %v; want \"ok\\n\", then ErrOutputIncomplete saying why", got.out.String(), err)
	}
}

// TestStartGivenUpLeavesNoAgent lets Start's ready timeout run out at
// different moments of the handshake: whenever Start fails, no agent is
// left running, even when the supervisor had already said it was ready.
func TestStartGivenUpLeavesNoAgent(t *testing.T) {
	for _, timeout := range []time.Duration{time.Nanosecond, time.Millisecond, 3 * time.Millisecond, 6 * time.Millisecond, 10 * time.Millisecond} {
		t.Run(timeout.String(), func(t *testing.T) {
			ctx := testContext(t)
			cfg := testConfig(t)
			cfg.ReadyTimeout = timeout
			// Not under t.TempDir: a supervisor that Start gave up on may
			// still be writing its files while it dies, and TempDir's one
			// removal would then fail the test. The removal is retried
			// until the supervisor is gone.
			parent, err := os.MkdirTemp("", "start-given-up-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				err := os.RemoveAll(parent)
				for i := 0; err != nil && i < 100; i++ {
					time.Sleep(50 * time.Millisecond)
					err = os.RemoveAll(parent)
				}
				if err != nil {
					t.Errorf("a supervisor Start gave up on still writes in %s after 5s: %v", parent, err)
				}
			})
			dir := filepath.Join(parent, "agent.sup")
			h, err := supervisor.Start(ctx, cfg, dir, sh("exec sleep 600"))
			if err == nil {
				t.Log("the handshake won")
				stopAll(t, h)
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Start: got %v, want a deadline error", err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "pids.json"))
			if errors.Is(err, fs.ErrNotExist) {
				t.Log("no agent was started")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var pids struct{ Agent int }
			if err := json.Unmarshal(data, &pids); err != nil || pids.Agent == 0 {
				t.Fatalf("pids.json %q: %v", data, err)
			}
			for agentRuns(pids.Agent) {
				select {
				case <-ctx.Done():
					syscall.Kill(-pids.Agent, syscall.SIGKILL)
					t.Fatal("the agent of a failed Start runs on")
				case <-time.After(5 * time.Millisecond):
				}
			}
			t.Log("the agent was started and killed")
		})
	}
}

// agentRuns reports whether pid is a process that has not exited (a
// zombie has).
func agentRuns(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(data), ") ")
	return !strings.HasPrefix(after, "Z")
}
