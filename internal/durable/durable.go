package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir syncs a directory, which makes the creation, removal or renaming
// of a file in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		return errors.Join(fmt.Errorf("sync directory %s: %w", dir, err), d.Close())
	}
	return d.Close()
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
