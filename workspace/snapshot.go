package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Capture is a snapshot Snapshot took.
type Capture struct {
	// Ref is refs/agentjournal/<execution>/<sequence>.
	Ref    string
	Commit string
	Tree   string
	// Parent is HEAD's commit when the snapshot was taken, "" on an unborn
	// branch.
	Parent string
	// Root is the top level of the work tree captured.
	Root string
	// Files is the number of files (index entries) in the snapshot.
	Files int
	// Added, Modified and Deleted count the paths that differ from Parent
	// (on an unborn branch every path is Added).
	Added, Modified, Deleted int
}

// Snapshot captures the work tree dir is in, whole, as a commit under the
// ref RefName(executionID, seq): tracked files as they are on disk, staged
// or not, deleted files as deleted, and untracked files that are not
// ignored. The commit's parent is HEAD (none on an unborn branch).
//
// The user's index, HEAD, branches, stash and working files are not touched:
// the tree is built in a temporary index file seeded from the real index
// (whose stat data lets git hash only what changed), and only objects and
// the snapshot's own ref are written. Two snapshots of one repository may
// run at once.
//
// Taking the same snapshot again (same ref, same tree) returns the existing
// one; the ref naming another tree is ErrSnapshotExists. A directory outside
// a git work tree is ErrNotGit.
func Snapshot(ctx context.Context, dir, executionID string, seq uint64) (*Capture, error) {
	ref, err := RefName(executionID, seq)
	if err != nil {
		return nil, err
	}
	r, err := openRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	c := &Capture{Ref: ref, Root: r.top}
	if c.Parent, err = r.resolve(ctx, "HEAD"); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	tmp, err := os.MkdirTemp("", "agentjournal-index-")
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	if err := r.seedIndex(ctx, index, env, c.Parent); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	// A split index would write its shared part into the user's git
	// directory; embedded repositories would only warn.
	if _, err := git(ctx, r.top, env, nil, "-c", "core.splitIndex=false", "-c", "advice.addEmbeddedRepo=false", "add", "-A"); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	if c.Tree, err = gitLine(ctx, r.top, env, "write-tree"); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	files, err := git(ctx, r.top, env, nil, "ls-files", "-z")
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	c.Files = bytes.Count(files, []byte{0})
	args := []string{"commit-tree", c.Tree, "-m", fmt.Sprintf("agentjournal snapshot of execution %s at sequence %d", executionID, seq)}
	if c.Parent != "" {
		args = append(args, "-p", c.Parent)
	}
	if c.Commit, err = gitLine(ctx, r.top, nil, args...); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	if err := r.createRef(ctx, ref, c); err != nil {
		return nil, err
	}
	if err := r.countChanges(ctx, c); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ref, err)
	}
	return c, nil
}

// resolve returns the commit rev names, "" when it names none (HEAD on an
// unborn branch, a deleted ref).
func (r *repo) resolve(ctx context.Context, rev string) (string, error) {
	id, err := gitLine(ctx, r.top, nil, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
	if err != nil && exitCode(err) == 1 {
		return "", nil
	}
	return id, err
}

// seedIndex starts the temporary index as a copy of the real one, or from
// HEAD's tree when there is no real index yet.
func (r *repo) seedIndex(ctx context.Context, index string, env []string, head string) error {
	data, err := os.ReadFile(r.index)
	switch {
	case err == nil:
		return os.WriteFile(index, data, 0o600)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read the index: %w", err)
	case head == "":
		return nil // a missing index file is an empty index
	}
	_, err = git(ctx, r.top, env, nil, "read-tree", head)
	return err
}

// createRef points ref at c.Commit if ref does not exist yet. If it does and
// its commit has c's tree, the snapshot was already taken: c takes that
// commit.
func (r *repo) createRef(ctx context.Context, ref string, c *Capture) error {
	_, err := git(ctx, r.top, nil, strings.NewReader("create "+ref+" "+c.Commit+"\n"), "update-ref", "--stdin")
	if err == nil {
		return nil
	}
	existing, rerr := r.resolve(ctx, ref)
	if rerr != nil || existing == "" {
		return fmt.Errorf("snapshot %s: %w", ref, err)
	}
	tree, terr := gitLine(ctx, r.top, nil, "rev-parse", "--verify", existing+"^{tree}")
	if terr != nil {
		return fmt.Errorf("snapshot %s: %w", ref, terr)
	}
	if tree != c.Tree {
		return fmt.Errorf("%w: %s names commit %s of another tree; a sequence is snapshotted once", ErrSnapshotExists, ref, existing)
	}
	c.Commit = existing
	if c.Parent, err = r.resolve(ctx, existing+"^"); err != nil {
		return fmt.Errorf("snapshot %s: %w", ref, err)
	}
	return nil
}

// countChanges fills c's counts from the commit against its parent.
func (r *repo) countChanges(ctx context.Context, c *Capture) error {
	out, err := git(ctx, r.top, nil, nil, "diff-tree", "-r", "-z", "--root", "--no-renames", "--no-commit-id", "--name-status", c.Commit)
	if err != nil {
		return err
	}
	f := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	for i := 0; i+1 < len(f); i += 2 {
		switch f[i][0] {
		case 'A':
			c.Added++
		case 'D':
			c.Deleted++
		default:
			c.Modified++
		}
	}
	return nil
}
