package eventstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

const crashChildEnv = "AGENTJOURNAL_TEST_CRASH_CHILD"

var crashRef = storetest.Ref(eventstore.OwnerTask, "crash", "exec-crash")

// TestCrashChild is the child side of TestKillDuringAppends: it appends
// until killed and prints each acknowledged message id.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		return // run only as a child process
	}
	dir, sync, _ := strings.Cut(spec, "|")
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	cfg.Sync = bus.SyncMode(sync)
	b, err := bus.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s, err := eventstore.OpenJetStream(context.Background(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if _, err := s.EnsureJournal(context.Background(), crashRef, storetest.Header("a")); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("m-%d", i)
		if _, err := s.Append(context.Background(), crashRef, storetest.Message(id, "crash test")); err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, "ack", id)
		out.Flush()
	}
}

// A process appending is killed with SIGKILL; after a restart every record
// it saw acknowledged is in the journal, and the journal is gapless.
func TestKillDuringAppends(t *testing.T) {
	for _, mode := range []bus.SyncMode{bus.SyncAlways, bus.SyncInterval} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+"|"+string(mode))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			acked := map[string]bool{}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() && len(acked) < 400 {
				line := sc.Text()
				if id, ok := strings.CutPrefix(line, "ack "); ok {
					acked[id] = true
				} else if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Acks printed between our last read and the kill count too.
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					acked[id] = true
				}
			}
			cmd.Wait()
			if len(acked) < 400 {
				t.Fatalf("child acknowledged only %d appends", len(acked))
			}

			b := fixtures.StartNATSAt(t, dir)
			s := fixtures.OpenStore(t, b)
			entries := storetest.Collect(t, s.ReadJournal(context.Background(), crashRef, 1))
			stored := map[string]bool{}
			for i, e := range entries {
				if got := e.Record.RecordBase().Sequence; got != uint64(i+1) {
					t.Fatalf("record %d has sequence %d after the crash", i, got)
				}
				if m, ok := e.Record.(*eventstore.MessageAccepted); ok {
					stored[m.MessageID] = true
				}
			}
			for id := range acked {
				if !stored[id] {
					t.Errorf("acknowledged %s is missing after kill -9", id)
				}
			}
			// The journal accepts appends after recovery.
			if _, err := s.Append(context.Background(), crashRef, storetest.Message("after-crash", "x")); err != nil {
				t.Fatalf("append after recovery: %v", err)
			}
			t.Logf("%s: %d acknowledged, %d stored", mode, len(acked), len(stored))
		})
	}
}
