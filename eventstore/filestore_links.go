//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// A file store's directory may be one others can write to (journal export
// --out names any directory): a link planted there in the place of the
// journal directory, the index, the lock or a journal file would have the
// store write wherever the link points. So the store opens its files with
// O_NOFOLLOW, creates a journal file with O_EXCL, and refuses a journal
// directory that is a link.

// openOwn opens a file of the store, refusing a link in its place.
func openOwn(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK):
		return nil, linkError(path)
	case errors.Is(err, os.ErrExist):
		// O_EXCL found something there: say so when it is a link.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, linkError(path)
		}
	}
	return f, err
}

// checkOwnDir refuses a journal directory that is a link.
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return linkError(dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%s)", dir, fi.Mode().Type())
	}
	return nil
}

func linkError(path string) error {
	return fmt.Errorf("%s is a symbolic link: the journal store reads and writes only its own files and directory, never through a link (remove the link, or choose another directory)", path)
}
