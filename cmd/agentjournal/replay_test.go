package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

func TestReplayToSequence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := demoID(t, dir, "replay")
	var full struct {
		State   execution.State   `json:"state"`
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "replay", id, "--json")), &full); err != nil {
		t.Fatal(err)
	}
	if full.State.Lifecycle != eventstore.LifecycleCompleted || len(full.Records) != int(full.State.Journal.LastSequence) {
		t.Fatalf("full replay: lifecycle %s, %d records for last sequence %d", full.State.Lifecycle, len(full.Records), full.State.Journal.LastSequence)
	}
	// Find the sequence at which the demo's input request is open, and
	// replay to it: the state must show the request, not the final state.
	var openAt uint64
	for _, it := range full.State.Timeline {
		if it.Kind == execution.ItemState && strings.Contains(it.Text, "→ awaiting-operator") {
			openAt = it.Sequence
		}
	}
	if openAt == 0 {
		t.Fatal("demo journal has no awaiting-operator state change")
	}
	var part struct {
		State   execution.State   `json:"state"`
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "replay", id, "--to-seq", fmt.Sprint(openAt), "--json")), &part); err != nil {
		t.Fatal(err)
	}
	if !part.State.AwaitingInput() || part.State.Lifecycle != eventstore.LifecycleRunning || len(part.Records) != int(openAt) {
		t.Fatalf("replay to %d: %s/%s request %q with %d records; want running, awaiting the operator, %d records",
			openAt, part.State.Lifecycle, part.State.Attention, part.State.CurrentInputRequestID, len(part.Records), openAt)
	}
	human := mustRun(t, dir, "replay", id, "--to-seq", fmt.Sprint(openAt))
	for _, want := range []string{"lifecycle:", "running", "input request:", "timeline ("} {
		if !strings.Contains(human, want) {
			t.Fatalf("human replay lacks %q:\n%s", want, human)
		}
	}
	if r := run(t, dir, "replay", id, "--to-seq", "9999"); r.code != 2 || !strings.Contains(r.stderr, "past the end") {
		t.Fatalf("replay past the end: exit %d, %s", r.code, r.stderr)
	}
}

// log --follow prints records appended after it started, from another
// process's point of view: the test appends through its own connection to
// a NATS the command joins with --nats-url.
func TestLogFollow(t *testing.T) {
	t.Parallel()
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	s := fixtures.OpenStore(t, b)
	ref := storetest.Ref(eventstore.OwnerTask, "t", "follow")
	if _, err := s.EnsureJournal(context.Background(), ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		done <- run(t, t.TempDir(), "--nats-url", b.ClientURL(), "--nats-secret-file", natsSecretFile(t), "log", "--follow", "--limit", "21", "--json")
	}()
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 20; i++ {
		if _, err := s.Append(context.Background(), ref, storetest.Message(fmt.Sprint("m-", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("log --follow did not print the appended records")
	}
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	offsets, _ := readLogJSON(t, r.stdout)
	if len(offsets) != 21 || offsets[20] != 21 {
		t.Fatalf("followed %d records ending at %v, want 21 ending at offset 21", len(offsets), offsets)
	}
}
