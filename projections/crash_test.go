package projections_test

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
	"github.com/agentjournal/agentjournal/projections"
)

const projectChildEnv = "AGENTJOURNAL_TEST_PROJECT_CHILD"

// TestProjectChild is the child side of TestKillDuringProject: it projects
// the log at the given NATS URL into the given file in batches of 100 and
// prints its checkpoint as it moves, until killed.
func TestProjectChild(t *testing.T) {
	spec := os.Getenv(projectChildEnv)
	if spec == "" {
		return // run only as a child process
	}
	url, path, _ := strings.Cut(spec, "|")
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
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
	db, err := projections.Open(projections.Config{Path: path, BatchSize: 100})
	if err != nil {
		fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- db.Project(context.Background(), s) }()
	out := bufio.NewWriter(os.Stdout)
	var last uint64
	for {
		select {
		case err := <-done:
			fail(fmt.Errorf("Project returned: %v", err))
		case <-time.After(time.Millisecond):
		}
		cp, err := db.Checkpoint()
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

// A projector process is killed with SIGKILL in the middle of the log; the
// file it leaves opens cleanly, holds every checkpoint the child reported,
// and once caught up every execution equals a fresh replay of its journal.
func TestKillDuringProject(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 records")
	}
	b, s := startLog(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	rs := refs(50)
	writeJournals(t, s, rs, 0, 400)
	last := lastOffset(t, s)
	path := dbPath(t, "p.db")

	cmd := exec.Command(os.Args[0], "-test.run=^TestProjectChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), projectChildEnv+"="+b.ClientURL()+"|"+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var reported uint64
	sc := bufio.NewScanner(stdout)
	for reported < last/10 && sc.Scan() {
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
	// Checkpoints printed between our last read and the kill count too.
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "checkpoint "); ok {
			reported, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	cmd.Wait()
	if reported == 0 {
		t.Fatal("the child reported no progress")
	}
	t.Logf("killed the projector at checkpoint %d of %d", reported, last)
	if boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		// Its commits went unsynced: what follows shows the system's page
		// cache kept every one of them for this boot.
		if mark, ok := readMark(t, path); !ok || mark != strings.TrimSpace(string(boot)) {
			t.Fatalf("the killed projector's file is marked %q (present %v), want this boot %q", mark, ok, boot)
		}
	}

	db := openDB(t, projections.Config{Path: path})
	cp, err := db.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if cp < reported {
		t.Fatalf("checkpoint %d after kill -9, below the %d the child saw committed", cp, reported)
	}
	catchUp(t, db, s)
	if cp, _ = db.Checkpoint(); cp != last {
		t.Fatalf("checkpoint %d after catching up, want the last offset %d", cp, last)
	}
	checkAgainstReplay(t, db, s, rs, projections.MaxTimelineLimit)
	if reported >= last {
		t.Log("the child finished before it was killed; the test did not cut a batch")
	}
}
