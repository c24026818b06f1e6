//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

func TestFileStoreContract(t *testing.T) {
	var mu sync.Mutex
	dirs := map[eventstore.Store]string{}
	open := func(t *testing.T, dir string) eventstore.Store {
		s, err := eventstore.OpenFile(eventstore.DefaultFileConfig(dir))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		dirs[s] = dir
		mu.Unlock()
		return s
	}
	storetest.Run(t, storetest.Factory{
		MaxRecordSize: eventstore.DefaultMaxRecordSize,
		Open:          func(t *testing.T) eventstore.Store { return open(t, t.TempDir()) },
		Reopen: func(t *testing.T, s eventstore.Store) eventstore.Store {
			mu.Lock()
			dir := dirs[s]
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dir)
		},
		Undecodable: func(t *testing.T, s eventstore.Store, ref eventstore.Reference) eventstore.Store {
			const mark = "undecodable-placeholder"
			if _, err := s.Append(context.Background(), ref, storetest.Message(mark, "x")); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			dir := dirs[s]
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The placeholder's line, overwritten at the same length so
			// that the index still holds: only a read meets the damage.
			var files []string
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					files = append(files, path)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, path := range files {
				data, err := os.ReadFile(path)
				if err != nil || !bytes.Contains(data, []byte(mark)) {
					continue
				}
				lines := bytes.SplitAfter(data, []byte("\n"))
				for i, l := range lines {
					if bytes.Contains(l, []byte(mark)) {
						lines[i] = append(bytes.Repeat([]byte("x"), len(l)-1), '\n')
						found = true
					}
				}
				if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if !found {
				t.Fatalf("no journal file holds %s", mark)
			}
			return open(t, dir)
		},
	})
}
