package projections_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/projections"
)

// thisBoot is the system's boot id, which unsynced commits depend on.
func thisBoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("the system names no boot (%v): every commit is synced", err)
	}
	return strings.TrimSpace(string(b))
}

// unsyncedMark reads the mark from a copy of the file at path, which may
// be open (and locked) by a DB: what the copy reads is what the system
// holds of the file, the page cache included.
func unsyncedMark(t *testing.T, path string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return readMark(t, cp)
}

func readMark(t *testing.T, path string) (mark string, ok bool) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte("meta")).Get([]byte("unsynced"))
		mark, ok = string(v), v != nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mark, ok
}

func setMark(t *testing.T, path, mark string) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("unsynced"), []byte(mark)) })
	if err := errors.Join(err, b.Close()); err != nil {
		t.Fatal(err)
	}
}

// Commits go unsynced only once the file durably carries the mark of this
// boot; Close syncs and removes it; a file marked by another boot of the
// system is corrupt and rebuilt.
func TestUnsyncedCommits(t *testing.T) {
	boot := thisBoot(t)
	s, rs := writtenLog(t, 3, 20)
	path := dbPath(t, "p.db")

	db, err := projections.Open(projections.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if mark, ok := unsyncedMark(t, path); ok {
		t.Fatalf("a new file is marked %q before any commit", mark)
	}
	catchUp(t, db, s)
	if mark, ok := unsyncedMark(t, path); !ok || mark != boot {
		t.Fatalf("after unsynced commits the mark is %q (present %v), want this boot %q", mark, ok, boot)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if mark, ok := readMark(t, path); ok {
		t.Fatalf("Close left the mark %q", mark)
	}

	synced, err := projections.Open(projections.Config{Path: path, SyncCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	writeJournals(t, s, rs, 20, 5)
	catchUp(t, synced, s)
	if mark, ok := unsyncedMark(t, path); ok {
		t.Fatalf("with SyncCommits the file is marked %q", mark)
	}
	if err := synced.Close(); err != nil {
		t.Fatal(err)
	}

	// A file a killed process left marked in this boot is trusted by
	// either kind of DB, and the next Close removes the mark.
	setMark(t, path, boot)
	synced, err = projections.Open(projections.Config{Path: path, SyncCommits: true})
	if err != nil {
		t.Fatalf("Open with SyncCommits of a file marked in this boot: %v", err)
	}
	writeJournals(t, s, rs, 25, 5)
	catchUp(t, synced, s)
	if err := synced.Close(); err != nil {
		t.Fatal(err)
	}
	if mark, ok := readMark(t, path); ok {
		t.Fatalf("Close with SyncCommits left the mark %q", mark)
	}

	// The file was being written without syncing when the system went
	// down: any of those writes may be lost.
	setMark(t, path, "an-earlier-boot")
	if _, err := projections.Open(projections.Config{Path: path}); !errors.Is(err, projections.ErrCorrupt) ||
		!strings.Contains(err.Error(), "before the system restarted") {
		t.Fatalf("Open of a file marked by another boot: %v, want ErrCorrupt saying the system restarted", err)
	}
	rebuiltDB, rebuilt, err := projections.OpenOrRebuild(context.Background(), projections.Config{Path: path}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rebuiltDB.Close() })
	if !rebuilt {
		t.Fatal("OpenOrRebuild did not rebuild a file marked by another boot")
	}
	checkAgainstReplay(t, rebuiltDB, s, rs, 100)
}
