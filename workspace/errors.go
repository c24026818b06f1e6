package workspace

import (
	"errors"
	"fmt"
)

// ErrNotGit reports a directory that is not inside a git work tree: it has
// no snapshots, and a fork of it can only keep it or discard it.
var ErrNotGit = errors.New("workspace: not a git work tree")

// ErrInvalidID reports an execution id or sequence that cannot name a ref.
var ErrInvalidID = errors.New("workspace: invalid snapshot name")

// ErrSnapshotMissing reports a snapshot whose ref or commit is not in the
// repository, typically because it was pruned.
var ErrSnapshotMissing = errors.New("workspace: snapshot missing")

// ErrSnapshotExists reports a snapshot ref that already names another tree.
var ErrSnapshotExists = errors.New("workspace: snapshot exists")

// NotGitError is ErrNotGit with the directory and git's reason.
type NotGitError struct {
	Dir    string
	Reason string
}

func (e *NotGitError) Error() string {
	return fmt.Sprintf("workspace: %s is not in a git work tree (%s)", e.Dir, e.Reason)
}

// Is makes errors.Is(err, ErrNotGit) hold.
func (e *NotGitError) Is(target error) bool { return target == ErrNotGit }

// MissingError is ErrSnapshotMissing naming what was asked for.
type MissingError struct {
	// Snapshot is the ref or commit the caller gave.
	Snapshot string
	// Dir is the repository it was looked up in.
	Dir string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("workspace: snapshot %s is not in the repository at %s (pruned?); fork with keep or discard, or from a snapshot workspace.List shows", e.Snapshot, e.Dir)
}

// Is makes errors.Is(err, ErrSnapshotMissing) hold.
func (e *MissingError) Is(target error) bool { return target == ErrSnapshotMissing }
