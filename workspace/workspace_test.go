package workspace_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/workspace"
	"github.com/google/go-cmp/cmp"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// checkRestore restores the snapshot ref of dir into a new directory and
// fails the test unless that holds want.
func checkRestore(t *testing.T, dir, ref string, want map[string]fixtures.TreeFile) {
	t.Helper()
	to := filepath.Join(t.TempDir(), "restored")
	if _, err := workspace.Restore(testCtx(t), workspace.ModeSnapshot, dir, ref, to); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, fixtures.ReadTree(t, to)); diff != "" {
		t.Fatalf("restored from %s (-want +restored):\n%s", ref, diff)
	}
}

// odd names a work tree can hold that a careless command line would split,
// quote or mangle.
var oddNames = []string{"space name.txt", "new\nline.txt", "ünïcødé/файл.txt", "-dash.txt", "tab\there.txt", `back\slash.txt`}

// dirtyRepo is a repository with a stash, a second branch, and every kind
// of change a turn can leave: modified, staged, staged then modified again,
// deleted (staged or not), a mode change, untracked files with odd names,
// and ignored files.
func dirtyRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t)
	write(t, dir, ".gitignore", "*.log\nbuild/\n")
	for _, n := range []string{"modified.txt", "staged.txt", "restaged.txt", "deleted.txt", "gone/staged-delete.txt", "mode.sh", "kept.txt"} {
		write(t, dir, n, "original "+n+"\n")
	}
	for _, n := range oddNames {
		write(t, dir, "committed-"+strings.ReplaceAll(n, "/", "-"), "committed "+n+"\n")
	}
	if err := os.Symlink("kept.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-qm", "initial")
	run(t, dir, "branch", "feature")
	run(t, dir, "tag", "v1")
	write(t, dir, "kept.txt", "stashed change\n")
	run(t, dir, "stash", "push", "-q", "-m", "user's stash")

	waitTick()
	write(t, dir, "modified.txt", "changed, not staged\n")
	write(t, dir, "staged.txt", "changed and staged\n")
	run(t, dir, "add", "staged.txt")
	write(t, dir, "restaged.txt", "staged version\n")
	run(t, dir, "add", "restaged.txt")
	write(t, dir, "restaged.txt", "changed again after staging\n")
	if err := os.Remove(filepath.Join(dir, "deleted.txt")); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "rm", "-q", "gone/staged-delete.txt")
	if err := os.Chmod(filepath.Join(dir, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range oddNames {
		write(t, dir, n, "untracked "+n+"\n")
	}
	write(t, dir, "new-staged.txt", "new and staged\n")
	run(t, dir, "add", "new-staged.txt")
	write(t, dir, "secret.log", "ignored\n")
	write(t, dir, "build/out.o", "ignored\n")
	write(t, dir, "sub/dir/deep.txt", "untracked, deep\n")
	return dir
}

// withoutIgnored is a work tree's files less the ones dirtyRepo ignores.
func withoutIgnored(files map[string]fixtures.TreeFile) map[string]fixtures.TreeFile {
	out := map[string]fixtures.TreeFile{}
	for p, f := range files {
		if strings.HasSuffix(p, ".log") || strings.HasPrefix(p, "build/") {
			continue
		}
		out[p] = f
	}
	return out
}

func TestSnapshotCapturesWorkTreeAndLeavesUserStateAlone(t *testing.T) {
	ctx := testCtx(t)
	dir := dirtyRepo(t)
	before := stateOf(t, dir)

	// From a subdirectory: the whole work tree is captured all the same.
	c := mustSnapshot(t, filepath.Join(dir, "sub"), "ae-1", 7)

	if diff := cmp.Diff(before, stateOf(t, dir)); diff != "" {
		t.Fatalf("the snapshot changed the user's repository (-before +after):\n%s", diff)
	}
	head := strings.TrimSpace(run(t, dir, "rev-parse", "HEAD"))
	wantRoot, _ := filepath.EvalSymlinks(dir)
	want := workspace.Capture{Ref: "refs/agentjournal/ae-1/7", Commit: c.Commit, Tree: c.Tree, Parent: head, Root: wantRoot,
		// .gitignore, 7 originals - 2 deleted, 6 committed odd, link, 6 odd, new-staged, deep
		Files: 1 + 5 + 6 + 1 + 6 + 1 + 1,
		// 6 odd names, new-staged, deep; modified, staged, restaged, mode.sh; deleted, staged-delete
		Added: 8, Modified: 4, Deleted: 2}
	if diff := cmp.Diff(want, *c); diff != "" {
		t.Fatalf("capture (-want +got):\n%s", diff)
	}
	if got := strings.TrimSpace(run(t, dir, "rev-parse", c.Ref)); got != c.Commit {
		t.Fatalf("%s names %s, want %s", c.Ref, got, c.Commit)
	}

	fork := filepath.Join(t.TempDir(), "data", "worktrees", "ae-fork")
	got, err := workspace.Restore(ctx, workspace.ModeSnapshot, dir, c.Ref, fork)
	if err != nil {
		t.Fatal(err)
	}
	if got != fork {
		t.Fatalf("restore returned %s, want %s", got, fork)
	}
	if diff := cmp.Diff(withoutIgnored(before.Files), fixtures.ReadTree(t, fork)); diff != "" {
		t.Fatalf("restored worktree differs from the snapshotted work tree (-original +restored):\n%s", diff)
	}
	if diff := cmp.Diff(before, stateOf(t, dir)); diff != "" {
		t.Fatalf("the restore changed the user's repository (-before +after):\n%s", diff)
	}
	if st := run(t, fork, "status", "--porcelain"); st != "" {
		t.Fatalf("restored worktree is not clean at its commit:\n%s", st)
	}
}

func TestSnapshotUnbornBranch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		staged bool // with a staged file there is an index file; without, none
	}{{"no index", false}, {"staged file", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			write(t, dir, "a.txt", "a\n")
			write(t, dir, "dir/b.txt", "b\n")
			if tc.staged {
				run(t, dir, "add", "a.txt")
			}
			before := stateOf(t, dir)
			if (before.Index != nil) != tc.staged {
				t.Fatalf("index file present: %v, want %v", before.Index != nil, tc.staged)
			}
			c := mustSnapshot(t, dir, "ae-unborn", 1)
			if c.Parent != "" || c.Added != 2 || c.Files != 2 || c.Modified != 0 || c.Deleted != 0 {
				t.Fatalf("capture %+v, want no parent, 2 files, 2 added", c)
			}
			if parents := run(t, dir, "rev-list", "--parents", "-n1", c.Commit); strings.TrimSpace(parents) != c.Commit {
				t.Fatalf("snapshot commit has parents: %q", parents)
			}
			if diff := cmp.Diff(before, stateOf(t, dir)); diff != "" {
				t.Fatalf("the snapshot changed the user's repository (-before +after):\n%s", diff)
			}
			checkRestore(t, dir, c.Commit, before.Files)
		})
	}
}

