package workspace

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RefPrefix is the namespace of snapshot refs. Nothing outside it is ever
// written or deleted by this package. Persisted in users' repositories:
// never rename.
const RefPrefix = "refs/agentjournal/"

// maxIDLen keeps a ref's file name (with git's ".lock") under the 255 bytes
// file systems allow for one component.
const maxIDLen = 200

const idRules = `want 1 to 200 bytes of UTF-8 without control characters, space, ~ ^ : ? * [ \ /, "..", "@{", a leading or trailing "." or a trailing ".lock"`

// CheckExecutionID reports whether id can be one component of a ref name,
// by git check-ref-format's rules, with '/' refused too so that every
// execution is exactly one component.
func CheckExecutionID(id string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: execution id %q %s (%s)", ErrInvalidID, id, why, idRules)
	}
	switch {
	case id == "":
		return bad("is empty")
	case len(id) > maxIDLen:
		return bad(fmt.Sprintf("is %d bytes long", len(id)))
	case !utf8.ValidString(id):
		return bad("is not UTF-8")
	case id == "@":
		return bad(`is "@"`)
	case strings.HasPrefix(id, "."), strings.HasSuffix(id, "."):
		return bad(`starts or ends with "."`)
	case strings.HasSuffix(id, ".lock"):
		return bad(`ends with ".lock"`)
	case strings.Contains(id, ".."):
		return bad(`contains ".."`)
	case strings.Contains(id, "@{"):
		return bad(`contains "@{"`)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\/", c) >= 0 {
			return bad(fmt.Sprintf("contains %q", c))
		}
	}
	return nil
}

// RefName is the ref of an execution's snapshot at a journal sequence.
func RefName(executionID string, seq uint64) (string, error) {
	if err := CheckExecutionID(executionID); err != nil {
		return "", err
	}
	if seq == 0 {
		return "", fmt.Errorf("%w: sequence 0 (want a journal sequence, 1 or more)", ErrInvalidID)
	}
	return RefPrefix + executionID + "/" + strconv.FormatUint(seq, 10), nil
}

// parseRef splits a snapshot ref into its execution and sequence; ok is
// false for anything RefName could not have made.
func parseRef(name string) (executionID string, seq uint64, ok bool) {
	rest, found := strings.CutPrefix(name, RefPrefix)
	if !found {
		return "", 0, false
	}
	executionID, num, found := strings.Cut(rest, "/")
	if !found || CheckExecutionID(executionID) != nil || num == "" || num[0] == '0' {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return executionID, seq, true
}

// Ref is one snapshot ref as List finds it.
type Ref struct {
	Name        string
	ExecutionID string
	Sequence    uint64
	Commit      string
	// Created is the snapshot commit's committer time.
	Created time.Time
}

// List returns the snapshots of the repository dir is in, of one execution
// when executionID is given, ordered by execution and sequence. Refs under
// RefPrefix that RefName could not have made are left out.
func List(ctx context.Context, dir string, executionID ...string) ([]Ref, error) {
	if len(executionID) > 1 {
		return nil, fmt.Errorf("workspace: list takes at most one execution id, got %d", len(executionID))
	}
	pattern := RefPrefix
	if len(executionID) == 1 {
		if err := CheckExecutionID(executionID[0]); err != nil {
			return nil, err
		}
		pattern += executionID[0] + "/"
	}
	r, err := openRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	return r.list(ctx, pattern)
}

func (r *repo) list(ctx context.Context, pattern string) ([]Ref, error) {
	out, err := git(ctx, r.top, nil, nil, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(committerdate:unix)", pattern)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var refs []Ref
	for line := range bytes.Lines(out) {
		f := strings.Split(strings.TrimSuffix(string(line), "\n"), "\x00")
		if len(f) != 3 {
			continue
		}
		exec, seq, ok := parseRef(f[0])
		if !ok {
			continue
		}
		unix, _ := strconv.ParseInt(f[2], 10, 64)
		refs = append(refs, Ref{Name: f[0], ExecutionID: exec, Sequence: seq, Commit: f[1], Created: time.Unix(unix, 0)})
	}
	slices.SortFunc(refs, func(a, b Ref) int {
		if c := strings.Compare(a.ExecutionID, b.ExecutionID); c != 0 {
			return c
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	return refs, nil
}

// Filter chooses the snapshots Prune deletes. At least one field must be
// set; a snapshot is deleted when it matches every field that is set.
type Filter struct {
	// ExecutionID keeps the filter to one execution's snapshots.
	ExecutionID string
	// Before keeps it to snapshots created before this time.
	Before time.Time
	// All, alone, deletes every snapshot.
	All bool
}

func (f Filter) validate() error {
	if f.ExecutionID == "" && f.Before.IsZero() && !f.All {
		return errors.New("workspace: prune needs a filter (want an execution id, a time snapshots were created before, or All)")
	}
	if f.All && (f.ExecutionID != "" || !f.Before.IsZero()) {
		return errors.New("workspace: prune filter All goes alone (it deletes every snapshot)")
	}
	if f.ExecutionID != "" {
		return CheckExecutionID(f.ExecutionID)
	}
	return nil
}

// Prune deletes the snapshot refs of the repository dir is in that filter
// matches, and returns them. It deletes nothing but refs under RefPrefix
// that RefName could have made, each only if it still names the commit
// List saw, all in one transaction. The commits stay in the object store
// until git gc collects them.
func Prune(ctx context.Context, dir string, filter Filter) ([]Ref, error) {
	if err := filter.validate(); err != nil {
		return nil, err
	}
	r, err := openRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	pattern := RefPrefix
	if filter.ExecutionID != "" {
		pattern += filter.ExecutionID + "/"
	}
	refs, err := r.list(ctx, pattern)
	if err != nil {
		return nil, err
	}
	var gone []Ref
	var tx strings.Builder
	for _, ref := range refs {
		if !filter.Before.IsZero() && !ref.Created.Before(filter.Before) {
			continue
		}
		if !strings.HasPrefix(ref.Name, RefPrefix) {
			continue // parseRef already refused it; never delete outside the namespace
		}
		fmt.Fprintf(&tx, "delete %s %s\n", ref.Name, ref.Commit)
		gone = append(gone, ref)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	if _, err := git(ctx, r.top, nil, strings.NewReader(tx.String()), "update-ref", "--stdin"); err != nil {
		return nil, fmt.Errorf("prune snapshots: %w", err)
	}
	return gone, nil
}
