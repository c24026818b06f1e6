package apibench

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

// fixtureAgent is the fixture agent kept alive reading its stdin.
func fixtureAgent(t *testing.T) []string {
	t.Helper()
	return []string{fixtures.AgentBinary(t), "wait"}
}

func TestRunSmall(t *testing.T) {
	agent := fixtureAgent(t)
	rep, progress := benchtest.RunSmall(t, 5*time.Second, Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Clients: 8, Requests: 100, Subscribers: 5, Events: 50, Agent: agent, Progress: progress}
	})

	type shape struct {
		Name        string
		Count       int
		Concurrency int
		Baseline    string
	}
	var got []shape
	for _, res := range rep.Results {
		concurrency, _ := res.Figure(figureConcurrency)
		got = append(got, shape{res.Name, res.Count, int(concurrency), res.Baseline})
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
		if res.Elapsed <= 0 || res.Rate <= 0 || res.P50 <= 0 || res.P99 < res.P50 {
			t.Errorf("%s: elapsed %s, %v/s, p50 %s, p99 %s; want all positive and p99 >= p50",
				res.Name, res.Elapsed, res.Rate, res.P50, res.P99)
		}
		if p99Ratio, _ := res.Figure(figureP99Ratio); res.Baseline != "" && (math.IsNaN(p99Ratio) || math.IsInf(p99Ratio, 0) || p99Ratio <= 0) {
			t.Errorf("%s: p99 ratio %v, want a finite positive number", res.Name, p99Ratio)
		}
		if res.Method == "" {
			t.Errorf("%s: no description of what was timed", res.Name)
		}
	}
	obs, _ := rep.Result("api/recordObservation")
	rate, rateOK := obs.Check(checkRateRatio)
	p99, p99OK := obs.Check(checkP99Ratio)
	if !rateOK || !p99OK || rate.Target != 0.5 || p99.Target != 3 || !p99.Max || rate.Value <= 0 || rate.Value != obs.Ratio {
		t.Errorf("api/recordObservation: checks %+v, ratio %.2f; want the rate ratio judged against 0.5 and the p99 ratio against at most 3", obs.Checks, obs.Ratio)
	}
	fan, ok := rep.Result("sse/fan-out")
	if missing, has := fan.Figure(figureMissing); !ok || !has || missing != 0 {
		t.Errorf("sse/fan-out: %v deliveries missing (found %t, figure %t), want 0", missing, ok, has)
	}
	for _, name := range []string{"raw/append", "api/recordObservation"} {
		res, _ := rep.Result(name)
		if n, ok := res.Figure(figureRounds); !ok || n != rounds {
			t.Errorf("%s: rounds figure %v (present %t), want %d", name, n, ok, rounds)
		}
		if !slices.ContainsFunc(rep.Setup, func(line string) bool { return strings.HasPrefix(line, name+" rounds: ") }) {
			t.Errorf("set-up does not give %s's rounds: %q", name, rep.Setup)
		}
	}
	benchtest.ProgressLines(t, progress, 2+2*rounds)

	_, decoded := benchtest.Reports(t, rep)
	for _, res := range decoded.Results {
		if _, got := res.Figure(figureMissing); got != (res.Name == "sse/fan-out") {
			t.Errorf("JSON result %s: has missing %t, want %t", res.Name, got, !got)
		}
	}
}

// TestRunStackThatCannotStop: agents that outlast the stop deadline fail
// the run once, with the report of everything measured before.
func TestRunStackThatCannotStop(t *testing.T) {
	// The agent ignores SIGTERM and stays after its input closes, so only
	// SIGKILL ends it, which comes after the stop's deadline.
	agent := []string{fixtures.AgentBinary(t), "ignore-term", "wait", "sleep:1m"}
	dir := benchtest.Scratch(t, 5*time.Second)
	rep, err := Run(t.Context(), Config{
		Dir:         dir,
		Clients:     2,
		Requests:    10,
		Subscribers: 1,
		Events:      5,
		Agent:       agent,
		stopTimeout: 500 * time.Millisecond,
	})
	if err == nil {
		t.Fatal("Run: no error, want the agents' stop past its deadline")
	}
	msg := err.Error()
	// The runtime, given a deadline of its own for the killed agents'
	// ends, may run out too on a loaded machine: one more line, not one
	// per agent.
	if !strings.Contains(msg, "apibench: stop the stack: stop 2 of 2 agents: context deadline exceeded") ||
		strings.Count(msg, "stop the stack") != 1 || strings.Count(msg, "context deadline exceeded") > 2 {
		t.Errorf("Run: error %q, want the two agents' stop past its deadline said once", msg)
	}
	var names []string
	for _, res := range rep.Results {
		if res.Rate > 0 {
			names = append(names, res.Name)
		}
	}
	if diff := cmp.Diff([]string{"raw/append", "api/sendMessage", "api/recordObservation", "sse/fan-out"}, names); diff != "" {
		t.Errorf("results measured (-want +got):\n%s", diff)
	}
}

