package main

import (
	"strings"
	"testing"
)

// fork and resume of an execution whose journal was imported print the
// command and directory its file gave and refuse to run them unless they
// are restated, or --trust-imported-command is given.
func TestForkAndResumeOfAnImportedJournal(t *testing.T) {
	t.Parallel()
	_, id, file := exportDemo(t)
	daemonDir := t.TempDir()
	startServe(t, daemonDir)
	mustRun(t, daemonDir, "journal", "import", file)

	for _, args := range [][]string{
		{"resume", id, "--prompt", "again"},
		{"fork", id, "--at", "2", "--prompt", "again"},
		{"resume", id, "--prompt", "again", "--command", `["/bin/sh","-c","true"]`, "--cwd", "/"},
		{"resume", id, "--prompt", "again", "--command", `["/bin/sh","-c","true"]`, "--cwd", "/", "--trust-imported-command"},
	} {
		r := run(t, daemonDir, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "was imported from a file") || !strings.Contains(r.stderr, "command:") ||
			!strings.Contains(r.stderr, "directory:") || !strings.Contains(r.stderr, "--trust-imported-command") {
			t.Errorf("%s: exit %d, stderr %q; want 1, the command and directory printed and how to restate them", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := run(t, daemonDir, "resume", id, "--prompt", "x", "--command", "claude -p"); r.code == 0 || !strings.Contains(r.stderr, "not a JSON array") {
		t.Errorf("--command not JSON: exit %d, stderr %q; want a refusal saying it is not a JSON array", r.code, r.stderr)
	}
	// Trusted, it goes past the refusal to the launch, whatever becomes of
	// it.
	r := run(t, daemonDir, "resume", id, "--prompt", "again", "--trust-imported-command")
	if strings.Contains(r.stderr, "refusing to run") || !strings.Contains(r.stderr, "as --trust-imported-command asks") {
		t.Errorf("resume --trust-imported-command: exit %d, stderr %q; want it run past the refusal", r.code, r.stderr)
	}
}
