package workspace_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/workspace"
)

// The work tree benchmarked: benchDirs directories of benchFilesPerDir
// files of about 1 KiB each, committed and packed, as a mid-sized project
// is; each turn changes benchChanged files and adds one.
const (
	benchDirs        = 100
	benchFilesPerDir = 100
	benchChanged     = 3
)

// BenchmarkSnapshot measures a turn's snapshot of a 10,000-file work tree
// against two raw baselines taken on the same turn: `git add -A` and `git
// write-tree` run on a throwaway copy of the repository (the least git can
// do to record the tree, at the cost of the copy's index), and `cp -r` of
// the repository (a snapshot by copying). Each op makes the same changes
// in both repositories, then runs the snapshot, the raw git commands and
// the copy. Growth is the bytes added under .git/objects.
func BenchmarkSnapshot(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	repo := benchRepo(b)
	raw := filepath.Join(b.TempDir(), "raw")
	if out, err := exec.Command("cp", "-a", repo, raw).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	// The copy's index holds the original's inodes and ctimes: refresh it so
	// that the baseline hashes only what each turn changed.
	run(b, raw, "update-index", "-q", "--refresh")
	copies := b.TempDir()

	var snapTime, rawTime, copyTime time.Duration
	var snapBytes, rawBytes, copyBytes int64
	turn := uint64(0)
	for b.Loop() {
		turn++
		for _, dir := range []string{repo, raw} {
			benchTurn(b, dir, turn)
		}
		snapBefore, rawBefore := objectBytes(b, repo), objectBytes(b, raw)

		t0 := time.Now()
		c, err := workspace.Snapshot(ctx, repo, "ae-bench", turn)
		snapTime += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if c.Files != benchDirs*benchFilesPerDir+int(turn) {
			b.Fatalf("snapshot holds %d files, want %d", c.Files, benchDirs*benchFilesPerDir+int(turn))
		}

		t0 = time.Now()
		run(b, raw, "add", "-A")
		tree := run(b, raw, "write-tree")
		rawTime += time.Since(t0)
		if tree[:len(tree)-1] != c.Tree {
			b.Fatalf("raw tree %s, snapshot tree %s: the two did not record the same files", tree, c.Tree)
		}

		dst := filepath.Join(copies, fmt.Sprint(turn))
		t0 = time.Now()
		if out, err := exec.Command("cp", "-r", repo, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
		copyTime += time.Since(t0)
		// Copies are kept, as snapshots are: deleting them between turns
		// makes the next copy wait for the file system to free blocks.
		copyBytes += treeBytes(b, dst)

		snapBytes += objectBytes(b, repo) - snapBefore
		rawBytes += objectBytes(b, raw) - rawBefore
	}
	n := float64(turn)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(snapTime), "snapshot-ms/turn")
	b.ReportMetric(ms(rawTime), "add+write-tree-ms/turn")
	b.ReportMetric(snapTime.Seconds()/rawTime.Seconds(), "snapshot/raw")
	b.ReportMetric(ms(copyTime), "cp-ms/turn")
	b.ReportMetric(float64(snapBytes)/n, "snapshot-B/turn")
	b.ReportMetric(float64(rawBytes)/n, "add+write-tree-B/turn")
	b.ReportMetric(float64(copyBytes)/n, "cp-B/turn")
}

// benchRepo makes the benchmark's repository: 10,000 committed files,
// packed by git gc.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := newRepo(b)
	line := "a line of source code as an agent might edit it, long enough to matter\n"
	for d := range benchDirs {
		for f := range benchFilesPerDir {
			var content []byte
			for i := range 14 {
				content = fmt.Appendf(content, "%d/%d/%d %s", d, f, i, line)
			}
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d", d), fmt.Sprintf("file%03d.go", f))
			if f == 0 {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	run(b, dir, "add", "-A")
	run(b, dir, "-c", "gc.auto=0", "commit", "-qm", "10,000 files")
	run(b, dir, "gc", "-q")
	return dir
}

// benchTurn is what an agent's turn leaves: benchChanged files edited in
// different directories and one new file.
func benchTurn(b *testing.B, dir string, turn uint64) {
	b.Helper()
	for i := range benchChanged {
		d := (int(turn)*7 + i*31) % benchDirs
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", d), fmt.Sprintf("file%03d.go", (int(turn)+i)%benchFilesPerDir))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		_, err = fmt.Fprintf(f, "// edited in turn %d\n", turn)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	write(b, dir, fmt.Sprintf("new/turn%d.go", turn), fmt.Sprintf("package new // added in turn %d\n", turn))
}

// objectBytes is the size of everything under dir's .git/objects.
func objectBytes(b *testing.B, dir string) int64 {
	return treeBytes(b, filepath.Join(dir, ".git", "objects"))
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
