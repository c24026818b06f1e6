package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestACPRunSurvivesAFloodOfFIFOReads: run, with an ACP agent that reads a
// FIFO in its working directory 2,000 times at once, ends normally: each
// read is answered with an error (a blocked read would hold an OS thread
// each, and thread exhaustion ends the process), the agent's turn goes on
// and the execution completes.
func TestACPRunSurvivesAFloodOfFIFOReads(t *testing.T) {
	data, work := t.TempDir(), t.TempDir()
	fifo := filepath.Join(work, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// The time limit bounds a run whose reads block.
	r := run(t, data, "run", "--dir", work, "--timeout", "3m", "--agent", "acp", "--prompt", "readmany 2000 "+fifo+"\nsay done", "--", fixtures.ACPAgentBinary(t))
	if r.code != 0 {
		t.Fatalf("run exited %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	id := regexp.MustCompile(`running (ae-[0-9a-f]+)`).FindStringSubmatch(r.stderr)
	if id == nil {
		t.Fatalf("stderr names no execution:\n%s", r.stderr)
	}
	records := journalOf(t, data, id[1])
	if lc, reason := finalLifecycle(records); lc != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s), want completed", lc, reason)
	}
	var said []string
	for _, rec := range records {
		if o, ok := rec.(*eventstore.Observation); ok && o.Signal != nil {
			if m, ok := o.Signal.Payload.(*eventstore.MessageSignal); ok {
				said = append(said, m.Text)
			}
		}
	}
	if len(said) != 2 || !strings.HasPrefix(said[0], "readmany: 2000 of 2000 failed") || said[1] != "done" {
		t.Fatalf("messages %q, want every read failed, then done", said)
	}
}
