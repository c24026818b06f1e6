//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package bus

import (
	"fmt"
	"runtime"
)

type dirLock struct{}

// lockDir refuses to run an embedded server where flock is unavailable: an
// unlocked store can be corrupted by a second server. URL mode still works.
func lockDir(dir string) (*dirLock, error) {
	return nil, fmt.Errorf("lock data directory %s: not supported on %s (connect to an external NATS with URL instead)", dir, runtime.GOOS)
}

func (l *dirLock) unlock() error { return nil }
