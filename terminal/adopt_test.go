package terminal

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// terminalHolder holds an adopted terminal's PTY the way a supervisor
// does, with a terminal of its own on a real PTY.
type terminalHolder struct{ t *Terminal }

func (h terminalHolder) Input(data []byte) error         { return h.t.Input(data) }
func (h terminalHolder) Resize(cols, rows uint16) error  { return h.t.Resize(cols, rows) }
func (h terminalHolder) Signal(sig syscall.Signal) error { return h.t.Signal(sig) }

// TestAdoptedTerminal: a terminal whose PTY another registry holds is
// served as one of this registry's: its input, resizes and signals reach
// the process, the output fed to it fills its scrollback and its
// subscribers, Close leaves its process running, and Finish records the
// exit.
func TestAdoptedTerminal(t *testing.T) {
	holders := newRegistry(t)
	var adopted atomic.Pointer[Terminal]
	held := openTerminal(t, holders, OpenOptions{Command: "/bin/sh",
		Args: []string{"-c", `read l; stty size; echo "got $l"; read l; echo "then $l"; exec sleep 600`},
		// The holder's reader feeds the adopted terminal, one chunk at
		// a time, as a daemon feeds the chunks its supervisor spooled.
		OnOutput: func(data []byte) {
			if a := adopted.Load(); a != nil {
				a.Feed(data)
			}
		}})
	r := NewRegistry(nil)
	a, err := r.Adopt(AdoptOptions{ID: "term-adopted", AgentExecutionID: "exec-1", Command: "/bin/sh", Args: []string{"-c", "x y"},
		Pid: held.Pid(), RecordingPath: "/recordings/exec-1.terminal.jsonl", Holder: terminalHolder{held}})
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	adopted.Store(a)
	if got, err := r.Attach("term-adopted"); err != nil || got != a {
		t.Fatalf("Attach: %v, %v; want the adopted terminal", got, err)
	}
	if _, err := r.Adopt(AdoptOptions{ID: "term-adopted", Pid: 1, Holder: terminalHolder{held}}); !errors.Is(err, ErrExists) {
		t.Errorf("Adopt of a used id: got %v, want ErrExists", err)
	}
	var subscribed atomic.Value
	subscribed.Store("")
	a.Subscribe(func(data []byte) { subscribed.Store(subscribed.Load().(string) + string(data)) })
	if err := r.Resize("term-adopted", 100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if err := a.Input([]byte("hello\r")); err != nil {
		t.Fatalf("Input: %v", err)
	}
	eventually(t, "the answer in the adopted terminal's scrollback", func() bool {
		return strings.Contains(a.Snapshot().Recent, "got hello")
	})
	snap := a.Snapshot()
	if !strings.Contains(snap.Recent, "30 100") || snap.Cols != 100 || snap.Rows != 30 ||
		snap.Command != "/bin/sh -c 'x y'" || snap.RecordingPath != "/recordings/exec-1.terminal.jsonl" || !snap.Connected || snap.Dead {
		t.Errorf("snapshot %+v, want the process's terminal at 100x30, connected, its command and recording", snap)
	}
	eventually(t, "the answer delivered to the subscriber", func() bool {
		return strings.Contains(subscribed.Load().(string), "got hello")
	})

	// A daemon that stops leaves the process to its holder.
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-a.Done()
	if snap := a.Snapshot(); snap.Connected || snap.Dead {
		t.Errorf("snapshot after Close: connected %v, dead %v; want neither", snap.Connected, snap.Dead)
	}
	if err := held.Input([]byte("still\r")); err != nil {
		t.Fatalf("the held process after the adopting registry closed: %v, want it running", err)
	}
	eventually(t, "the held process answering", func() bool { return strings.Contains(held.Snapshot().Recent, "then still") })

	// Adopted again, as by the next daemon, and ended.
	r2 := newRegistry(t)
	b, err := r2.Adopt(AdoptOptions{ID: "term-adopted", Command: "sh", Pid: held.Pid(), Holder: terminalHolder{held}})
	if err != nil {
		t.Fatalf("Adopt again: %v", err)
	}
	if err := b.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	code := waitExit(t, held)
	b.Finish(code)
	snap = b.Snapshot()
	if !snap.Dead || snap.ExitCode == nil || *snap.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("snapshot after Finish: %+v, want dead by SIGTERM", snap)
	}
	if err := b.Input([]byte("late")); !errors.Is(err, ErrExited) {
		t.Errorf("Input after Finish: got %v, want ErrExited", err)
	}
	if err := r2.Remove("term-adopted"); err != nil {
		t.Errorf("Remove after Finish: %v", err)
	}
}

func TestAdoptRefusesAnIncompleteTerminal(t *testing.T) {
	_, err := NewRegistry(nil).Adopt(AdoptOptions{ID: "bad\xffid", ScrollbackBytes: -1})
	for _, want := range []string{"terminal id", "no holder", "pid 0", "scrollback"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Adopt: got %v, want it to say %q", err, want)
		}
	}
}
