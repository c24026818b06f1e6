package storebench

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

func TestRunSmall(t *testing.T) {
	rep, progress := benchtest.RunSmall(t, 5*time.Second, Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Records: 200, ReadRecords: 500, Journals: 10, Writers: 4, Progress: progress}
	})

	type shape struct {
		Name    string
		Records int
		Target  float64
	}
	var got []shape
	for _, res := range rep.Results {
		c, _ := res.Check(checkRatioToRaw)
		got = append(got, shape{res.Name, res.Count, c.Target})
	}
	want := []shape{
		{"append/single-writer/sync-always", 200, 0.7},
		{nameDiskSync, 200, 0},
		{"append/single-writer/sync-interval", 200, 0.7},
		{"append/10-journals/4-writers", 200, 0},
		{"read/journal-500", 500, 0.5},
		{"scan/log", 1000, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Name == nameDiskSync {
			// The file system's own floor: appended against overwritten.
			over, _ := res.Figure(figureOverwriteRate)
			if res.Rate <= 0 || over <= 0 || math.Abs(res.Ratio-res.Rate/over) > 1e-9 || res.Baseline != baselineOverwrite || res.Method == "" {
				t.Errorf("%s: %v rec/s against %v overwritten, ratio %v, baseline %q; want both measured, their ratio and the method",
					res.Name, res.Rate, over, res.Ratio, res.Baseline)
			}
			continue
		}
		rawRate, _ := res.Figure(figureRawRate)
		rawElapsed, _ := res.Figure(figureRawElapsed)
		if res.Count <= 0 || res.Rate <= 0 || rawRate <= 0 || res.Elapsed <= 0 || rawElapsed <= 0 {
			t.Errorf("%s: records %d, store %v rec/s in %s, raw %v rec/s in %vs; want all positive",
				res.Name, res.Count, res.Rate, res.Elapsed, rawRate, rawElapsed)
		}
		if math.IsNaN(res.Ratio) || math.IsInf(res.Ratio, 0) || res.Ratio <= 0 {
			t.Errorf("%s: ratio %v, want a finite positive number", res.Name, res.Ratio)
		}
		if res.Baseline != baselineRaw || !strings.HasPrefix(res.Method, "raw baseline: ") || len(res.Method) <= len("raw baseline: ") {
			t.Errorf("%s: baseline %q, method %q; want the raw baseline described", res.Name, res.Baseline, res.Method)
		}
	}
	for _, name := range []string{"append/single-writer/sync-always", "append/10-journals/4-writers"} {
		res, _ := rep.Result(name)
		peer, _ := res.Figure(figurePeerRate)
		c, ok := res.Check(checkRatioToPeer)
		if peer <= 0 || !ok || c.Value <= 0 || c.Target <= 0 {
			t.Errorf("%s: sqlite peer %v rec/s, check %+v; want the peer measured and judged", name, peer, c)
		}
		rawRate, _ := res.Figure(figureRawRate)
		if floor, ok := res.Figure(figureRawToPeer); !ok || peer <= 0 || math.Abs(floor-rawRate/peer) > 1e-9 {
			t.Errorf("%s: raw/peer %v (present %t), want raw %v / peer %v", name, floor, ok, rawRate, peer)
		}
	}
	if got := setting(rep, "recordBytes"); got < DefaultPayloadBytes {
		t.Errorf("recordBytes = %d, want at least the payload's %d", got, DefaultPayloadBytes)
	}
	benchtest.ProgressLines(t, progress, len(want))

	text, _ := benchtest.Reports(t, rep)
	for _, word := range []string{checkRatioToRaw, checkRatioToPeer, "PEER REC/S", "RAW/PEER", "sqlite peer: SQLite", "OVERWRITE REC/S", nameDiskSync + ": the floor"} {
		if !strings.Contains(text, word) {
			t.Errorf("text report does not say %q:\n%s", word, text)
		}
	}
}

// TestRunDefaults runs the full benchmark with default sizes when
// STOREBENCH_DEFAULTS=1, printing the report; it is the same run as
// `agentjournal-bench` and takes a minute or two.
func TestRunDefaults(t *testing.T) {
	benchtest.RunDefaults(t, "STOREBENCH_DEFAULTS", Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Progress: progress}
	})
}

func TestConfigValidate(t *testing.T) {
	benchtest.Validates(t, Run, []benchtest.ConfigCase[Config]{
		{Name: "dir only", Config: Config{Dir: "x"}},
		{Name: "defaults", Config: func() Config { c := DefaultConfig(); c.Dir = "x"; return c }()},
		{Name: "no dir", Config: Config{}, Want: []string{"no Dir"}},
		{
			Name:   "every problem at once",
			Config: Config{Records: -1, ReadRecords: 1, Journals: -2, Writers: -3, PayloadBytes: -4},
			Want:   []string{"no Dir", "Records -1", "ReadRecords 1", "Journals -2", "Writers -3", "PayloadBytes -4"},
		},
	})
}

// setting is the report's integer setting of the given name, 0 when there
// is none.
func setting(rep benchkit.Report, name string) int {
	for _, s := range rep.Config {
		if s.Name == name {
			v, _ := s.Value.(int)
			return v
		}
	}
	return 0
}

