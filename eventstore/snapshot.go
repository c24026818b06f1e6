package eventstore

import (
	"fmt"
	"strconv"
	"strings"
)

// The workspace resource records (spec 002's snapshot_created and
// restore_attempted), named like every other kind: <noun>.<past participle>.
// Persisted: never rename.
const (
	KindSnapshot Kind = "snapshot.created"
	KindRestore  Kind = "restore.attempted"
)

// SnapshotRefPrefix is the ref namespace snapshots live under in the
// user's repository (workspace.RefPrefix).
const SnapshotRefPrefix = "refs/agentjournal/"

// SnapshotCreated records a snapshot of the execution's working directory
// taken after the journal's record AtSequence: a commit of the whole work
// tree under Ref in the repository Resource is in (SNAPSHOT_OF Resource).
// A fork at sequence S finds its files in the last snapshot with
// AtSequence ≤ S.
type SnapshotCreated struct {
	Base
	// Resource is the working directory snapshotted, as the header names it.
	Resource string `json:"resource"`
	// Ref is refs/agentjournal/<execution>/<atSequence>.
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	// Parent is HEAD's commit when the snapshot was taken; absent on an
	// unborn branch.
	Parent string `json:"parent,omitempty"`
	// AtSequence is the last journal record before the snapshot was taken.
	AtSequence uint64 `json:"atSequence"`
	// Files counts the files in the snapshot; Added, Modified and Deleted
	// count the paths that differ from Parent.
	Files    int `json:"files"`
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
}

// RestoreMode is how a fork gets a resource (spec 002's per-resource fork
// policy; workspace.Mode). Persisted.
type RestoreMode string

const (
	RestoreKeep     RestoreMode = "keep"
	RestoreSnapshot RestoreMode = "snapshot"
	RestoreDiscard  RestoreMode = "discard"
)

// RestoreModes lists the accepted restore modes.
var RestoreModes = []RestoreMode{RestoreKeep, RestoreSnapshot, RestoreDiscard}

// RestoreOutcome is what a restore attempt came to. Persisted.
type RestoreOutcome string

const (
	// RestoreRestored: the fork has its directory (RestoredTo).
	RestoreRestored RestoreOutcome = "restored"
	// RestoreUnsupported: the resource cannot be restored that way, e.g.
	// snapshot mode on a directory outside a git work tree.
	RestoreUnsupported RestoreOutcome = "unsupported"
	// RestoreMissing: the snapshot is no longer in the repository (pruned).
	RestoreMissing RestoreOutcome = "missing"
	// RestoreFailed: anything else went wrong; Detail says what.
	RestoreFailed RestoreOutcome = "failed"
)

// RestoreOutcomes lists the accepted restore outcomes.
var RestoreOutcomes = []RestoreOutcome{RestoreRestored, RestoreUnsupported, RestoreMissing, RestoreFailed}

// RestoreAttempted records a fork's attempt to get a resource of its parent
// by keep, snapshot or discard, and the outcome. RestoredTo is the directory
// the fork got (RESTORES_TO from the snapshot, when there is one).
type RestoreAttempted struct {
	Base
	// Resource is the parent's working directory.
	Resource string      `json:"resource"`
	Mode     RestoreMode `json:"mode"`
	// SnapshotRef and SnapshotCommit name the snapshot restored, for mode
	// snapshot.
	SnapshotRef    string         `json:"snapshotRef,omitempty"`
	SnapshotCommit string         `json:"snapshotCommit,omitempty"`
	Outcome        RestoreOutcome `json:"outcome"`
	// RestoredTo is the fork's directory; required when restored.
	RestoredTo string `json:"restoredTo,omitempty"`
	// Detail says why a restore was not done, or what it did.
	Detail string `json:"detail,omitempty"`
}

func (*SnapshotCreated) Kind() Kind  { return KindSnapshot }
func (*RestoreAttempted) Kind() Kind { return KindRestore }

// snapshotKey is the natural key of a snapshot: one per sequence.
func snapshotKey(r *SnapshotCreated) string {
	return "snapshot/" + strconv.FormatUint(r.AtSequence, 10)
}

// restoreKey is the natural key of a restore attempt: one per resource.
func restoreKey(r *RestoreAttempted) string { return "restore/" + r.Resource }

func (r *SnapshotCreated) validate(p *problems) {
	p.required("resource", r.Resource != "")
	switch {
	case r.Ref == "":
		p.required("ref", false)
	case !strings.HasPrefix(r.Ref, SnapshotRefPrefix):
		p.add("ref", fmt.Sprintf("%q is not a snapshot ref (want %s<execution>/<sequence>)", r.Ref, SnapshotRefPrefix))
	}
	objectID(p, "commit", r.Commit, true)
	objectID(p, "tree", r.Tree, true)
	objectID(p, "parent", r.Parent, false)
	if r.AtSequence == 0 {
		p.add("atSequence", "required: the journal sequence the snapshot was taken after (1 or more)")
	}
	for _, c := range []struct {
		field string
		n     int
	}{{"files", r.Files}, {"added", r.Added}, {"modified", r.Modified}, {"deleted", r.Deleted}} {
		if c.n < 0 {
			p.add(c.field, fmt.Sprintf("%d is negative (want 0 or more)", c.n))
		}
	}
}

func (r *RestoreAttempted) validate(p *problems) {
	p.required("resource", r.Resource != "")
	enum(p, "mode", r.Mode, RestoreModes)
	enum(p, "outcome", r.Outcome, RestoreOutcomes)
	if r.SnapshotRef != "" && !strings.HasPrefix(r.SnapshotRef, SnapshotRefPrefix) {
		p.add("snapshotRef", fmt.Sprintf("%q is not a snapshot ref (want %s<execution>/<sequence>)", r.SnapshotRef, SnapshotRefPrefix))
	}
	objectID(p, "snapshotCommit", r.SnapshotCommit, false)
	if r.Mode != RestoreSnapshot && (r.SnapshotRef != "" || r.SnapshotCommit != "") {
		p.add("snapshotRef", fmt.Sprintf("only mode snapshot names a snapshot (mode is %s)", r.Mode))
	}
	switch {
	case r.Outcome == RestoreRestored && r.RestoredTo == "":
		p.add("restoredTo", "required when the outcome is restored (the fork's directory)")
	case r.Outcome == RestoreRestored && r.Mode == RestoreSnapshot && r.SnapshotRef == "" && r.SnapshotCommit == "":
		p.add("snapshotRef", "a restored snapshot names its snapshotRef or snapshotCommit")
	case r.Outcome != "" && r.Outcome != RestoreRestored && r.Detail == "":
		p.add("detail", fmt.Sprintf("required when the outcome is %s (say why)", r.Outcome))
	}
}

// objectID checks a git object id: 40 (SHA-1) or 64 (SHA-256) lowercase
// hex digits.
func objectID(p *problems, field, v string, required bool) {
	if v == "" {
		if required {
			p.required(field, false)
		}
		return
	}
	if len(v) != 40 && len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
		p.add(field, fmt.Sprintf("%q is not a git object id (want 40 or 64 lowercase hex digits)", v))
	}
}
