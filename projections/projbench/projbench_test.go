package projbench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
	"github.com/agentjournal/agentjournal/policy"
)

var full = flag.Bool("projbench.full", false, "TestRunDefault runs Run with the default sizes and prints the report")

func TestRunSmall(t *testing.T) {
	// The embedded servers' goroutines may take a moment to go.
	rep, progress := benchtest.RunSmall(t, 10*time.Second, Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Records: 2000, Journals: 20, LatencyRecords: 200, Rate: 2000, Progress: progress}
	})

	type shape struct {
		Name    string
		Records int
		Checks  []string
	}
	var got []shape
	for _, res := range rep.Results {
		s := shape{Name: res.Name, Records: res.Count}
		for _, c := range res.Checks {
			s.Checks = append(s.Checks, c.Metric)
		}
		got = append(got, s)
	}
	rss := []string{"ratio to slower raw", "peak RSS"}
	if residentNow().Total == 0 {
		rss = rss[:1]
	}
	want := []shape{
		{"project/catch-up", 2000, rss},
		{"raw/read-log", 2000, nil},
		{"raw/bbolt-put", 2000, nil},
		{"project/append-to-visible", 200, []string{"p99"}},
		{"replay/fold", foldRecords, []string{"records/s"}},
		{"policy/decide", decideCalls, nil},
		{"policy/append-to-decision", 20, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Count <= 0 || res.Elapsed <= 0 {
			t.Errorf("%s: records %d in %s, want both positive", res.Name, res.Count, res.Elapsed)
		}
		latency := strings.HasPrefix(res.Name, "policy/") || res.Name == "project/append-to-visible"
		if latency && (res.P50 <= 0 || res.P99 < res.P50) {
			t.Errorf("%s: p50 %s, p99 %s; want 0 < p50 <= p99", res.Name, res.P50, res.P99)
		}
		if !latency && res.Rate <= 0 {
			t.Errorf("%s: %v records/s, want a positive rate", res.Name, res.Rate)
		}
		for _, c := range res.Checks {
			if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value <= 0 || c.Target <= 0 {
				t.Errorf("%s %s: value %v, target %v; want finite positive numbers", res.Name, c.Metric, c.Value, c.Target)
			}
		}
		if res.Method == "" {
			t.Errorf("%s: no method", res.Name)
		}
	}
	if i := slices.IndexFunc(rep.Config, func(s benchkit.Setting) bool { return s.Name == "logBytes" }); i < 0 || rep.Config[i].Value.(int64) <= 0 {
		t.Errorf("config %v, want logBytes, the log's size", rep.Config)
	}
	benchtest.ProgressLines(t, progress, len(want))

	text, _ := benchtest.Reports(t, rep)
	for _, word := range []string{"ratio to slower raw", "p99", "targets:"} {
		if !strings.Contains(text, word) {
			t.Errorf("text report does not say %q:\n%s", word, text)
		}
	}
	t.Logf("\n%s", text)
}

// TestRunDefault runs the full benchmark with -projbench.full; it takes a
// few minutes.
func TestRunDefault(t *testing.T) {
	if !*full {
		t.Skip("run with -projbench.full")
	}
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Progress = os.Stderr
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var text bytes.Buffer
	if err := benchkit.WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
}

func TestValidate(t *testing.T) {
	benchtest.Validates(t, Run, []benchtest.ConfigCase[Config]{
		{Name: "every problem at once", Config: Config{Records: -1, Journals: 5000, Rate: -2, LatencyRecords: -3},
			Want: []string{"Dir", "Records -1", "Rate -2", "LatencyRecords -3"}},
		{Name: "more journals than records", Config: Config{Dir: "x", Records: 10, Journals: 11}, Want: []string{"Journals 11"}},
		{Name: "dir only", Config: Config{Dir: "x"}},
	})
}

// TestGeneratedJournalReplays checks the workload: every generated journal
// has the length asked for, replays without error, ends completed and
// holds every kind of record but the reserved projection one.
func TestGeneratedJournalReplays(t *testing.T) {
	for _, n := range []int{1, 2, 3, 17, 1000} {
		ref, err := reference("gen", n)
		if err != nil {
			t.Fatal(err)
		}
		recs := journal(ref, n)
		if len(recs) != n {
			t.Fatalf("journal(%d) has %d records", n, len(recs))
		}
		for i, r := range recs {
			if err := eventstore.Validate(r); err != nil {
				t.Fatalf("journal(%d) record %d (%s): %v", n, i, r.Kind(), err)
			}
		}
		st, err := execution.Replay(recs)
		if err != nil {
			t.Fatalf("replay journal(%d): %v", n, err)
		}
		if n > 1 && st.Lifecycle != eventstore.LifecycleCompleted {
			t.Errorf("journal(%d) ends %s, want completed", n, st.Lifecycle)
		}
		if n < 1000 {
			continue
		}
		kinds := map[eventstore.Kind]int{}
		for _, r := range recs {
			kinds[r.Kind()]++
		}
		for _, k := range eventstore.Kinds() {
			if k != eventstore.KindProjection && k != eventstore.KindInterruption && k != eventstore.KindSnapshot && k != eventstore.KindRestore && kinds[k] == 0 {
				t.Errorf("journal(%d) has no %s record", n, k)
			}
		}
		t.Logf("record mix of a journal of %d: %v", n, kinds)
	}
}

func BenchmarkReplayFold(b *testing.B) {
	ref, err := reference("fold", 0)
	if err != nil {
		b.Fatal(err)
	}
	recs := journal(ref, 10_000)
	for b.Loop() {
		if _, err := execution.Replay(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDecide(b *testing.B) {
	ref, err := reference("decide", 0)
	if err != nil {
		b.Fatal(err)
	}
	g := newGenerator(ref, 1<<30)
	g.header()
	for range decideStateRecords - 1 {
		g.next()
	}
	obs := make([]*eventstore.Observation, 1000)
	for i := range obs {
		obs[i] = mixedObservation(i)
	}
	i := 0
	for b.Loop() {
		policy.Decide(g.state, obs[i%len(obs)])
		i++
	}
}

// BenchmarkCatchUp projects a generated log of 100,000 records in 100
// journals into a new file per iteration; run it with -cpuprofile to see
// where a catch-up spends its time.
func BenchmarkCatchUp(b *testing.B) {
	const records, journals = 100_000, 100
	ctx := context.Background()
	srv, err := startServer(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
	})
	if _, err := writeLog(ctx, srv.store, "bench", records, journals); err != nil {
		b.Fatal(err)
	}
	if err := srv.restart(ctx); err != nil {
		b.Fatal(err)
	}
	if err := forgetDuplicates(ctx, srv.bus); err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		round++
		path := filepath.Join(b.TempDir(), fmt.Sprintf("p-%d.db", round))
		if _, _, err := catchUpOnce(ctx, srv.store, path, records); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
