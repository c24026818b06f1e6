package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/fixtures"
)

// TestVerifyFindsAGap: a journal with records missing from its sequence
// (published around the store, as a damaged log file leaves it) is named by
// journal verify, which exits 1, and replay refuses it; a sound log passes.
func TestVerifyFindsAGap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sound := demoID(t, dir, "sound")
	damaged := demoID(t, dir, "damaged")
	if out := mustRun(t, dir, "journal", "verify"); !strings.Contains(out, "2 journals") || !strings.Contains(out, "0 damaged") {
		t.Fatalf("verify of a sound log printed %q", out)
	}

	// A record with a sequence three past the journal's end.
	b := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, b)
	ref := lookupRef(t, s, damaged)
	fixtures.PublishPastTheEnd(t, b, ref, ref.LastSequence+3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	r := run(t, dir, "journal", "verify")
	if r.code != exitError || !strings.Contains(r.stdout, "damaged "+damaged) || strings.Contains(r.stdout, "damaged "+sound) ||
		!strings.Contains(r.stdout, "1 damaged") || !strings.Contains(r.stdout, "lacks sequences") {
		t.Fatalf("verify: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 naming %s only", r.code, r.stdout, r.stderr, damaged)
	}
	if r := run(t, dir, "replay", damaged); r.code == exitOK || !strings.Contains(r.stderr, "lacks sequences") {
		t.Fatalf("replay of the damaged journal: exit %d, %s; want it refused naming the missing sequences", r.code, r.stderr)
	}
	if r := run(t, dir, "journal", "verify", sound); r.code != exitOK {
		t.Fatalf("verify %s: exit %d, %s", sound, r.code, r.stderr)
	}
}
