//go:build unix

package main

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestNothingAfterTheEnd: a run that ends at once after its agent's claim
// has the claim decided, and its change of attention and the turn's
// checkpoint recorded, before its end: the end is the journal's last
// record. Several runs, since the policy and the turn's checkpoint race
// the agent's exit.
func TestNothingAfterTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := fixtures.ACPAgentBinary(t)
	for range 5 {
		r := run(t, dir, "run", "--dir", t.TempDir(), "--agent", "acp", "--prompt", "say hi", "--", agent)
		if r.code != exitOK {
			t.Fatalf("run exit %d:\n%s", r.code, r.stderr)
		}
		m := runningAny.FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("run named no execution:\n%s", r.stderr)
		}
		recs := journalOf(t, dir, m[1])
		end := -1
		for i, rec := range recs {
			if sc, ok := rec.(*eventstore.StateChanged); ok && sc.Lifecycle.Final() {
				end = i
			}
		}
		if end < 0 {
			t.Fatalf("no end in the journal")
		}
		for _, rec := range recs[end+1:] {
			t.Errorf("after the end: %s %s", rec.Kind(), rec.RecordBase().RecordID)
		}
	}
}