func TestNotGit(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	write(t, dir, "a.txt", "a\n")

	_, err := workspace.Snapshot(ctx, dir, "ae-1", 1)
	var ng *workspace.NotGitError
	if !errors.Is(err, workspace.ErrNotGit) || !errors.As(err, &ng) || ng.Dir != dir {
		t.Fatalf("snapshot of a plain directory: %v, want a NotGitError for %s", err, dir)
	}
	_, err = workspace.Restore(ctx, workspace.ModeSnapshot, dir, "refs/agentjournal/ae-1/1", filepath.Join(t.TempDir(), "fork"))
	if !errors.Is(err, workspace.ErrNotGit) || !strings.Contains(err.Error(), "keep") || !strings.Contains(err.Error(), "discard") {
		t.Fatalf("restore snapshot of a plain directory: %v, want ErrNotGit naming keep and discard", err)
	}
	if _, err := workspace.List(ctx, dir); !errors.Is(err, workspace.ErrNotGit) {
		t.Fatalf("list: %v, want ErrNotGit", err)
	}
	// A bare repository has no work tree to snapshot.
	bare := filepath.Join(t.TempDir(), "bare.git")
	run(t, t.TempDir(), "init", "-q", "--bare", bare)
	if _, err := workspace.Snapshot(ctx, bare, "ae-1", 1); !errors.Is(err, workspace.ErrNotGit) {
		t.Fatalf("snapshot of a bare repository: %v, want ErrNotGit", err)
	}
	if got := fixtures.ReadTree(t, dir); len(got) != 1 {
		t.Fatalf("plain directory now holds %v, want only a.txt", got)
	}
}

