package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A spool that cannot be written (here /dev/full: ENOSPC) keeps its first
// error for exit.json and drops the output after it.
func TestSpoolWriteErrorIsKept(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := newSpool(f)
	s.append(Stdout, append(make([]byte, headerLen), "lost"...))
	first := s.err
	s.append(Stdout, append(make([]byte, headerLen), "dropped"...))
	if first == nil || s.err != first || s.size != 0 {
		t.Errorf("after writes to a full disk: got err %v (then %v), size %d; want the first error kept and size 0", first, s.err, s.size)
	}
}

// abort, which Start calls when it gives up on a supervisor, kills the
// agent of one that runs (having said it was ready into a pipe nobody read).
func TestAbortKillsTheAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(ctx, Config{Binary: exe}, filepath.Join(t.TempDir(), "agent.sup"), Spec{Program: "/bin/sh", Args: []string{"-c", "exec sleep 600"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer h.Close()
	abort(h.Dir())
	st, err := h.Wait(ctx)
	if err != nil || st.Signal != syscall.SIGKILL {
		t.Errorf("after abort: got %+v, %v, want the agent killed by SIGKILL", st, err)
	}
}
