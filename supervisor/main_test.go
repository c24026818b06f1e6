package supervisor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/supervisor"
)

// The test binary is also the supervisor, and the daemon that the daemon
// test kills: these variables pick the part.
const (
	envMain   = "SUPERVISOR_TEST_MAIN"
	envDaemon = "SUPERVISOR_TEST_DAEMON"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envDaemon) != "":
		os.Exit(daemonMain(os.Args[1:]))
	case os.Getenv(envMain) != "":
		os.Exit(supervisor.Main(os.Args[1:]))
	}
	// Inherited by every supervisor the tests start, through its launcher.
	os.Setenv(envMain, "1")
	// A race-enabled launcher would otherwise linger a second at its exit,
	// and Start waits for it.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// testConfig runs supervisors from the test binary.
func testConfig(t testing.TB) supervisor.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return supervisor.Config{Binary: exe, ReadyTimeout: 30 * time.Second}
}

// startAgent starts spec under a supervisor in a fresh state directory.
// Cleanup kills what is left of the agent and waits for the supervisor.
func startAgent(t testing.TB, ctx context.Context, spec supervisor.Spec) *supervisor.Handle {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent.sup")
	h, err := supervisor.Start(ctx, testConfig(t), dir, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { stopAll(t, h) })
	return h
}

func stopAll(t testing.TB, h *supervisor.Handle) {
	t.Helper()
	if pid := h.AgentPID(); pid > 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.Wait(ctx); err != nil && !errors.Is(err, supervisor.ErrLost) {
		t.Errorf("wait for the supervisor at cleanup: %v", err)
	}
	h.Close()
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// streams is an agent's output as read from a spool, one buffer per
// stream.
type streams struct {
	out, err bytes.Buffer
	end      int64
}

func (s *streams) add(f supervisor.Frame) error {
	if f.End <= s.end {
		return fmt.Errorf("frame ends at %d, after one ending at %d", f.End, s.end)
	}
	s.end = f.End
	switch f.Stream {
	case supervisor.Stdout:
		s.out.Write(f.Data)
	case supervisor.Stderr:
		s.err.Write(f.Data)
	default:
		return fmt.Errorf("frame of %s", f.Stream)
	}
	return nil
}

// readAll reads h's output from offset from to its end, and returns the
// error that ended it, nil at a normal end.
func readAll(ctx context.Context, h *supervisor.Handle, from int64) (*streams, error) {
	s := &streams{end: from}
	for f, err := range h.Output(ctx, from) {
		if err != nil {
			return s, err
		}
		if err := s.add(f); err != nil {
			return s, err
		}
	}
	return s, nil
}

// numbered is the text of lines "PREFIX from" to "PREFIX to-1".
func numbered(prefix string, from, to int) string {
	var b bytes.Buffer
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s %d\n", prefix, i)
	}
	return b.String()
}
