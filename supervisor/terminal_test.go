package supervisor_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agentjournal/agentjournal/supervisor"
	"github.com/agentjournal/agentjournal/terminal"
)

// onTerminal is sh running script on a terminal the supervisor holds,
// recorded in recordings.
func onTerminal(script, recordings string) supervisor.Spec {
	spec := sh(script)
	spec.Terminal = &supervisor.TerminalSpec{AgentExecutionID: "exec-1", Cols: 100, Rows: 30, RecordingDir: recordings}
	return spec
}

// readUntil reads h's output from offset from until it holds want, and
// returns all of it and the End of the last frame read.
func readUntil(t *testing.T, ctx context.Context, h *supervisor.Handle, from int64, want string) (string, int64) {
	t.Helper()
	var got bytes.Buffer
	end := from
	for f, err := range h.Output(ctx, from) {
		if err != nil {
			t.Fatalf("read output for %q: %v (read %q)", want, err, got.String())
		}
		if f.Stream != supervisor.Stdout {
			t.Fatalf("a frame of %s from a terminal, want stdout only", f.Stream)
		}
		got.Write(f.Data)
		end = f.End
		if strings.Contains(got.String(), want) {
			return got.String(), end
		}
	}
	t.Fatalf("output ended without %q: %q", want, got.String())
	return "", 0
}

// TestTerminalLane: an agent on a terminal the supervisor holds sees a
// terminal of the spec's size, reads what Input types, and its output,
// its input and its exit are in the spool, the exit status and the
// recording.
func TestTerminalLane(t *testing.T) {
	ctx := testContext(t)
	recordings := t.TempDir()
	h := startAgent(t, ctx, onTerminal(`[ -t 0 ] && echo "tty yes"; stty size; read line; echo "got $line"; exit 3`, recordings))
	out, _ := readUntil(t, ctx, h, 0, "30 100")
	if !strings.Contains(out, "tty yes") {
		t.Errorf("output %q, want the agent to find its stdin a terminal", out)
	}
	if err := h.Input(ctx, []byte("hello\r")); err != nil {
		t.Fatalf("Input: %v", err)
	}
	readUntil(t, ctx, h, 0, "got hello")
	st, err := h.Wait(ctx)
	if err != nil || st.Code != 3 || st.Desc != "exit status 3" {
		t.Errorf("Wait: got %+v, %v, want exit status 3", st, err)
	}
	if h.RecordingPath() == "" {
		t.Fatal("no recording path, want the one the supervisor wrote")
	}
	f, err := os.Open(h.RecordingPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr, events, err := terminal.ReadRecording(f)
	if err != nil {
		t.Fatalf("read the recording: %v", err)
	}
	var output, input, marker string
	for _, e := range events {
		switch e.Code {
		case terminal.CodeOutput:
			output += e.Data
		case terminal.CodeInput:
			input += e.Data
		case terminal.CodeMarker:
			marker = e.Data
		}
	}
	if hdr.Width != 100 || hdr.Height != 30 || input != "hello\r" || !strings.Contains(output, "got hello") || marker != "exit 3" {
		t.Errorf("recording: %dx%d, input %q, output %q, last marker %q; want 100x30, the input typed, the output and exit 3",
			hdr.Width, hdr.Height, input, output, marker)
	}
}

// TestTerminalLaneResizeAndSignal: Resize reaches the agent's terminal
// (SIGWINCH and the new size), and a signal ends it as one.
func TestTerminalLaneResizeAndSignal(t *testing.T) {
	ctx := testContext(t)
	h := startAgent(t, ctx, onTerminal(`trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done`, ""))
	_, end := readUntil(t, ctx, h, 0, "ready")
	if err := h.Resize(ctx, 90, 25); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	readUntil(t, ctx, h, end, "25 90")
	if err := h.Signal(ctx, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	st, err := h.Wait(ctx)
	if err != nil || st.Signal != syscall.SIGTERM || st.Desc != "signal: terminated" || st.Success() {
		t.Errorf("Wait: got %+v, %v, want the end by SIGTERM", st, err)
	}
	if h.RecordingPath() != "" {
		t.Errorf("recording path %q, want none: the spec asked for no recording", h.RecordingPath())
	}
	if err := h.Resize(ctx, 80, 24); !errors.Is(err, supervisor.ErrExited) {
		t.Errorf("Resize after the exit: got %v, want ErrExited", err)
	}
}

// TestTerminalLaneAttachAgain: a terminal lane runs on after its daemon's
// handle is gone; a handle attached again reads the whole output, what
// the agent printed meanwhile included, and types into it.
func TestTerminalLaneAttachAgain(t *testing.T) {
	ctx := testContext(t)
	first := startAgent(t, ctx, onTerminal(`echo before; sleep 0.2; echo meanwhile; read line; echo "got $line"`, ""))
	readUntil(t, ctx, first, 0, "before")
	dir, pid := first.Dir(), first.AgentPID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := supervisor.Attach(dir)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer h.Close()
	if h.AgentPID() != pid || !h.Alive() {
		t.Fatalf("attached to agent %d (supervisor alive: %v), want %d running", h.AgentPID(), h.Alive(), pid)
	}
	readUntil(t, ctx, h, 0, "meanwhile")
	if err := h.Input(ctx, []byte("again\r")); err != nil {
		t.Fatalf("Input after attaching again: %v", err)
	}
	out, _ := readUntil(t, ctx, h, 0, "got again")
	if n := strings.Count(out, "before"); n != 1 {
		t.Errorf("output %q holds \"before\" %d times, want once", out, n)
	}
	if st, err := h.Wait(ctx); err != nil || !st.Success() {
		t.Errorf("Wait: got %+v, %v, want success", st, err)
	}
	if err := h.CloseInput(ctx); !errors.Is(err, supervisor.ErrExited) {
		t.Errorf("CloseInput after the exit: got %v, want ErrExited", err)
	}
}

func TestTerminalSpecValidate(t *testing.T) {
	spec := onTerminal("true", t.TempDir())
	spec.Stdin = true
	spec.Terminal.AgentExecutionID = ""
	err := spec.Validate()
	if err == nil || !strings.Contains(err.Error(), "Stdin and Terminal") || !strings.Contains(err.Error(), "agent execution id") {
		t.Errorf("Validate: got %v, want both problems: stdin with a terminal, a recording without its id", err)
	}
}
