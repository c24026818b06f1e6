package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir syncs a directory, which makes the creation, removal or renaming
// of a file in it durable.
func SyncDir(dir string) error { return syncPath(dir, "directory") }

// SyncFile fsyncs the file at path, through a descriptor of its own: an
// fsync makes every write made to the file before it durable, whoever made
// it.
func SyncFile(path string) error { return syncPath(path, "file") }

func syncPath(path, what string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return errors.Join(fmt.Errorf("sync %s %s: %w", what, path, err), f.Close())
	}
	return f.Close()
}

// WriteFile replaces the file at path with data, atomically and durably:
// data goes to path.tmp, is synced, renamed over path, and the directory
// is synced. A crash leaves either the old file or the new one, never a
// part of either.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return SyncDir(filepath.Dir(path))
}
