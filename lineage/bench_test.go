package lineage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/lineage"
)

// BenchmarkForkReplay measures ReplayLineage of a fork 10 levels deep
// against ReplayLineage of one journal holding the same records, read from
// the same store in the same run, and reports ratio = copy time / lineage
// time (1 means following the links costs nothing; the target is ≥ 0.9).
func BenchmarkForkReplay(b *testing.B) {
	const depth, perLevel = 10, 200
	ctx := context.Background()
	s := openStore(b)
	prompts := func(prefix string) []eventstore.Record {
		rs := make([]eventstore.Record, perLevel)
		for i := range rs {
			rs[i] = msg(fmt.Sprintf("%s-%d", prefix, i))
		}
		return rs
	}
	ref := journal(b, s, "level-0", header("claude"), prompts("l0")...)
	var copied []eventstore.Record
	copied = append(copied, prompts("l0")...)
	for level := 1; level <= depth; level++ {
		head, err := s.Head(ctx, ref)
		if err != nil {
			b.Fatal(err)
		}
		ref = journal(b, s, fmt.Sprintf("level-%d", level), forkOf(b, s, ref, head.LastSequence), prompts(fmt.Sprintf("l%d", level))...)
		copied = append(copied, prompts(fmt.Sprintf("l%d", level))...)
	}
	flat := journal(b, s, "copy", header("claude"), copied...)
	// The copy is replayed the way any journal is, through the same call.
	replayCopy := func() {
		st, err := execution.ReplayLineage(ctx, s, flat)
		if err != nil {
			b.Fatal(err)
		}
		if len(st.Lineage) != 0 || st.Journal.LastSequence != uint64(len(copied))+1 {
			b.Fatalf("copy replayed to %d records with lineage %v", st.Journal.LastSequence, st.Lineage)
		}
	}
	replayFork := func() {
		st, err := execution.ReplayLineage(ctx, s, ref)
		if err != nil {
			b.Fatal(err)
		}
		if len(st.Lineage) != depth {
			b.Fatalf("lineage of %d, want %d", len(st.Lineage), depth)
		}
	}
	replayCopy()
	replayFork()
	var fork, cp time.Duration
	b.ResetTimer()
	for range b.N {
		// Interleaved, so both see the same machine.
		t0 := time.Now()
		replayFork()
		t1 := time.Now()
		replayCopy()
		fork, cp = fork+t1.Sub(t0), cp+time.Since(t1)
	}
	b.ReportMetric(float64(fork.Nanoseconds())/float64(b.N), "fork-ns/op")
	b.ReportMetric(float64(cp.Nanoseconds())/float64(b.N), "copy-ns/op")
	b.ReportMetric(float64(cp)/float64(fork), "ratio")
}

// BenchmarkScanIndex measures the descendants index of 1,000 journals:
// one header read per journal.
func BenchmarkScanIndex(b *testing.B) {
	const journals = 1000
	ctx := context.Background()
	s := openStore(b)
	root := journal(b, s, "root", header("claude"), msg("m"))
	for i := range journals - 1 {
		if i%10 == 0 {
			journal(b, s, fmt.Sprintf("fork-%d", i), forkOf(b, s, root, 2))
			continue
		}
		journal(b, s, fmt.Sprintf("other-%d", i), header("claude"))
	}
	b.ResetTimer()
	for range b.N {
		idx, err := lineage.ScanIndex(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(idx.Children("root")); n != 100 {
			b.Fatalf("%d forks of root, want 100", n)
		}
	}
}
