package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// snapshotRepo makes a git work tree with one commit.
func snapshotRepo(t *testing.T) string {
	t.Helper()
	return fixtures.GitTree(t, "a.txt", "a\n")
}

// run snapshots an agent's work tree; snapshots ls lists the refs, with
// the journal's directory by default; prune deletes them and ls then shows
// the journal's records as pruned.
func TestSnapshotsLsAndPrune(t *testing.T) {
	data, repo := t.TempDir(), snapshotRepo(t)
	id, err := eventstore.NewAgentExecutionID(eventstore.OwnerSystem, "local", "snap-1")
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, data, "run", "--snapshots=on", "--seed", "snap-1", "--dir", repo, "--", "sh", "-c", "echo b > b.txt"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	ls := run(t, data, "snapshots", "ls", id)
	if ls.code != 0 {
		t.Fatalf("snapshots ls: exit %d: %s", ls.code, ls.stderr)
	}
	if got := strings.Count(ls.stdout, "kept"); got != 2 {
		t.Errorf("snapshots ls %s listed %d kept snapshots, want 2 (start, exit):\n%s", id, got, ls.stdout)
	}
	if all := run(t, data, "snapshots", "ls", "--dir", repo); strings.Count(all.stdout, id) != 2 {
		t.Errorf("snapshots ls --dir: exit %d, want both of %s:\n%s%s", all.code, id, all.stdout, all.stderr)
	}
	pr := run(t, data, "snapshots", "prune", "--execution", id)
	if pr.code != 0 || !strings.Contains(pr.stdout, "2 snapshots pruned in "+repo) {
		t.Fatalf("snapshots prune: exit %d:\n%s%s", pr.code, pr.stdout, pr.stderr)
	}
	after := run(t, data, "snapshots", "ls", id)
	if strings.Count(after.stdout, "pruned") != 2 || strings.Contains(after.stdout, "kept") {
		t.Errorf("snapshots ls after prune, want 2 pruned, none kept:\n%s%s", after.stdout, after.stderr)
	}
}

// --snapshots=off takes none.
func TestRunSnapshotsOff(t *testing.T) {
	data, repo := t.TempDir(), snapshotRepo(t)
	if r := run(t, data, "run", "--snapshots=off", "--dir", repo, "--", "sh", "-c", "echo b > b.txt"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if ls := run(t, data, "snapshots", "ls", "--dir", repo); ls.code != 0 || strings.Count(ls.stdout, "\n") != 1 {
		t.Errorf("snapshots ls after --snapshots=off: exit %d, want only the heading:\n%s%s", ls.code, ls.stdout, ls.stderr)
	}
}

func TestSnapshotsBadInput(t *testing.T) {
	data, plain := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no subcommand", []string{"snapshots"}, []string{"missing subcommand", "ls, prune"}},
		{"unknown subcommand", []string{"snapshots", "rm"}, []string{`unknown subcommand "rm"`, "ls, prune"}},
		{"prune without filter", []string{"snapshots", "prune", "--dir", plain}, []string{"missing filter", "--execution ID, --before DURATION|TIME, --all"}},
		{"prune all and more", []string{"snapshots", "prune", "--all", "--before", "1h"}, []string{"--all goes alone"}},
		{"prune bad before", []string{"snapshots", "prune", "--before", "yesterday"}, []string{`"yesterday"`, "duration", "RFC 3339"}},
		{"ls bad id", []string{"snapshots", "ls", "a/b"}, []string{"execution id", "contains '/'"}},
		{"ls unknown execution", []string{"snapshots", "ls", "ae-nope"}, []string{"no journal", "ae-nope"}},
		{"ls outside a work tree", []string{"snapshots", "ls", "--dir", plain}, []string{"has no snapshots", "not in a git work tree", "--dir"}},
		{"run bad snapshots", []string{"run", "--snapshots=maybe", "--", "true"}, []string{`"maybe"`, "want on or off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, data, c.args...)
			if r.code == 0 {
				t.Fatalf("%v: exit 0, want an error", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%v: stderr %q, want it to contain %q", c.args, r.stderr, w)
				}
			}
		})
	}
}
