package followertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// childEnv carries, to the child process KillFollower starts, the URL of
// the log's server and the path to follow it into.
const childEnv = "AGENTJOURNAL_FOLLOWERTEST_CHILD"

// ChildFollows makes this process the follower KillFollower kills, when it
// was started as one: it follows the log into the path KillFollower names,
// with the subject open opens, printing the checkpoint as it moves, until
// it is killed. Otherwise it returns at once. The top-level test that
// calls KillFollower calls it first.
func ChildFollows(open Open) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return
	}
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	url, path, _ := strings.Cut(spec, "|")
	cfg := bus.DefaultConfig()
	cfg.URL = url
	cfg.Secret = fixtures.NATSSecret
	b, err := bus.Open(context.Background(), cfg)
	if err != nil {
		fail(err)
	}
	s, err := eventstore.OpenJetStream(context.Background(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		fail(err)
	}
	x, err := open(path)
	if err != nil {
		fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- x.Follow(context.Background(), s) }()
	out := bufio.NewWriter(os.Stdout)
	var last uint64
	for {
		select {
		case err := <-done:
			fail(fmt.Errorf("Follow returned: %v", err))
		case <-time.After(time.Millisecond):
		}
		cp, err := x.Checkpoint()
		if err != nil {
			fail(err)
		}
		if cp != last {
			last = cp
			fmt.Fprintln(out, "checkpoint", cp)
			out.Flush()
		}
	}
}

// KillFollower runs the current top-level test again in a child process,
// where ChildFollows follows the log of b (which listens: bus.Config.Listen)
// into path. Once the child reports a checkpoint of at least until, it
// kills the child with SIGKILL and returns the last checkpoint the child
// reported, which a commit the child saw end holds.
func KillFollower(t *testing.T, b *bus.Bus, path string, until uint64) uint64 {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	cmd := exec.Command(os.Args[0], "-test.run=^"+top+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"="+b.ClientURL()+"|"+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var reported uint64
	sc := bufio.NewScanner(stdout)
	for reported < until && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "checkpoint "); ok {
			if reported, err = strconv.ParseUint(v, 10, 64); err != nil {
				t.Fatalf("child: %q", line)
			}
		} else if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Checkpoints printed between the last line read and the kill count too.
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "checkpoint "); ok {
			reported, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	_ = cmd.Wait()
	if reported == 0 {
		t.Fatal("the child reported no progress")
	}
	return reported
}
