package benchkit

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testHost = Host{GoVersion: "go1.99", OS: "linux", Arch: "amd64", CPUs: 2, GOMAXPROCS: 2, NATSServer: "2.0.0"}

// sample is a report with a throughput result against a figure measured
// beside it, a latency result with an upper bound and a result without
// targets.
func sample() Report {
	return Report{
		Suite:   "demo",
		Title:   "demo store vs raw",
		Setup:   []string{"every figure is the median of 3 rounds"},
		Host:    testHost,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Elapsed: 12340 * time.Millisecond,
		Config:  []Setting{{"records", 5000.0}, {"agent", "sh"}},
		Results: []Result{
			{Name: "append", Count: 5000, Elapsed: 2 * time.Second, Rate: 2500, RateUnit: "records/s",
				Baseline: "raw", Ratio: 0.5,
				Checks:  []Check{{Metric: "ratio to raw", Value: 0.5, Target: 0.7, Unit: "x"}},
				Figures: []Figure{{Name: "raw rec/s", Value: 5000}},
				Method:  "Append, one at a time"},
			{Name: "visible", Count: 200, Elapsed: time.Second, P50: 2 * time.Millisecond, P99: 12345 * time.Microsecond,
				Checks: []Check{{Metric: "p99", Value: 12.345, Target: 25, Unit: "ms", Max: true}},
				Method: "Append to WaitFor"},
			{Name: "scan/log-long-name", Count: 10, Elapsed: 5 * time.Millisecond, Rate: 2000, RateUnit: "records/s",
				Figures: []Figure{Seconds("raw elapsed", 4*time.Millisecond)}},
		},
		Notes: []string{"the raw figures are JetStream with nothing on top"},
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	want := `host: go1.99 linux/amd64, 2 CPUs (GOMAXPROCS 2), nats-server 2.0.0

[demo] demo store vs raw; the run took 12.3s
every figure is the median of 3 rounds
config: records=5000 agent="sh"

NAME                COUNT  ELAPSED  RATE  UNIT       P50      P99  RATIO      RAW REC/S  RAW ELAPSED  RESULT
append               5000       2s  2500  records/s    -        -  0.50x raw       5000            -  BELOW
visible               200       1s     -  -          2ms  12.35ms  -                  -            -  PASS
scan/log-long-name     10      5ms  2000  records/s    -        -  -                  -          4ms  -

targets:
  append   ratio to raw     0.50x  >= 0.70x  BELOW
  visible  p99           12.35 ms  <= 25 ms  PASS

what was timed:
  append   Append, one at a time
  visible  Append to WaitFor

notes:
  the raw figures are JetStream with nothing on top
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("text report (-want +got):\n%s", diff)
	}
}

// A column no result has a value in is left out; so are the targets, the
// methods and the notes when there are none.
func TestWriteTextLeavesOutUnused(t *testing.T) {
	rep := Report{Suite: "s", Title: "t", Host: testHost, Results: []Result{
		{Name: "a", Count: 3, Elapsed: time.Second, Rate: 3, RateUnit: "ops/s"},
		{Name: "b", Count: 30, Elapsed: time.Second, Rate: 30, RateUnit: "ops/s", Figures: []Figure{{Name: "missing", Value: 0}}},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, absent := range []string{"P50", "P99", "RATIO", "RESULT", "targets:", "what was timed:", "notes:", "config:"} {
		if strings.Contains(text, absent) {
			t.Errorf("text report shows %q, which no result has:\n%s", absent, text)
		}
	}
	if !strings.Contains(text, "NAME  COUNT  ELAPSED  RATE  UNIT   MISSING\n") || !strings.Contains(text, "b        30       1s    30  ops/s        0\n") {
		t.Errorf("table not aligned as expected, or a zero figure left out:\n%s", text)
	}
}

// The figure columns keep the order of every result's figures.
func TestWriteTextFigureOrder(t *testing.T) {
	rep := Report{Suite: "s", Title: "t", Host: testHost, Results: []Result{
		{Name: "raw", Figures: []Figure{{Name: "a", Value: 1}, {Name: "d", Value: 4}}},
		{Name: "policy", Figures: []Figure{{Name: "a", Value: 1}, {Name: "b", Value: 2}, {Name: "d", Value: 4}, {Name: "e", Value: 5}}},
		{Name: "other", Figures: []Figure{{Name: "c", Value: 3}, {Name: "d", Value: 4}}},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nNAME    A  B  C  D  E\nraw     1  -  -  4  -\n") {
		t.Errorf("figure columns not in order A B C D E:\n%s", b.String())
	}
}

// Several reports are one report: the host line once, a section each.
func TestWriteTextSeveral(t *testing.T) {
	other := sample()
	other.Suite = "other"
	var b bytes.Buffer
	if err := WriteText(&b, sample(), other); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "host: "); got != 1 {
		t.Errorf("%d host lines, want 1:\n%s", got, b.String())
	}
	for _, section := range []string{"\n\n[demo] ", "\n\n[other] "} {
		if !strings.Contains(b.String(), section) {
			t.Errorf("no section %q:\n%s", section, b.String())
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	other := sample()
	other.Suite, other.Notes, other.Setup = "other", nil, nil
	reps := []Report{sample(), other}
	var b bytes.Buffer
	if err := WriteJSON(&b, reps...); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reps, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// The document's shape, as docs/cli.md describes it.
func TestJSONShape(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Host   map[string]any `json:"host"`
		Suites []struct {
			Suite          string           `json:"suite"`
			ElapsedSeconds float64          `json:"elapsedSeconds"`
			Config         []map[string]any `json:"config"`
			Results        []map[string]any `json:"results"`
		} `json:"suites"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Host["natsServer"] != "2.0.0" || len(doc.Suites) != 1 || doc.Suites[0].Suite != "demo" || doc.Suites[0].ElapsedSeconds != 12.34 {
		t.Fatalf("document %s", b.String())
	}
	if got := doc.Suites[0].Config[0]; got["name"] != "records" || got["value"] != 5000.0 {
		t.Errorf("config[0] = %v, want records 5000", got)
	}
	appended, visible, scan := doc.Suites[0].Results[0], doc.Suites[0].Results[1], doc.Suites[0].Results[2]
	checks := appended["checks"].([]any)
	if c := checks[0].(map[string]any); c["verdict"] != Below || c["target"] != 0.7 {
		t.Errorf("append's check %v, want BELOW against 0.7", c)
	}
	if visible["p99Seconds"] != 0.012345 || visible["rate"] != nil {
		t.Errorf("visible %v, want p99Seconds 0.012345 and no rate", visible)
	}
	if _, ok := scan["checks"]; ok {
		t.Errorf("scan %v has checks, want none", scan)
	}
	if f := scan["figures"].([]any)[0].(map[string]any); f["name"] != "raw elapsed" || f["value"] != 0.004 || f["unit"] != "s" {
		t.Errorf("scan's figure %v, want raw elapsed 0.004 s", f)
	}
}

func TestLookupsAndVerdicts(t *testing.T) {
	rep := sample()
	if res, ok := rep.Result("visible"); !ok || res.Count != 200 {
		t.Errorf("Result(visible) = %v, %t", res, ok)
	}
	if _, ok := rep.Result("nothing"); ok {
		t.Error("Result(nothing) found a result")
	}
	below := rep.Below()
	if len(below) != 1 || below[0].Name != "append" {
		t.Errorf("Below() = %v, want append only", below)
	}
	res := rep.Results[0]
	if v, ok := res.Figure("raw rec/s"); !ok || v != 5000 {
		t.Errorf("Figure(raw rec/s) = %v, %t", v, ok)
	}
	if c, ok := res.Check("ratio to raw"); !ok || c.Verdict() != Below {
		t.Errorf("Check(ratio to raw) = %v, %t", c, ok)
	}
	tests := []struct {
		name  string
		check Check
		want  string
	}{
		{"at a lower bound", Check{Value: 0.7, Target: 0.7}, Pass},
		{"under a lower bound", Check{Value: 0.69, Target: 0.7}, Below},
		{"at an upper bound", Check{Value: 3, Target: 3, Max: true}, Pass},
		{"over an upper bound", Check{Value: 3.1, Target: 3, Max: true}, Below},
	}
	for _, tt := range tests {
		if got := tt.check.Verdict(); got != tt.want {
			t.Errorf("%s: Verdict() = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (Result{}).Verdict(); got != "" {
		t.Errorf("Verdict() without checks = %q, want none", got)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{1234.5, "", "1234"},
		{12.5, "", "12.5"},
		{0.5, "x", "0.50x"},
		{250, "MiB", "250 MiB"},
		{0.0123456, "s", "12.35ms"},
		{2.5e-6, "s", "2.5µs"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
	var b bytes.Buffer
	WriteProgress(&b, sample().Results[0])
	if want := "append: 5000 in 2s, 2500 records/s, 0.50x raw, raw rec/s 5000, ratio to raw 0.50x (target >= 0.70x) BELOW\n"; b.String() != want {
		t.Errorf("progress %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteProgress(&b, Result{Name: "api", Count: 10, Elapsed: time.Second, Rate: 10, RateUnit: "ops/s", Baseline: "raw"})
	if want := "api: 10 in 1s, 10 ops/s\n"; b.String() != want {
		t.Errorf("progress before the baseline is known %q, want %q (no ratio)", b.String(), want)
	}
	WriteProgress(nil, Result{}) // does nothing
}

func TestSettingsOf(t *testing.T) {
	type config struct {
		Dir          string `bench:"-"`
		Records      int
		PayloadBytes int
		Agent        []string
		RoundTimeout time.Duration
		DaemonCPU    float64
		Progress     io.Writer
		hidden       int
	}
	got := SettingsOf(config{Dir: "x", Records: 5, PayloadBytes: 16, Agent: []string{"sh"}, RoundTimeout: time.Minute, DaemonCPU: 0.5, hidden: 1})
	want := []Setting{{"records", 5}, {"payloadBytes", 16}, {"agent", []string{"sh"}}, {"roundTimeoutSeconds", 60.0}, {"daemonCPU", 0.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SettingsOf (-want +got):\n%s", diff)
	}
}

// Versus finds a result's baseline among the report's and gives the
// ratios; a baseline that is not a result, or one with no rate or p99,
// gives no ratio to divide by zero.
func TestVersus(t *testing.T) {
	rep := Report{Results: []Result{
		{Name: "local", Rate: 200, P99: 10 * time.Millisecond},
		{Name: "routed", Rate: 100, P99: 15 * time.Millisecond, Baseline: "local"},
		{Name: "beside", Rate: 100, Baseline: "raw"},
		{Name: "none", Rate: 100},
		{Name: "unmeasured"},
		{Name: "after", Rate: 5, P99: time.Second, Baseline: "unmeasured"},
	}}
	tests := []struct {
		name          string
		wantOK        bool
		rate, p99     float64
		wantBaseNamed string
	}{
		{name: "routed", wantOK: true, rate: 0.5, p99: 1.5, wantBaseNamed: "local"},
		{name: "beside"},
		{name: "none"},
		{name: "after", wantOK: true, wantBaseNamed: "unmeasured"},
	}
	for _, tt := range tests {
		res, _ := rep.Result(tt.name)
		v, ok := rep.Versus(res)
		if ok != tt.wantOK || v.RateRatio != tt.rate || v.P99Ratio != tt.p99 || v.Base.Name != tt.wantBaseNamed {
			t.Errorf("Versus(%s) = %+v, %t; want base %q, ratios %v and %v, %t", tt.name, v, ok, tt.wantBaseNamed, tt.rate, tt.p99, tt.wantOK)
		}
	}
}
