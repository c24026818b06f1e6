package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mode is how a fork gets its working directory (spec 002's per-resource
// fork policy). Persisted in journal records: never rename.
type Mode string

const (
	// ModeKeep shares the parent's directory with the fork.
	ModeKeep Mode = "keep"
	// ModeSnapshot gives the fork a new worktree at a snapshot's commit.
	ModeSnapshot Mode = "snapshot"
	// ModeDiscard gives the fork a new, empty directory.
	ModeDiscard Mode = "discard"
)

// ParseMode reads a mode as a user spells it.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeKeep, ModeSnapshot, ModeDiscard:
		return m, nil
	}
	return "", fmt.Errorf("workspace: unknown mode %q (want one of: keep, snapshot, discard)", s)
}

// WorktreeDir is where Restore should put the directory of the fork
// forkExecutionID under the daemon's data directory:
// <dataDir>/worktrees/<forkExecutionID>. RemoveWorktree removes only
// worktrees under <dataDir>/worktrees.
func WorktreeDir(dataDir, forkExecutionID string) (string, error) {
	if err := CheckExecutionID(forkExecutionID); err != nil {
		return "", err
	}
	return filepath.Join(WorktreeRoot(dataDir), forkExecutionID), nil
}

// WorktreeRoot is the directory under dataDir that holds forks' worktrees.
func WorktreeRoot(dataDir string) string { return filepath.Join(dataDir, "worktrees") }

// Restore gives a fork its directory and returns it. keep returns src
// itself. discard creates dst empty. snapshot adds a git worktree at dst,
// detached at snapshot (a ref Snapshot made or its commit id) of the
// repository src is in; its files are the snapshot's, and the user's
// branches, index and HEAD stay as they were. dst must not exist yet for
// discard and snapshot.
//
// snapshot on a directory outside a git work tree is ErrNotGit, and a
// snapshot that is not in the repository (pruned) is ErrSnapshotMissing.
func Restore(ctx context.Context, mode Mode, src, snapshot, dst string) (string, error) {
	switch mode {
	case ModeKeep:
		fi, err := os.Stat(src)
		if err != nil {
			return "", fmt.Errorf("restore keep: %w", err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("restore keep: %s is not a directory", src)
		}
		return src, nil
	case ModeDiscard:
		if err := makeParent(dst); err != nil {
			return "", fmt.Errorf("restore discard: %w", err)
		}
		if err := os.Mkdir(dst, 0o700); err != nil {
			return "", fmt.Errorf("restore discard: %w", err)
		}
		return dst, nil
	case ModeSnapshot:
		return restoreSnapshot(ctx, src, snapshot, dst)
	}
	_, err := ParseMode(string(mode))
	return "", err
}

func restoreSnapshot(ctx context.Context, src, snapshot, dst string) (string, error) {
	r, err := openRepo(ctx, src)
	if err != nil {
		if errors.Is(err, ErrNotGit) {
			return "", fmt.Errorf("restore snapshot: %w; a fork of it can only keep the directory (mode keep) or start empty (mode discard)", err)
		}
		return "", fmt.Errorf("restore snapshot: %w", err)
	}
	if snapshot == "" || strings.HasPrefix(snapshot, "-") {
		return "", fmt.Errorf("restore snapshot: snapshot %q (want a ref under %s or a commit id)", snapshot, RefPrefix)
	}
	commit, err := r.resolve(ctx, snapshot)
	if err != nil {
		return "", fmt.Errorf("restore snapshot %s: %w", snapshot, err)
	}
	if commit == "" {
		return "", &MissingError{Snapshot: snapshot, Dir: r.top}
	}
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("restore snapshot: %s already exists (want a new directory)", dst)
	}
	if err := makeParent(dst); err != nil {
		return "", fmt.Errorf("restore snapshot: %w", err)
	}
	// The user's hooks (post-checkout) are not ours to run.
	if _, err := git(ctx, r.top, nil, nil, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet", "--", dst, commit); err != nil {
		return "", fmt.Errorf("restore snapshot %s: %w", snapshot, err)
	}
	return dst, nil
}

func makeParent(dst string) error {
	if dst == "" {
		return errors.New("no destination directory (want a path for the fork's directory)")
	}
	return os.MkdirAll(filepath.Dir(dst), 0o700)
}

// RemoveWorktree removes a fork's worktree that Restore created under root
// (WorktreeRoot of the data directory), with the fork's changes in it, and
// git's record of it. It refuses any path that is not a linked worktree
// directly under root, so it cannot remove a user's work tree.
func RemoveWorktree(ctx context.Context, root, path string) error {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if filepath.Dir(abs) != absRoot {
		return fmt.Errorf("workspace: %s is not a fork worktree (want a directory directly under %s)", path, absRoot)
	}
	// A linked worktree has a .git file, the main one a .git directory.
	fi, err := os.Lstat(filepath.Join(abs, ".git"))
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("workspace: %s is not a linked git worktree", path)
	}
	common, err := gitLine(ctx, abs, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	// Run from the common git directory: a worktree cannot remove itself.
	if _, err := git(ctx, common, nil, nil, "worktree", "remove", "--force", "--", abs); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}