func TestKeepAndDiscard(t *testing.T) {
	ctx := testCtx(t)
	src := t.TempDir() // not a git work tree: keep and discard need none
	got, err := workspace.Restore(ctx, workspace.ModeKeep, src, "", "")
	if err != nil || got != src {
		t.Fatalf("keep: %q, %v; want %q", got, err, src)
	}
	dst := filepath.Join(t.TempDir(), "worktrees", "ae-fork")
	got, err = workspace.Restore(ctx, workspace.ModeDiscard, src, "", dst)
	if err != nil || got != dst {
		t.Fatalf("discard: %q, %v; want %q", got, err, dst)
	}
	if entries, err := os.ReadDir(dst); err != nil || len(entries) != 0 {
		t.Fatalf("discard made %v, %v; want an empty directory", entries, err)
	}
	if _, err := workspace.Restore(ctx, workspace.ModeDiscard, src, "", dst); err == nil {
		t.Fatal("discard into an existing directory succeeded, want an error")
	}
	_, err = workspace.Restore(ctx, workspace.Mode("copy"), src, "", dst)
	if err == nil || !strings.Contains(err.Error(), "want one of: keep, snapshot, discard") {
		t.Fatalf("unknown mode: %v, want the accepted modes named", err)
	}
	if m, err := workspace.ParseMode("snapshot"); err != nil || m != workspace.ModeSnapshot {
		t.Fatalf("ParseMode(snapshot) = %q, %v", m, err)
	}
}

func TestHostileIDs(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	write(t, dir, "a.txt", "a\n")
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
		// gitAccepts: git check-ref-format accepts refs/agentjournal/<id>/1
		// (our rules are stricter: one component, bounded, UTF-8).
		gitAccepts bool
	}{
		{"generated", "ae-0123456789ab", true, true},
		{"underscore and dot", "exec_1.2", true, true},
		{"unicode", "ünïcødé", true, true},
		{"empty", "", false, false},
		{"space", "a b", false, false},
		{"slash", "a/b", false, true},
		{"dot dot", "a..b", false, false},
		{"parent", "..", false, false},
		{"leading dot", ".a", false, false},
		{"trailing dot", "a.", false, true},
		{"lock", "a.lock", false, false},
		{"at", "@", false, true},
		{"at brace", "a@{1}", false, false},
		{"tilde", "a~1", false, false},
		{"caret", "a^", false, false},
		{"colon", "a:b", false, false},
		{"question", "a?", false, false},
		{"star", "a*", false, false},
		{"bracket", "a[b", false, false},
		{"backslash", `a\b`, false, false},
		{"newline", "a\nb", false, false},
		{"del", "a\x7f", false, false},
		{"nul", "a\x00b", false, false},
		{"too long", strings.Repeat("x", 201), false, true},
		{"not utf-8", "a\xff", false, true},
		{"option", "--output=x", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.id, "\x00") {
				err := exec.Command("git", "check-ref-format", "refs/agentjournal/"+tc.id+"/1").Run()
				if (err == nil) != tc.gitAccepts {
					t.Fatalf("git check-ref-format accepts %q: %v, want %v", tc.id, err == nil, tc.gitAccepts)
				}
			}
			c, err := workspace.Snapshot(ctx, dir, tc.id, 1)
			if tc.ok {
				if err != nil || c.Ref != "refs/agentjournal/"+tc.id+"/1" {
					t.Fatalf("snapshot %q: %v, %v", tc.id, c, err)
				}
				return
			}
			if !errors.Is(err, workspace.ErrInvalidID) || !strings.Contains(err.Error(), "want 1 to 200 bytes") {
				t.Fatalf("snapshot %q: %v, want ErrInvalidID saying what is accepted", tc.id, err)
			}
			if _, err := workspace.WorktreeDir(t.TempDir(), tc.id); !errors.Is(err, workspace.ErrInvalidID) {
				t.Fatalf("WorktreeDir %q: %v, want ErrInvalidID", tc.id, err)
			}
		})
	}
	if _, err := workspace.Snapshot(ctx, dir, "ae-1", 0); !errors.Is(err, workspace.ErrInvalidID) {
		t.Fatalf("sequence 0: %v, want ErrInvalidID", err)
	}
	var names []string
	for _, r := range mustList(t, dir) {
		names = append(names, r.ExecutionID)
	}
	if diff := cmp.Diff([]string{"--output=x", "ae-0123456789ab", "exec_1.2", "ünïcødé"}, names); diff != "" {
		t.Fatalf("snapshots made (-want +got):\n%s", diff)
	}
}

