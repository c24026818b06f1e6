package apibench

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

	"github.com/agentjournal/agentjournal/fixtures"
)

// fixtureAgent is the fixture agent kept alive reading its stdin.
func fixtureAgent(t *testing.T) []string {
	t.Helper()
	return []string{fixtures.AgentBinary(t), "wait"}
}

func TestRunSmall(t *testing.T) {
	agent := fixtureAgent(t)
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Config{
		Dir:         dir,
		Clients:     8,
		Requests:    100,
		Subscribers: 5,
		Events:      50,
		Agent:       agent,
		Progress:    &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	type shape struct {
		Name        string
		Count       int
		Concurrency int
		Baseline    string
	}
	var got []shape
	for _, res := range rep.Results {
		got = append(got, shape{res.Name, res.Count, res.Concurrency, res.Baseline})
	}
	want := []shape{
		{"raw/append", 100, 8, ""},
		{"api/sendMessage", 100, 8, "raw/append"},
		{"api/recordObservation", 100, 8, "raw/append"},
		{"sse/fan-out", 250, 5, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Elapsed <= 0 || res.PerSecond <= 0 || res.P50 <= 0 || res.P99 < res.P50 {
			t.Errorf("%s: elapsed %s, %v/s, p50 %s, p99 %s; want all positive and p99 >= p50",
				res.Name, res.Elapsed, res.PerSecond, res.P50, res.P99)
		}
		if res.Baseline != "" && (math.IsNaN(res.P99Ratio) || math.IsInf(res.P99Ratio, 0) || res.P99Ratio <= 0) {
			t.Errorf("%s: p99 ratio %v, want a finite positive number", res.Name, res.P99Ratio)
		}
		if res.Method == "" {
			t.Errorf("%s: no description of what was timed", res.Name)
		}
	}
	if fan, ok := rep.Result("sse/fan-out"); !ok || fan.Missing != 0 {
		t.Errorf("sse/fan-out: %d deliveries missing (found %t), want 0", fan.Missing, ok)
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
	for _, res := range decoded.Results {
		if got, want := res.Missing != nil, res.Name == "sse/fan-out"; got != want {
			t.Errorf("JSON result %s: has missing %t, want %t", res.Name, got, want)
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("scratch directory holds %d entries after Run, want 0 (the run's directory removed)", len(entries))
	}
	waitGoroutines(t, before)
}

// TestRunDefaults runs the full benchmark with default sizes when
// APIBENCH_DEFAULTS=1, printing the report; it takes a minute or two.
func TestRunDefaults(t *testing.T) {
	if os.Getenv("APIBENCH_DEFAULTS") != "1" {
		t.Skip("set APIBENCH_DEFAULTS=1 to run the full benchmark")
	}
	rep, err := Run(t.Context(), Config{Dir: t.TempDir(), Agent: fixtureAgent(t), Progress: t.Output()})
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
			cfg:  Config{Clients: -1, Requests: -2, Subscribers: -3, Events: -4, Agents: -5, Agent: []string{""}},
			want: []string{"no Dir", "Clients -1", "Requests -2", "Subscribers -3", "Events -4", "Agents -5", "Agent[0] is empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var hundred []time.Duration
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, ms(i))
	}
	tests := []struct {
		name     string
		in       []time.Duration
		p50, p99 time.Duration
	}{
		{"none", nil, 0, 0},
		{"one", []time.Duration{ms(3)}, ms(3), ms(3)},
		{"two", []time.Duration{ms(2), ms(1)}, ms(1), ms(2)},
		{"hundred, unsorted", hundred, ms(50), ms(99)},
	}
	for _, tt := range tests {
		p50, p99 := latencies(tt.in)
		if p50 != tt.p50 || p99 != tt.p99 {
			t.Errorf("%s: got p50 %s, p99 %s, want %s, %s", tt.name, p50, p99, tt.p50, tt.p99)
		}
	}
}

func TestReadEvents(t *testing.T) {
	body := ": agentjournal events\n\n" +
		"id: 7\nevent: execution.updated\ndata: {\"offset\":7}\n\n" +
		"id: 7\nevent: data.changed\ndata: {\"offset\":7}\n\n" +
		": heartbeat\n\n" +
		"id: 9\nevent: data.changed\n\n" + // no data: not dispatched
		"id: 12\nevent: data.changed\ndata: {\"offset\":12}\n\n" +
		"event: overflow\ndata: {\"lastEventId\":12}\n\n" +
		"id: 13\nevent: data.changed\ndata: {\"offset\":13}\n\n"
	st := &stream{arrivals: map[uint64]time.Time{}, done: make(chan struct{})}
	st.read(strings.NewReader(body))
	var ids []uint64
	for id := range st.arrivals {
		ids = append(ids, id)
	}
	if len(ids) != 2 || st.arrivals[7].IsZero() || st.arrivals[12].IsZero() {
		t.Errorf("got arrivals for %v, want 7 and 12 (9 has no data, 13 follows the overflow)", ids)
	}
	if got := st.seen.Load(); got != 12 {
		t.Errorf("seen = %d, want 12", got)
	}
}

// waitGoroutines waits for the goroutines started since before to end: the
// stack Run started must be gone.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Errorf("%d goroutines left running after Run, want at most %d:\n%s",
		runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
}
