package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/generic"
	"github.com/agentjournal/agentjournal/supervisor"
)

// childIndex must agree with newChild's prefixes: a taken-over
// conversation numbers its next process after every one its output names.
func TestChildIndex(t *testing.T) {
	p := &process{adapter: generic.Agent{}}
	for want := 1; want <= 3; want++ {
		c := p.newChild()
		ids := []string{c.prefix + "-6-0"} // a provider parser's id
		if want > 1 {
			ids = append(ids, stdoutID(c, 2)) // the first process's are plain stdout-N
		}
		for _, id := range ids {
			if got := childIndex(id); got != want {
				t.Errorf("childIndex(%q) = %d, want %d", id, got, want)
			}
		}
	}
	for _, id := range []string{"stdout-3", "obs-1", "outx-1", "out", "out1-2"} {
		if got := childIndex(id); got != 0 {
			t.Errorf("childIndex(%q) = %d, want 0", id, got)
		}
	}
}

// TestEndLostTurn: the process of a turn that a gone runtime started is
// ended by the runtime taking the conversation over, and only that
// process: a record whose start time is another's (a reused pid) leaves
// it alone.
func TestEndLostTurn(t *testing.T) {
	rt := New(Config{Supervisor: &supervisor.Config{Binary: "/nonexistent"}, SupervisedDir: t.TempDir()})
	a, err := NewAdapter("codex")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", "ae-lost-turn")
	if err != nil {
		t.Fatal(err)
	}
	p := &process{ref: ref, adapter: a, driver: a.NewDriver(nil, eventstore.ShapeConversation), shape: eventstore.ShapeConversation}
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		return cmd, done
	}

	other, otherDone := start()
	path, _ := rt.supervisedPath(ref.AgentExecutionID, turnSuffix)
	if err := os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", other.Process.Pid, processStart(other.Process.Pid)+1), 0o600); err != nil {
		t.Fatal(err)
	}
	rt.endLostTurn(ref)
	select {
	case err := <-otherDone:
		t.Fatalf("a process whose start time differs from the record's was ended: %v", err)
	case <-time.After(200 * time.Millisecond):
	}

	turn, turnDone := start()
	rt.noteTurnProcess(p, turn.Process.Pid)
	rt.endLostTurn(ref)
	select {
	case err := <-turnDone:
		if err == nil {
			t.Fatal("the lost turn's process exited by itself, want it killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lost turn's process still runs")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the turn's record stays: %v", err)
	}
}