func TestDistinct(t *testing.T) {
	late, other := errors.New("context deadline exceeded"), errors.New("stop ae-1: starting")
	tests := []struct {
		name string
		errs []error
		want string
	}{
		{name: "none", errs: []error{nil, nil}, want: ""},
		{name: "all the same", errs: []error{late, late, nil, late}, want: "context deadline exceeded"},
		{name: "two kinds", errs: []error{late, other, late}, want: "context deadline exceeded (2 times)\nstop ae-1: starting"},
	}
	for _, tt := range tests {
		got := distinct(tt.errs)
		if tt.want == "" {
			if got != nil {
				t.Errorf("%s: got %v, want nil", tt.name, got)
			}
			continue
		}
		if got == nil || got.Error() != tt.want || !errors.Is(got, late) {
			t.Errorf("%s: got %v, want %q wrapping the deadline", tt.name, got, tt.want)
		}
	}
}

// TestTargets: recordObservation's rate and p99 are judged against the
// raw appends of the same run, and the text and JSON reports show both.
func TestTargets(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	tests := []struct {
		name           string
		rate           float64
		p99            time.Duration
		rateVerdict    string
		p99Verdict     string
		wantRows       []string // rows of the targets table, spaces collapsed
		wantRateRatio  float64
		wantP99Ratio   float64
		wantBelowCount int
	}{
		{name: "both met", rate: 2500, p99: ms(300), rateVerdict: "PASS", p99Verdict: "PASS", wantRateRatio: 0.5, wantP99Ratio: 3,
			wantRows: []string{"api/recordObservation ops/s ratio 0.50x >= 0.50x PASS", "api/recordObservation p99 ratio 3.00x <= 3.00x PASS"}},
		{name: "both missed", rate: 1000, p99: ms(450), rateVerdict: "BELOW", p99Verdict: "BELOW", wantRateRatio: 0.2, wantP99Ratio: 4.5, wantBelowCount: 1,
			wantRows: []string{"api/recordObservation ops/s ratio 0.20x >= 0.50x BELOW", "api/recordObservation p99 ratio 4.50x <= 3.00x BELOW"}},
		{name: "rate met, p99 missed", rate: 4000, p99: ms(1000), rateVerdict: "PASS", p99Verdict: "BELOW", wantRateRatio: 0.8, wantP99Ratio: 10, wantBelowCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := benchkit.Result{Name: "raw/append", Count: 10, Rate: 5000, RateUnit: "ops/s", P50: ms(50), P99: ms(100), Method: "raw"}
			obs := benchkit.Result{Name: "api/recordObservation", Count: 10, Rate: tt.rate, RateUnit: "ops/s", P50: ms(90), P99: tt.p99,
				Baseline: "raw/append", Method: "obs"}
			rep := benchkit.Report{Suite: "api", Results: []benchkit.Result{raw, obs}}
			compare(rep.Results)
			obs = rep.Results[1]
			rate, _ := obs.Check(checkRateRatio)
			p99, _ := obs.Check(checkP99Ratio)
			p99Ratio, _ := obs.Figure(figureP99Ratio)
			if math.Abs(obs.Ratio-tt.wantRateRatio) > 1e-9 || math.Abs(p99Ratio-tt.wantP99Ratio) > 1e-9 || rate.Value != obs.Ratio || p99.Value != p99Ratio {
				t.Fatalf("ratios %.2f, %.2f, checked %.2f, %.2f; want %.2f, %.2f", obs.Ratio, p99Ratio, rate.Value, p99.Value, tt.wantRateRatio, tt.wantP99Ratio)
			}
			if got := rate.Verdict(); got != tt.rateVerdict {
				t.Errorf("rate verdict %q, want %q", got, tt.rateVerdict)
			}
			if got := p99.Verdict(); got != tt.p99Verdict {
				t.Errorf("p99 verdict %q, want %q", got, tt.p99Verdict)
			}
			if got := rep.Results[0].Verdict(); got != "" || len(rep.Results[0].Checks) != 0 {
				t.Errorf("the baseline is judged (%q), want no targets", got)
			}
			if got := len(rep.Below()); got != tt.wantBelowCount {
				t.Errorf("Below() has %d results, want %d", got, tt.wantBelowCount)
			}
			var text bytes.Buffer
			if err := benchkit.WriteText(&text, rep); err != nil {
				t.Fatal(err)
			}
			var rows []string
			for line := range strings.Lines(text.String()) {
				if strings.HasPrefix(strings.TrimSpace(line), "api/recordObservation ") {
					rows = append(rows, strings.Join(strings.Fields(line), " "))
				}
			}
			for _, w := range tt.wantRows {
				if !slices.Contains(rows, w) {
					t.Errorf("text report lacks the row %q:\n%s", w, text.String())
				}
			}
			var js bytes.Buffer
			if err := benchkit.WriteJSON(&js, rep); err != nil {
				t.Fatal(err)
			}
			var decoded struct {
				Suites []struct {
					Results []struct {
						Checks []struct {
							Metric  string  `json:"metric"`
							Target  float64 `json:"target"`
							Verdict string  `json:"verdict"`
						} `json:"checks"`
					} `json:"results"`
				} `json:"suites"`
			}
			if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
				t.Fatal(err)
			}
			got := decoded.Suites[0].Results[1].Checks
			if len(got) != 2 || got[0].Verdict != tt.rateVerdict || got[1].Verdict != tt.p99Verdict || got[0].Target != 0.5 || got[1].Target != 3 {
				t.Errorf("JSON checks %+v, want verdicts %s and %s against 0.5 and 3", got, tt.rateVerdict, tt.p99Verdict)
			}
			if checks := decoded.Suites[0].Results[0].Checks; len(checks) != 0 {
				t.Errorf("JSON baseline has checks %+v, want none", checks)
			}
		})
	}
}