// mustSnapshot snapshots dir for the execution id at seq, failing the test
// on an error.
func mustSnapshot(t *testing.T, dir, id string, seq uint64) *workspace.Capture {
	t.Helper()
	c, err := workspace.Snapshot(testCtx(t), dir, id, seq)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustList(t *testing.T, dir string, exec ...string) []workspace.Ref {
	t.Helper()
	refs, err := workspace.List(context.Background(), dir, exec...)
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

func TestSnapshotTwiceAtOneSequence(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	write(t, dir, "a.txt", "a\n")
	first := mustSnapshot(t, dir, "ae-1", 1)
	again, err := workspace.Snapshot(ctx, dir, "ae-1", 1)
	if err != nil || again.Commit != first.Commit {
		t.Fatalf("retaking an unchanged snapshot: %v, %v; want commit %s", again, err, first.Commit)
	}
	write(t, dir, "a.txt", "changed\n")
	if _, err := workspace.Snapshot(ctx, dir, "ae-1", 1); !errors.Is(err, workspace.ErrSnapshotExists) {
		t.Fatalf("retaking a changed snapshot: %v, want ErrSnapshotExists", err)
	}
	if got := strings.TrimSpace(run(t, dir, "rev-parse", "refs/agentjournal/ae-1/1")); got != first.Commit {
		t.Fatalf("ref moved to %s, want %s", got, first.Commit)
	}
}

func TestRestorePrunedSnapshot(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	write(t, dir, "a.txt", "a\n")
	c := mustSnapshot(t, dir, "ae-1", 3)
	if _, err := workspace.Prune(ctx, dir, workspace.Filter{ExecutionID: "ae-1"}); err != nil {
		t.Fatal(err)
	}
	fork := filepath.Join(t.TempDir(), "fork")
	_, err := workspace.Restore(ctx, workspace.ModeSnapshot, dir, c.Ref, fork)
	if !errors.Is(err, workspace.ErrSnapshotMissing) || !strings.Contains(err.Error(), "refs/agentjournal/ae-1/3") {
		t.Fatalf("restore of a pruned snapshot: %v, want ErrSnapshotMissing naming the ref", err)
	}
	absent := strings.Repeat("1", len(c.Commit))
	if _, err := workspace.Restore(ctx, workspace.ModeSnapshot, dir, absent, fork); !errors.Is(err, workspace.ErrSnapshotMissing) {
		t.Fatalf("restore of an absent commit: %v, want ErrSnapshotMissing", err)
	}
	if _, err := os.Stat(fork); !os.IsNotExist(err) {
		t.Fatalf("failed restores left %s behind (%v)", fork, err)
	}
}

func TestPruneLeavesOtherRefsAlone(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	write(t, dir, "a.txt", "a\n")
	run(t, dir, "add", "a.txt")
	run(t, dir, "commit", "-qm", "one")
	head := strings.TrimSpace(run(t, dir, "rev-parse", "HEAD"))
	run(t, dir, "branch", "agentjournal")
	run(t, dir, "tag", "agentjournal/ae-1/1")
	write(t, dir, "a.txt", "stashed\n")
	run(t, dir, "stash", "push", "-q")
	// Refs under the namespace, or beside it, that Snapshot cannot have made.
	for _, r := range []string{"refs/agentjournalx/ae-1/1", "refs/agentjournal/ae-x", "refs/agentjournal/ae-2/01", "refs/agentjournal/ae-2/x", "refs/notes/agentjournal"} {
		run(t, dir, "update-ref", r, head)
	}
	// An old snapshot, committed in 2001.
	tree := strings.TrimSpace(run(t, dir, "rev-parse", "HEAD^{tree}"))
	old := strings.TrimSpace(runEnv(t, dir, []string{"GIT_COMMITTER_DATE=2001-01-01T00:00:00Z"}, "commit-tree", tree, "-m", "old"))
	run(t, dir, "update-ref", "refs/agentjournal/ae-old/1", old)
	for _, s := range []struct {
		exec string
		seq  uint64
	}{{"ae-1", 1}, {"ae-1", 2}, {"ae-1", 10}, {"ae-2", 1}} {
		mustSnapshot(t, dir, s.exec, s.seq)
	}
	allRefs := func() []string {
		return strings.Split(strings.TrimSpace(run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")), "\n")
	}
	before := allRefs()

	var seqs []uint64
	for _, r := range mustList(t, dir, "ae-1") {
		seqs = append(seqs, r.Sequence)
	}
	if diff := cmp.Diff([]uint64{1, 2, 10}, seqs); diff != "" {
		t.Fatalf("list ae-1 sequences (-want +got):\n%s", diff)
	}

	if _, err := workspace.Prune(ctx, dir, workspace.Filter{}); err == nil || !strings.Contains(err.Error(), "want an execution id") {
		t.Fatalf("prune with no filter: %v, want an error saying what is accepted", err)
	}
	names := func(refs []workspace.Ref) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.Name)
		}
		return out
	}
	gone, err := workspace.Prune(ctx, dir, workspace.Filter{ExecutionID: "ae-1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"refs/agentjournal/ae-1/1", "refs/agentjournal/ae-1/2", "refs/agentjournal/ae-1/10"}, names(gone)); diff != "" {
		t.Fatalf("pruned by execution (-want +got):\n%s", diff)
	}
	gone, err = workspace.Prune(ctx, dir, workspace.Filter{Before: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"refs/agentjournal/ae-old/1"}, names(gone)); diff != "" {
		t.Fatalf("pruned by age (-want +got):\n%s", diff)
	}
	gone, err = workspace.Prune(ctx, dir, workspace.Filter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"refs/agentjournal/ae-2/1"}, names(gone)); diff != "" {
		t.Fatalf("pruned all (-want +got):\n%s", diff)
	}
	var want []string
	for _, r := range before {
		if !strings.HasPrefix(r, "refs/agentjournal/ae-1/") && !strings.HasPrefix(r, "refs/agentjournal/ae-old/") && !strings.HasPrefix(r, "refs/agentjournal/ae-2/1 ") {
			want = append(want, r)
		}
	}
	if diff := cmp.Diff(want, allRefs()); diff != "" {
		t.Fatalf("refs after prune (-want +got):\n%s", diff)
	}
	if len(want) != 9 { // main, agentjournal, the tag, the stash, the five odd refs
		t.Fatalf("%d refs left, want 9: %v", len(want), want)
	}
}

func TestRemoveWorktree(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	write(t, dir, "a.txt", "a\n")
	c := mustSnapshot(t, dir, "ae-1", 1)
	root := workspace.WorktreeRoot(t.TempDir())
	fork, err := workspace.WorktreeDir(filepath.Dir(root), "ae-fork")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.Restore(ctx, workspace.ModeSnapshot, dir, c.Ref, fork); err != nil {
		t.Fatal(err)
	}
	write(t, fork, "a.txt", "the fork's change\n")
	if err := workspace.RemoveWorktree(ctx, root, dir); err == nil {
		t.Fatal("RemoveWorktree removed the user's work tree, outside the root")
	}
	if err := workspace.RemoveWorktree(ctx, filepath.Dir(dir), dir); err == nil {
		t.Fatal("RemoveWorktree removed the user's main work tree")
	}
	if err := workspace.RemoveWorktree(ctx, root, fork); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fork); !os.IsNotExist(err) {
		t.Fatalf("fork worktree still there: %v", err)
	}
	if list := run(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, "ae-fork") {
		t.Fatalf("git still lists the fork's worktree:\n%s", list)
	}
	if got := fixtures.ReadTree(t, dir); got["a.txt"].Content != "a\n" {
		t.Fatalf("user's a.txt is %q", got["a.txt"].Content)
	}
}

