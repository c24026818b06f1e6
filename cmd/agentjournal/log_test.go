package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// logLine is one line of log --json.
type logLine struct {
	Offset uint64          `json:"offset"`
	Record json.RawMessage `json:"record"`
}

func readLogJSON(t *testing.T, out string) ([]uint64, []eventstore.Record) {
	t.Helper()
	var offsets []uint64
	var records []eventstore.Record
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %d is not {offset, record}: %v\n%s", i+1, err, line)
		}
		r, err := eventstore.Decode(l.Record)
		if err != nil {
			t.Fatalf("log line %d: record does not decode: %v", i+1, err)
		}
		offsets = append(offsets, l.Offset)
		records = append(records, r)
	}
	return offsets, records
}

func TestLogInterleavesJournals(t *testing.T) {
	t.Parallel()
	dir, a, b := interleavedDemos(t)

	offsets, records := readLogJSON(t, mustRun(t, dir, "log", "--json"))
	lastSeq := map[string]uint64{}
	for i, r := range records {
		if got, want := offsets[i], uint64(i+1); got != want {
			t.Errorf("log line %d has offset %d, want %d", i+1, got, want)
		}
		base := r.RecordBase()
		if got, want := base.Sequence, lastSeq[base.AgentExecutionID]+1; got != want {
			t.Errorf("offset %d: %s sequence %d, want %d", offsets[i], base.AgentExecutionID, got, want)
		}
		lastSeq[base.AgentExecutionID] = base.Sequence
	}
	n := len(records)
	if records[0].RecordBase().AgentExecutionID != a || records[n-2].RecordBase().AgentExecutionID != b || records[n-1].RecordBase().AgentExecutionID != a {
		t.Errorf("log order: first %s, second-to-last %s, last %s; want %s, %s, %s",
			records[0].RecordBase().AgentExecutionID, records[n-2].RecordBase().AgentExecutionID, records[n-1].RecordBase().AgentExecutionID, a, b, a)
	}

	// The human log shows the execution of every record.
	human := strings.Split(strings.TrimSpace(mustRun(t, dir, "log")), "\n")
	if got, want := len(human), n+1; got != want {
		t.Fatalf("log printed %d lines, want a header and %d records", got, n)
	}
	for i, r := range records {
		f := strings.Fields(human[i+1])
		if len(f) < 6 || f[0] != strconv.Itoa(i+1) || f[1] != r.RecordBase().AgentExecutionID || f[4] != string(r.Kind()) {
			t.Errorf("log line %d = %q, want offset %d, %s, sequence, time, %s, summary", i+1, human[i+1], i+1, r.RecordBase().AgentExecutionID, r.Kind())
		}
	}

	for _, tc := range []struct {
		name  string
		args  []string
		first uint64
		count int
	}{
		{"from offset", []string{"--from-offset", "20"}, 20, n - 19},
		{"limit", []string{"--limit", "5"}, 1, 5},
		{"from offset and limit", []string{"--from-offset", strconv.Itoa(n - 2), "--limit", "10"}, uint64(n - 2), 3},
		{"limit 0 is all", []string{"--limit", "0"}, 1, n},
		{"from offset 0 is all", []string{"--from-offset", "0"}, 1, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offsets, _ := readLogJSON(t, mustRun(t, dir, append([]string{"log", "--json"}, tc.args...)...))
			if len(offsets) != tc.count || offsets[0] != tc.first || offsets[len(offsets)-1] != tc.first+uint64(tc.count)-1 {
				t.Errorf("log %s: offsets %d..%d (%d), want %d..%d (%d)", tc.args,
					offsets[0], offsets[len(offsets)-1], len(offsets), tc.first, tc.first+uint64(tc.count)-1, tc.count)
			}
		})
	}
	if out := mustRun(t, dir, "log", "--json", "--from-offset", strconv.Itoa(n+1)); out != "" {
		t.Errorf("log past the end = %q, want nothing", out)
	}
}

// interleavedDemos writes two demo journals, a and b, on a new data
// directory, and one more record on a after b's, so that the journals
// interleave in the log.
func interleavedDemos(t *testing.T) (dir, a, b string) {
	t.Helper()
	dir = t.TempDir()
	a = demoID(t, dir, "a")
	b = demoID(t, dir, "b")
	appendActivity(t, dir, a, "late-1")
	return dir, a, b
}

// appendActivity appends an activity update to a journal straight through
// the store, between runs of the program.
func appendActivity(t *testing.T, dir, agentExecutionID, key string) {
	t.Helper()
	b := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, b)
	ref := lookupRef(t, s, agentExecutionID)
	r := &eventstore.ActivityUpdated{Activity: eventstore.ActivityReviewing}
	r.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindActivity, key)
	if _, err := s.Append(t.Context(), ref, r); err != nil {
		t.Fatal(err)
	}
	closeBus(t, b)
}

// lookupRef returns the reference of the journal of the execution id in s.
func lookupRef(t *testing.T, s eventstore.Store, id string) eventstore.Reference {
	t.Helper()
	ref, err := s.Lookup(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// closeBus closes a bus before the test ends, so the program can open its
// data directory.
func closeBus(t *testing.T, b *bus.Bus) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// A record no reader can decode is reported with its offset and passed
// over: log prints the rest and exits 1.
func TestLogPassesOverUndecodableRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := demoID(t, dir, "a")
	b := fixtures.StartNATSAt(t, dir)
	ack, err := b.JetStream().Publish(t.Context(), "journal.foreign.writer", []byte(`{"type":"message.accepted","bogus":1}`))
	if err != nil {
		t.Fatal(err)
	}
	closeBus(t, b)
	appendActivity(t, dir, a, "after-the-bad-one")

	r := run(t, dir, "log", "--json")
	if r.code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
	}
	offsets, _ := readLogJSON(t, r.stdout)
	if got := offsets[len(offsets)-1]; got != ack.Sequence+1 {
		t.Errorf("last offset printed %d, want %d (the record after the bad one)", got, ack.Sequence+1)
	}
	for _, off := range offsets {
		if off == ack.Sequence {
			t.Errorf("offset %d, which does not decode, was printed", off)
		}
	}
	for _, want := range []string{fmt.Sprintf("skipped the record at offset %d", ack.Sequence), `unknown field`, "1 record(s) could not be decoded"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}
