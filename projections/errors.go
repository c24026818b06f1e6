package projections

import (
	"errors"
	"fmt"

	"github.com/agentjournal/agentjournal/follower"
)

var (
	// ErrCorrupt reports a projection file that cannot be trusted: not a
	// bbolt file, damaged pages, or a bbolt file of another shape or format
	// version. The file can be rebuilt from the log (OpenOrRebuild).
	ErrCorrupt = errors.New("projections: projection file is corrupt")
	// ErrLocked reports a projection file held by another process or DB.
	ErrLocked = errors.New("projections: projection file is locked")
	// ErrClosed reports use of a closed DB.
	ErrClosed = errors.New("projections: db closed")
	// ErrNotFound reports an execution the projection does not hold.
	ErrNotFound = errors.New("projections: execution not found")
	// ErrGap reports a batch whose first new entry does not follow the
	// checkpoint: applying it would skip records.
	ErrGap = errors.New("projections: gap in the log")
	// ErrInvalidFilter reports a List or JournalsByOwner filter with a value
	// outside its accepted set.
	ErrInvalidFilter = errors.New("projections: invalid filter")
	// ErrRebuilding reports a Rebuild started while another one runs on the
	// same DB. It is the follower's, which runs rebuilds.
	ErrRebuilding = follower.ErrRebuilding
)

// CorruptError names the projection file and what is wrong with it. It
// matches ErrCorrupt with errors.Is.
type CorruptError struct {
	Path    string
	Problem string
	Err     error // the underlying error, if any
}

func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("projection file %s is corrupt: %s: %v", e.Path, e.Problem, e.Err)
	}
	return fmt.Sprintf("projection file %s is corrupt: %s", e.Path, e.Problem)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }

func corrupt(path, problem string, err error) error {
	return &CorruptError{Path: path, Problem: problem, Err: err}
}
