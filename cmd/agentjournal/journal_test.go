package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestDemoThenLsAndCat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := mustRun(t, dir, "demo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "journal cat ae-") {
		t.Fatalf("demo's last line = %q, want how to view the journal again", last)
	}
	id := last[strings.LastIndex(last, "ae-"):]

	ls := mustRun(t, dir, "journal", "ls")
	lsLines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lsLines) != 2 || !strings.HasPrefix(lsLines[0], "AGENT EXECUTION") {
		t.Fatalf("journal ls = %q, want a header and one journal", ls)
	}
	if f := strings.Fields(lsLines[1]); len(f) != 4 || f[0] != id || f[1] != "Task/demo-task" || !strings.HasPrefix(f[3], "journal-") {
		t.Errorf("journal ls line = %q, want %s Task/demo-task <records> journal-…", lsLines[1], id)
	}

	records := decodeLines(t, mustRun(t, dir, "journal", "cat", id, "--json"))
	for i, r := range records {
		b := r.RecordBase()
		if got, want := b.Sequence, uint64(i+1); got != want {
			t.Errorf("record %d has sequence %d, want %d", i, got, want)
		}
		if b.AgentExecutionID != id {
			t.Errorf("record %d belongs to %s, want %s", i, b.AgentExecutionID, id)
		}
	}
	if !strings.Contains(ls, " "+strconv.Itoa(len(records))+" ") {
		t.Errorf("journal ls = %q, want the record count %d", ls, len(records))
	}

	// The demo writes every kind a live execution writes, and the signals
	// the brief of the demo names.
	kinds := map[eventstore.Kind]bool{}
	signals := map[eventstore.SignalType]bool{}
	for _, r := range records {
		kinds[r.Kind()] = true
		if o, ok := r.(*eventstore.Observation); ok && o.Signal != nil {
			signals[o.Signal.Type] = true
		}
	}
	for _, k := range []eventstore.Kind{eventstore.KindHeader, eventstore.KindStateChanged, eventstore.KindMessage,
		eventstore.KindDelivery, eventstore.KindObservation, eventstore.KindDecision, eventstore.KindActivity} {
		if !kinds[k] {
			t.Errorf("demo wrote no %s record", k)
		}
	}
	for _, s := range []eventstore.SignalType{eventstore.SignalProgress, eventstore.SignalStatus, eventstore.SignalMessage,
		eventstore.SignalUsage, eventstore.SignalNeedsInput, eventstore.SignalCompletedClaim} {
		if !signals[s] {
			t.Errorf("demo wrote no %s observation", s)
		}
	}

	// The human listing has one line per record, in sequence order, with
	// the record's type and a summary.
	human := strings.Split(strings.TrimSpace(mustRun(t, dir, "journal", "cat", id)), "\n")
	if got, want := len(human), len(records)+1; got != want {
		t.Fatalf("journal cat printed %d lines, want a header and %d records:\n%s", got, len(records), strings.Join(human, "\n"))
	}
	for i, r := range records {
		f := strings.Fields(human[i+1])
		if len(f) < 5 || f[0] != strconv.Itoa(i+1) || f[3] != string(r.Kind()) {
			t.Errorf("cat line %d = %q, want sequence %d, offset, time, type %s and a summary", i+1, human[i+1], i+1, r.Kind())
		}
	}
	for _, want := range []string{"needs_input req-1", "input=req-1", "input=cleared", "lifecycle=completed", "target=file:auth/login.go"} {
		if !strings.Contains(strings.Join(human, "\n"), want) {
			t.Errorf("journal cat does not show %q", want)
		}
	}

	// --from-seq starts in the middle.
	from := decodeLines(t, mustRun(t, dir, "journal", "cat", "--from-seq", "10", id, "--json"))
	if got, want := len(from), len(records)-9; got != want {
		t.Fatalf("cat --from-seq 10 printed %d records, want %d", got, want)
	}
	if got := from[0].RecordBase().Sequence; got != 10 {
		t.Errorf("cat --from-seq 10 starts at sequence %d, want 10", got)
	}
	if r := run(t, dir, "journal", "cat", id, "--from-seq", strconv.Itoa(len(records)+1)); r.code != exitOK || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("cat past the end: exit %d, output %q; want 0 and only the header line", r.code, r.stdout)
	}
}

func TestDemoSameSeedIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := decodeLines(t, mustRun(t, dir, "demo", "--seed", "s1", "--json"))
	r := run(t, dir, "demo", "--seed", "s1", "--json")
	if r.code != exitOK {
		t.Fatalf("second demo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	second := decodeLines(t, r.stdout)
	if len(first) != len(second) {
		t.Errorf("demo twice with one seed: %d then %d records, want the same", len(first), len(second))
	}
	if !strings.Contains(r.stderr, "Nothing new to write") {
		t.Errorf("second demo's note = %q, want it to say nothing was written", r.stderr)
	}
	ls := mustRun(t, dir, "journal", "ls", "--json")
	if n := strings.Count(ls, "\n"); n != 1 {
		t.Errorf("journal ls --json after two demos with one seed printed %d journals, want 1:\n%s", n, ls)
	}
	// A different seed or owner is another execution.
	other := demoID(t, dir, "s2")
	owned := decodeLines(t, mustRun(t, dir, "demo", "--seed", "s1", "--owner", "Mission/m-7", "--json"))
	if b := owned[0].RecordBase(); b.Scope != eventstore.OwnerMission || b.OwnerID != "m-7" {
		t.Errorf("demo --owner Mission/m-7 wrote a journal owned by %s/%s", b.Scope, b.OwnerID)
	}
	ids := []string{first[0].RecordBase().AgentExecutionID, other, owned[0].RecordBase().AgentExecutionID}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != 3 {
		t.Errorf("execution ids %v, want three different ones", ids)
	}
}

func TestCatUnknownID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "journal", "cat", "ae-nope")
	if r.code != exitError || !strings.Contains(r.stderr, `no journal for agent execution "ae-nope"`) || !strings.Contains(r.stderr, "journal ls") {
		t.Errorf("cat of an unknown id: exit %d, stderr %q; want 1 and a hint to list journals", r.code, r.stderr)
	}
}
