package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTaskRun: the README's first command takes serve's flags after --,
// and Ctrl-C (SIGINT to its process group, as a terminal sends it) stops
// the daemon with exit status 0.
func TestTaskRun(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "task", "run", "--", "--listen", "127.0.0.1:0")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), dataEnv+"="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "agentjournal: serving on http://127.0.0.1:") {
			break
		}
	}
	if len(seen) == 0 || !strings.Contains(seen[len(seen)-1], "serving on") {
		t.Fatalf("go tool task run -- --listen … did not serve:\n%s", strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, out)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatal("go tool task run did not stop after Ctrl-C")
	case errors.As(err, &exit):
		t.Fatalf("go tool task run ended with %v after Ctrl-C, want exit status 0", err)
	case err != nil:
		t.Fatal(err)
	}
}
