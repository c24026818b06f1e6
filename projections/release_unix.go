//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package projections

import (
	"os"
	"syscall"
)

// release drops bbolt's flock on f and closes it, for a bbolt handle that
// failed half way through opening or closing. Closing alone is not enough:
// a memory mapping bbolt made of the file keeps the open file description,
// and with it the lock, alive.
func release(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
