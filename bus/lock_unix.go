//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package bus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dirLock is an exclusive flock on DataDir/agentjournal.lock. The kernel
// drops it when the holder exits however it exits, so a crash never leaves a
// stale lock behind; the PID written into the file only names the holder.
type dirLock struct {
	f *os.File
}

// lockDir takes the lock without waiting: a second server on the same store
// must fail at once, not queue behind the first.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	// os.OpenFile sets O_CLOEXEC, so agent processes started by this one do
	// not inherit the descriptor and keep the lock alive after we exit.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, PID: readHolder(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write pid to %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// readHolder reads the holder's PID. The holder writes it just after taking
// the lock, so an empty file is retried briefly rather than reported as
// unknown.
func readHolder(path string) int {
	for range 20 {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// unlock releases the lock by closing the descriptor. The file stays: removing
// it would let a later opener lock a fresh inode while a racing one still
// holds the old.
func (l *dirLock) unlock() error {
	// Release the lock explicitly before closing: a child forked by another
	// goroutine between fork and exec shares the descriptor, and would hold
	// the lock until it execs if closing were the only release.
	uerr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return errors.Join(uerr, l.f.Close())
}
