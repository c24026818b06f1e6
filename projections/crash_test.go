package projections_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/follower/followertest"
	"github.com/agentjournal/agentjournal/projections"
)

// A projector process is killed with SIGKILL in the middle of the log; the
// file it leaves opens cleanly, holds every checkpoint the child reported,
// and once caught up every execution equals a fresh replay of its journal.
// The child is this test run again, where ChildFollows projects the log
// into the file in batches of 100 until it is killed.
func TestKillDuringProject(t *testing.T) {
	followertest.ChildFollows(openSubject)
	if testing.Short() {
		t.Skip("writes 20,000 records")
	}
	b, s := startLog(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	rs := refs(50)
	writeJournals(t, s, rs, 0, 400)
	last := lastOffset(t, s)
	path := dbPath(t, "p.db")
	reported := followertest.KillFollower(t, b, path, last/10)
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
