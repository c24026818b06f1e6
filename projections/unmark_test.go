package projections

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/eventstore"
)

// A file written without syncing that then fails to sync may have lost
// writes even in this boot: Close moves it aside and says so, and the next
// Open starts afresh instead of trusting it.
func TestCloseMovesAsideAFileThatFailsToSync(t *testing.T) {
	if _, ok := bootID(); !ok {
		t.Skip("the system names no boot: every commit is synced")
	}
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Apply([]eventstore.Entry{{Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	if !db.marked {
		t.Fatal("an unsynced commit left the file unmarked")
	}
	syncBolt = func(*bolt.DB) error { return syscall.EIO }
	t.Cleanup(func() { syncBolt = (*bolt.DB).Sync })
	err = db.Close()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "moved aside") {
		t.Fatalf("Close of a file that fails to sync: %v, want EIO and where it was moved", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("files moved aside: %v, want one", aside)
	}
	syncBolt = (*bolt.DB).Sync
	fresh, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if cp, err := fresh.Checkpoint(); err != nil || cp != 0 {
		t.Fatalf("the file opened after it was moved aside has checkpoint %d (%v), want a new file at 0", cp, err)
	}
}