// TestResultVerdict: a result with a target is judged on its ratio to the
// raw baseline, one without is not judged.
func TestResultVerdict(t *testing.T) {
	sec := func(n float64) []time.Duration { return []time.Duration{time.Duration(n * float64(time.Second))} }
	tests := []struct {
		name       string
		store, raw float64 // seconds
		tgt        float64
		want       string
	}{
		{"no target", 10, 1, 0, ""},
		{"at target", 2, 1, 0.5, "PASS"},
		{"above", 2, 1.5, 0.5, "PASS"},
		{"below", 4, 1, 0.5, "BELOW"},
	}
	for _, tt := range tests {
		res := result("x", 10, tt.tgt, "raw side", sec(tt.store), sec(tt.raw))
		if got := res.Verdict(); got != tt.want {
			t.Errorf("%s: ratio %v against %v: Verdict() = %q, want %q", tt.name, res.Ratio, tt.tgt, got, tt.want)
		}
	}
	peered := withPeer(result("x", 10, 0, "raw side", sec(1), sec(1)), 2, sec(1))
	if c, ok := peered.Check(checkRatioToPeer); !ok || c.Value != 1 || c.Verdict() != "BELOW" {
		t.Errorf("peer check %+v (found %t), want ratio 1 BELOW its target 2", c, ok)
	}
}

// benchServer starts a server for a benchmark and closes it afterwards.
func benchServer(b *testing.B, sync bus.SyncMode) *server {
	b.Helper()
	srv, err := startServer(b.Context(), b.TempDir(), "bench", sync)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
	})
	return srv
}

var syncModes = []bus.SyncMode{bus.SyncAlways, bus.SyncInterval}

func reportRate(b *testing.B, records int) {
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAppend appends b.N records to one journal from one writer.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range syncModes {
		b.Run("sync="+string(sync), func(b *testing.B) {
			srv := benchServer(b, sync)
			refs, err := ensureJournals(b.Context(), srv.store, "bench")
			if err != nil {
				b.Fatal(err)
			}
			recs := observations(b.N, benchkit.Filler(DefaultPayloadBytes))
			b.ResetTimer()
			if err := appendRecords(b.Context(), srv.store, refs, recs, 1); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkRawPublish publishes b.N copies of an encoded record to one
// subject from one publisher, waiting for each ack: BenchmarkAppend's
// baseline.
func BenchmarkRawPublish(b *testing.B) {
	for _, sync := range syncModes {
		b.Run("sync="+string(sync), func(b *testing.B) {
			srv := benchServer(b, sync)
			r := &runner{summary: benchkit.Filler(DefaultPayloadBytes)}
			data, err := r.sample(b.Context(), srv)
			if err != nil {
				b.Fatal(err)
			}
			refs, err := references("bench")
			if err != nil {
				b.Fatal(err)
			}
			msgs, err := rawMessages(refs, b.N, data)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			if err := publish(b.Context(), srv.bus.JetStream(), msgs, 1); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// benchReadRecords is the length of the journal the read benchmarks read,
// interleaved with a second journal of the same length.
const benchReadRecords = 1000

func readSetup(b *testing.B) (*server, eventstore.Reference) {
	b.Helper()
	srv := benchServer(b, bus.SyncInterval)
	refs, err := writeInterleaved(b.Context(), srv.store, benchReadRecords, benchkit.Filler(DefaultPayloadBytes), "read-a", "read-b")
	if err != nil {
		b.Fatal(err)
	}
	return srv, refs[0]
}

// BenchmarkReadJournal reads a whole journal per iteration.
func BenchmarkReadJournal(b *testing.B) {
	srv, ref := readSetup(b)
	for b.Loop() {
		n, err := readJournal(b.Context(), srv.store, ref)
		if err != nil {
			b.Fatal(err)
		}
		if n != benchReadRecords {
			b.Fatalf("read %d records, want %d", n, benchReadRecords)
		}
	}
	reportRate(b, b.N*benchReadRecords)
}

// BenchmarkRawOrderedRead reads the same journal's subject per iteration
// with an ordered consumer, without decoding: BenchmarkReadJournal's
// baseline.
func BenchmarkRawOrderedRead(b *testing.B) {
	srv, ref := readSetup(b)
	subj, err := ref.Subject(bus.SubjectPrefix)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		n, err := readRaw(b.Context(), srv.bus.Stream(), subj)
		if err != nil {
			b.Fatal(err)
		}
		if n != benchReadRecords {
			b.Fatalf("read %d records, want %d", n, benchReadRecords)
		}
	}
	reportRate(b, b.N*benchReadRecords)
}

// TestSQLitePeer checks that the peer is configured as durably as it claims
// and gives each journal's records consecutive sequences under concurrent
// writers.
func TestSQLitePeer(t *testing.T) {
	ctx := t.Context()
	p, err := openSQLitePeer(ctx, t.TempDir()+"/peer.db")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	journals := []string{"a", "b", "c"}
	const n = 50
	if err := p.append(ctx, journals, n, []byte("record"), 4); err != nil {
		t.Fatal(err)
	}
	for k, j := range journals {
		var count, maxSeq int
		if err := p.db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(sequence) FROM records WHERE journal = ?", j).Scan(&count, &maxSeq); err != nil {
			t.Fatal(err)
		}
		want := n / len(journals)
		if k < n%len(journals) {
			want++
		}
		if count != want || maxSeq != want {
			t.Errorf("journal %s: %d rows, last sequence %d, want %d and %d", j, count, maxSeq, want, want)
		}
	}
}
