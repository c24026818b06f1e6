package storebench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"runtime"
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
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Config{
		Dir:         dir,
		Records:     200,
		ReadRecords: 500,
		Journals:    10,
		Writers:     4,
		Progress:    &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	type shape struct {
		Name    string
		Records int
		Target  float64
	}
	var got []shape
	for _, res := range rep.Results {
		got = append(got, shape{res.Name, res.Records, res.Target})
	}
	want := []shape{
		{"append/single-writer/sync-always", 200, 0.7},
		{"append/single-writer/sync-interval", 200, 0.7},
		{"append/10-journals/4-writers", 200, 0},
		{"read/journal-500", 500, 0.5},
		{"scan/log", 1000, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Records <= 0 || res.PerSecond <= 0 || res.RawPerSecond <= 0 || res.Elapsed <= 0 || res.RawElapsed <= 0 {
			t.Errorf("%s: records %d, store %v rec/s in %s, raw %v rec/s in %s; want all positive",
				res.Name, res.Records, res.PerSecond, res.Elapsed, res.RawPerSecond, res.RawElapsed)
		}
		if math.IsNaN(res.Ratio) || math.IsInf(res.Ratio, 0) || res.Ratio <= 0 {
			t.Errorf("%s: ratio %v, want a finite positive number", res.Name, res.Ratio)
		}
		if res.Baseline == "" {
			t.Errorf("%s: no baseline description", res.Name)
		}
	}
	if rep.RecordBytes < DefaultPayloadBytes {
		t.Errorf("RecordBytes = %d, want at least the payload's %d", rep.RecordBytes, DefaultPayloadBytes)
	}
	if got, want := strings.Count(progress.String(), "\n"), len(want); got != want {
		t.Errorf("progress has %d lines, want %d:\n%s", got, want, progress.String())
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	for _, res := range rep.Results {
		if !strings.Contains(text.String(), res.Name) {
			t.Errorf("text report does not name %s:\n%s", res.Name, text.String())
		}
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var decoded jsonReport
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatalf("JSON report does not decode: %v\n%s", err, js.String())
	}
	if got, want := len(decoded.Results), len(rep.Results); got != want {
		t.Errorf("JSON report has %d results, want %d", got, want)
	}

	benchtest.EmptyDir(t, dir, "after Run")
	benchtest.WaitGoroutines(t, before, 5*time.Second)
}

// TestRunDefaults runs the full benchmark with default sizes when
// STOREBENCH_DEFAULTS=1, printing the report; it is the same run as
// `agentjournal bench` and takes a minute or two.
func TestRunDefaults(t *testing.T) {
	if os.Getenv("STOREBENCH_DEFAULTS") != "1" {
		t.Skip("set STOREBENCH_DEFAULTS=1 to run the full benchmark")
	}
	rep, err := Run(t.Context(), Config{Dir: t.TempDir(), Progress: t.Output()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := rep.WriteText(t.Output()); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error, nil for none
	}{
		{name: "dir only", cfg: Config{Dir: "x"}},
		{name: "defaults", cfg: func() Config { c := DefaultConfig(); c.Dir = "x"; return c }()},
		{name: "no dir", cfg: Config{}, want: []string{"no Dir"}},
		{
			name: "every problem at once",
			cfg:  Config{Records: -1, ReadRecords: 1, Journals: -2, Writers: -3, PayloadBytes: -4},
			want: []string{"no Dir", "Records -1", "ReadRecords 1", "Journals -2", "Writers -3", "PayloadBytes -4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			benchtest.Mentions(t, err, tt.want)
			if tt.want == nil {
				return
			}
		})
	}
}

func TestResultVerdict(t *testing.T) {
	tests := []struct {
		name  string
		ratio float64
		tgt   float64
		want  string
	}{
		{"no target", 0.1, 0, ""},
		{"at target", 0.7, 0.7, "PASS"},
		{"above", 0.9, 0.7, "PASS"},
		{"below", 0.69, 0.7, "BELOW"},
	}
	for _, tt := range tests {
		if got := (Result{Ratio: tt.ratio, Target: tt.tgt}).Verdict(); got != tt.want {
			t.Errorf("%s: Verdict() = %q, want %q", tt.name, got, tt.want)
		}
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
