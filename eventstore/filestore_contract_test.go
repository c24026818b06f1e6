//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore_test

import (
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
	})
}