// TestConcurrentSnapshots: two executions sharing one directory snapshot it
// at the same time; each must capture the whole tree, and the user's index
// must stay as it was (one shared temporary index would break both).
func TestConcurrentSnapshots(t *testing.T) {
	ctx := testCtx(t)
	dir := dirtyRepo(t)
	before := stateOf(t, dir)
	want := fixtures.ReadTree(t, dir)
	const turns = 5
	var wg sync.WaitGroup
	errs := make([]error, 2)
	caps := make([][]*workspace.Capture, 2)
	for g, exec := range []string{"ae-a", "ae-b"} {
		wg.Go(func() {
			for seq := uint64(1); seq <= turns; seq++ {
				c, err := workspace.Snapshot(ctx, dir, exec, seq)
				if err != nil {
					errs[g] = err
					return
				}
				caps[g] = append(caps[g], c)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for g := range caps {
		for _, c := range caps[g] {
			if c.Tree != caps[0][0].Tree {
				t.Fatalf("%s has tree %s, want %s like every other snapshot of the unchanged tree", c.Ref, c.Tree, caps[0][0].Tree)
			}
		}
	}
	if n := len(mustList(t, dir)); n != 2*turns {
		t.Fatalf("%d snapshots listed, want %d", n, 2*turns)
	}
	if diff := cmp.Diff(before, stateOf(t, dir)); diff != "" {
		t.Fatalf("concurrent snapshots changed the user's repository (-before +after):\n%s", diff)
	}
	checkRestore(t, dir, caps[1][turns-1].Ref, withoutIgnored(want))
}

// TestSnapshotOfAFork: a fork's worktree is itself snapshotted at its turns;
// its index is a linked worktree's, and it too must stay as it was.
func TestSnapshotOfAFork(t *testing.T) {
	ctx := testCtx(t)
	dir := dirtyRepo(t)
	c := mustSnapshot(t, dir, "ae-1", 1)
	fork, err := workspace.WorktreeDir(t.TempDir(), "ae-fork")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.Restore(ctx, workspace.ModeSnapshot, dir, c.Ref, fork); err != nil {
		t.Fatal(err)
	}
	waitTick()
	write(t, fork, "modified.txt", "the fork's change\n")
	write(t, fork, "fork-new.txt", "new in the fork\n")
	userBefore := stateOf(t, dir)
	forkIndex := strings.TrimSpace(run(t, fork, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	indexBefore, err := os.ReadFile(forkIndex)
	if err != nil {
		t.Fatal(err)
	}
	forkFiles := fixtures.ReadTree(t, fork)

	fc := mustSnapshot(t, fork, "ae-fork", 1)
	if fc.Parent != c.Commit || fc.Added != 1 || fc.Modified != 1 || fc.Deleted != 0 {
		t.Fatalf("fork's capture %+v, want parent %s, 1 added, 1 modified", fc, c.Commit)
	}
	if indexAfter, err := os.ReadFile(forkIndex); err != nil || string(indexAfter) != string(indexBefore) {
		t.Fatalf("the fork's index changed (%v)", err)
	}
	if diff := cmp.Diff(userBefore, stateOf(t, dir)); diff != "" {
		t.Fatalf("snapshotting the fork changed the user's repository (-before +after):\n%s", diff)
	}
	checkRestore(t, fork, fc.Ref, forkFiles)
}
