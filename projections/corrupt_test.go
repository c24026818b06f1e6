package projections_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/projections"
)

// garbage overwrites n bytes of the file at off with random bytes.
func garbage(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(off), uint64(n)))
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// otherBolt writes a valid bbolt file with the given buckets and keys.
func otherBolt(t *testing.T, path string, fill func(tx *bolt.Tx) error) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	otherBoltUpdate(t, path, fill)
}

func TestCorruptFileIsRebuilt(t *testing.T) {
	s, rs := writtenLog(t, 8, 150)

	// good builds a caught-up projection file at path.
	good := func(t *testing.T, path string) {
		db, err := projections.Open(projections.Config{Path: path, BatchSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		catchUp(t, db, s)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string)
		problem string // part of the error
	}{
		{"garbage at the beginning", func(t *testing.T, path string) {
			good(t, path)
			garbage(t, path, 0, 16<<10)
		}, "bbolt cannot open it"},
		{"garbage in the middle", func(t *testing.T, path string) {
			good(t, path)
			size := fileSize(t, path)
			garbage(t, path, size/4, size/2)
		}, ""},
		{"truncated", func(t *testing.T, path string) {
			good(t, path)
			if err := os.Truncate(path, fileSize(t, path)/3); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"empty file", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "empty"},
		{"text file", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "bbolt cannot open it"},
		{"bbolt file of another shape", func(t *testing.T, path string) {
			otherBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("v"))
			})
		}, "no meta bucket"},
		{"another format version", func(t *testing.T, path string) {
			otherBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return b.Put([]byte("format"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
			})
		}, "format version 9"},
		{"a bucket missing", func(t *testing.T, path string) {
			good(t, path)
			otherBoltUpdate(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("by-attention")) })
		}, "no by-attention bucket"},
		{"an index out of step", func(t *testing.T, path string) {
			good(t, path)
			otherBoltUpdate(t, path, func(tx *bolt.Tx) error {
				k, _ := tx.Bucket([]byte("by-lifecycle")).Cursor().First()
				return tx.Bucket([]byte("by-lifecycle")).Delete(k)
			})
		}, "by-lifecycle entries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := dbPath(t, "p.db")
			c.damage(t, path)
			before := fileSize(t, path)

			_, err := projections.Open(projections.Config{Path: path})
			if !errors.Is(err, projections.ErrCorrupt) {
				t.Fatalf("Open: got %v, want ErrCorrupt", err)
			}
			var ce *projections.CorruptError
			if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open error %q does not name %s", err, path)
			}
			if !strings.Contains(err.Error(), c.problem) {
				t.Fatalf("Open error %q does not say %q", err, c.problem)
			}
			t.Logf("Open: %v", err)

			now := time.Unix(1_900_000_000, 0)
			db, rebuilt, err := projections.OpenOrRebuild(context.Background(),
				projections.Config{Path: path, Now: func() time.Time { return now }}, s, nil)
			if err != nil {
				t.Fatalf("OpenOrRebuild: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			if !rebuilt {
				t.Fatal("OpenOrRebuild did not report the rebuild")
			}
			aside := path + ".corrupt-1900000000"
			if got := fileSize(t, aside); got != before {
				t.Fatalf("%s is %d bytes, want the %d of the damaged file", aside, got, before)
			}
			if cp, _ := db.Checkpoint(); cp != lastOffset(t, s) {
				t.Fatalf("checkpoint %d after the rebuild, want %d", cp, lastOffset(t, s))
			}
			checkAgainstReplay(t, db, s, rs, projections.MaxTimelineLimit)

			// A second damaged file at the same second keeps the first one.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			db, _, err = projections.OpenOrRebuild(context.Background(),
				projections.Config{Path: path, Now: func() time.Time { return now }}, s, nil)
			if err != nil {
				t.Fatalf("second OpenOrRebuild: %v", err)
			}
			if got := fileSize(t, aside); got != before {
				t.Fatalf("%s was overwritten", aside)
			}
			if _, err := os.Stat(aside + "-1"); err != nil {
				t.Fatalf("second damaged file not moved aside: %v", err)
			}
		})
	}
}

// otherBoltUpdate changes a closed projection file behind the package's back.
func otherBoltUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenOrRebuildMissingAndHealthyFiles(t *testing.T) {
	s, rs := writtenLog(t, 4, 50)
	path := dbPath(t, "p.db")
	ctx := context.Background()

	var last [2]uint64
	db, rebuilt, err := projections.OpenOrRebuild(ctx, projections.Config{Path: path}, s, func(done, total uint64) { last = [2]uint64{done, total} })
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt {
		t.Error("a missing file reported as rebuilt")
	}
	off := lastOffset(t, s)
	if last != [2]uint64{off, off} {
		t.Errorf("last progress %v, want [%d %d]", last, off, off)
	}
	checkAgainstReplay(t, db, s, rs, 20)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A healthy file is opened as it is and caught up.
	writeJournals(t, s, rs, 50, 10)
	db, rebuilt, err = projections.OpenOrRebuild(ctx, projections.Config{Path: path}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if rebuilt {
		t.Error("a healthy file reported as rebuilt")
	}
	checkAgainstReplay(t, db, s, rs, 20)
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 0 {
		t.Errorf("files moved aside: %v", matches)
	}

	// A locked file is not corrupt: it is neither moved nor rebuilt.
	_, _, err = projections.OpenOrRebuild(ctx, projections.Config{Path: path, LockTimeout: 50 * time.Millisecond}, s, nil)
	if !errors.Is(err, projections.ErrLocked) {
		t.Fatalf("OpenOrRebuild on a held file: got %v, want ErrLocked", err)
	}
	if matches, _ := filepath.Glob(path + ".corrupt-*"); len(matches) != 0 {
		t.Errorf("a locked file was moved aside: %v", matches)
	}
}

// A file cut short under an open DB makes bbolt fault reading its mapping,
// possibly with its locks held (a begin or a rollback broken off). Later
// calls fail at once, saying why, and Close returns: none waits for a lock.
func TestFaultLeavesTheDBClosable(t *testing.T) {
	s, rs := writtenLog(t, 8, 150)
	path := dbPath(t, "p")
	db, err := projections.Open(projections.Config{Path: path, BatchSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	catchUp(t, db, s)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	writeJournals(t, s, rs, 150, 10)

	within := func(what string, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s did not return within a minute of the fault", what)
			return nil
		}
	}
	ctx := t.Context()
	if err := within("the catch-up", func() error { return db.CatchUp(ctx, s, nil) }); err == nil {
		t.Fatal("CatchUp over a file cut to nothing succeeded")
	}
	err = within("a second catch-up", func() error { return db.CatchUp(ctx, s, nil) })
	if err == nil || !strings.Contains(err.Error(), "bbolt faulted") {
		t.Fatalf("a second CatchUp over a file cut to nothing = %v, want the fault's error", err)
	}
	if err := within("Close", db.Close); err == nil {
		t.Error("Close of a DB whose file faulted reported nothing")
	}
}
