//go:build unix

package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVersionAskedOncePerFile: a CLI is asked its version once, and again
// only when its file changes; the answer is read from what it prints, with
// the arguments the agent gives, in a directory of its own.
func TestVersionAskedOncePerFile(t *testing.T) {
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked")
	program := script(t, dir, "codex", `echo "$* in $PWD" >> `+asked+`; echo "codex-cli 0.150.1"`)
	var vs versions
	for range 3 {
		if got := vs.ask(program, []string{"--version"}, os.Environ()); got != "0.150.1" {
			t.Fatalf("version %q, want 0.150.1", got)
		}
	}
	data, _ := os.ReadFile(asked)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "--version in ") || strings.HasPrefix(strings.TrimPrefix(lines[0], "--version in "), dir) {
		t.Fatalf("asked %q, want once, with --version, outside the program's directory", lines)
	}
	// An update replaces the file: the new one is asked.
	program = script(t, dir, "codex", `echo again >> `+asked+`; echo "codex-cli 0.169.0"`)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(program, later, later); err != nil {
		t.Fatal(err)
	}
	if got := vs.ask(program, []string{"--version"}, os.Environ()); got != "0.169.0" {
		t.Fatalf("after the update: version %q, want 0.169.0", got)
	}
}

// TestVersionUnknown: a program that names no version, fails, or does not
// answer within the bound has none; a missing one is not run.
func TestVersionUnknown(t *testing.T) {
	dir := t.TempDir()
	vs := versions{timeout: 200 * time.Millisecond}
	for _, tc := range []struct{ name, program string }{
		{"no version", script(t, dir, "silent", `echo "usage: silent [flags]"`)},
		{"fails", script(t, dir, "fails", `echo "unknown flag" >&2; exit 2`)},
		{"hangs", script(t, dir, "hangs", `exec sleep 600`)},
		{"missing", filepath.Join(dir, "missing")},
	} {
		if got := vs.ask(tc.program, []string{"--version"}, os.Environ()); got != "" {
			t.Errorf("%s: version %q, want none", tc.name, got)
		}
	}
}
