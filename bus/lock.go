package bus

import (
	"errors"
	"fmt"
)

// ErrDataDirLocked means another process, or another Bus in this process,
// already runs an embedded server on the data directory.
var ErrDataDirLocked = errors.New("bus: data directory is locked")

// LockedError says which data directory is in use and by which process.
// It matches ErrDataDirLocked with errors.Is.
type LockedError struct {
	Dir string
	// PID of the holder, or 0 when it could not be read.
	PID int
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("process %d", e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s (another agentjournal is running; stop it or use --data)", e.Dir, holder)
}

// Is makes errors.Is(err, ErrDataDirLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrDataDirLocked }

// lockFileName sits in the data directory, next to the nats store.
const lockFileName = "agentjournal.lock"
