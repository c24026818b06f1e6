package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An export never writes through a link planted in its --out directory, in
// the place of the journal directory, the journal file, the log index or
// the lock: it refuses, naming the link, and the file the link points to
// is left as it was.
func TestExportRefusesPlantedLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := demoID(t, dir, "links")
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, out, target string) // plants a link to target
	}{
		{"journal directory", func(t *testing.T, out, target string) {
			mustSymlink(t, filepath.Dir(target), filepath.Join(out, "agent-journals"))
		}},
		{"journal file", func(t *testing.T, out, target string) {
			mkdir(t, filepath.Join(out, "agent-journals"))
			mustSymlink(t, target, filepath.Join(out, "agent-journals", id+".interaction.jsonl"))
		}},
		{"log index", func(t *testing.T, out, target string) {
			mkdir(t, filepath.Join(out, "agent-journals"))
			mustSymlink(t, target, filepath.Join(out, "agent-journals", "log.index.jsonl"))
		}},
		{"lock", func(t *testing.T, out, target string) {
			mkdir(t, filepath.Join(out, "agent-journals"))
			mustSymlink(t, target, filepath.Join(out, "agent-journals", ".lock"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outside := t.TempDir()
			target := filepath.Join(outside, "victim")
			if err := os.WriteFile(target, []byte("keep me\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			tc.plant(t, out, target)
			r := run(t, dir, "journal", "export", id, "--out", out)
			if r.code != exitError || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("export: exit %d, stderr %q; want 1 and a refusal naming the link", r.code, r.stderr)
			}
			if data, err := os.ReadFile(target); err != nil || string(data) != "keep me\n" {
				t.Errorf("the link's target holds %q (%v), want it untouched", data, err)
			}
			entries, err := os.ReadDir(outside)
			if err != nil || len(entries) != 1 {
				t.Errorf("the directory outside holds %d entries (%v), want only the target", len(entries), err)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}
