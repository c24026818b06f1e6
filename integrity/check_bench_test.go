package integrity_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/integrity"
	"github.com/agentjournal/agentjournal/projections"
)

// BenchmarkQuick is the check every start runs, on a log of 10,000
// journals of two records each and the read model that applied them.
func BenchmarkQuick(b *testing.B) {
	const journals = 10_000
	ctx := b.Context()
	bus := fixtures.StartNATSAt(b, b.TempDir())
	s := fixtures.OpenStore(b, bus)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				// Not fixtures.WriteJournal: it fails the benchmark from
				// this goroutine.
				ref, err := s.EnsureJournal(ctx, storetest.Ref(eventstore.OwnerTask, "t-1", fmt.Sprintf("ae-%05d", i)), storetest.Header("generic"))
				if err == nil {
					_, err = s.Append(ctx, ref, storetest.Activity(ref.JournalID, 1))
				}
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range journals {
		next <- i
	}
	close(next)
	wg.Wait()
	views, err := projections.Open(projections.DefaultConfig(filepath.Join(b.TempDir(), "views.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer views.Close()
	if err := views.CatchUp(ctx, s, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := integrity.Quick(ctx, s, views)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Journals != journals || len(rep.Findings) > 0 {
			b.Fatalf("checked %d journals, found %v; want %d, none", rep.Journals, rep.Findings, journals)
		}
	}
}