// TestRunDefaults runs the full benchmark with default sizes when
// APIBENCH_DEFAULTS=1, printing the report; it takes a minute or two.
func TestRunDefaults(t *testing.T) {
	benchtest.RunDefaults(t, "APIBENCH_DEFAULTS", Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Agent: fixtureAgent(t), Progress: progress}
	})
}

// medianRounds keeps a result measured once as it is and, of one measured
// several times, the round of median rate with its own latencies.
func TestMedianRounds(t *testing.T) {
	r := func(name string, rate float64, p99 time.Duration) benchkit.Result {
		return benchkit.Result{Name: name, Rate: rate, RateUnit: "ops/s", P99: p99}
	}
	got, spreads := medianRounds([]benchkit.Result{
		r("once", 5, time.Second),
		r("thrice", 300, 3*time.Millisecond),
		r("thrice", 100, 1*time.Millisecond),
		r("thrice", 200, 2*time.Millisecond),
	})
	want := []benchkit.Result{
		r("once", 5, time.Second),
		{Name: "thrice", Rate: 200, RateUnit: "ops/s", P99: 2 * time.Millisecond, Figures: []benchkit.Figure{{Name: figureRounds, Value: 3}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"thrice rounds: 300, 100, 200 ops/s"}, spreads); diff != "" {
		t.Errorf("spreads (-want +got):\n%s", diff)
	}
}

func TestConfigValidate(t *testing.T) {
	benchtest.Validates(t, Run, []benchtest.ConfigCase[Config]{
		{Name: "dir only", Config: Config{Dir: "x"}},
		{Name: "defaults", Config: func() Config { c := DefaultConfig(); c.Dir = "x"; return c }()},
		{Name: "no dir", Config: Config{}, Want: []string{"no Dir"}},
		{
			Name:   "every problem at once",
			Config: Config{Clients: -1, Requests: -2, Subscribers: -3, Events: -4, Agents: -5, Agent: []string{""}},
			Want:   []string{"no Dir", "Clients -1", "Requests -2", "Subscribers -3", "Events -4", "Agents -5", "Agent[0] is empty"},
		},
	})
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
