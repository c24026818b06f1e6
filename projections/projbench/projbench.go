package projbench

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Defaults for the zero fields of Config.
const (
	DefaultRecords        = 1_000_000
	DefaultJournals       = 1000
	DefaultRate           = 1000
	DefaultLatencyRecords = 5000
)

// Targets.
const (
	// catchUpTarget is the lowest acceptable ratio of catch-up throughput
	// to the slower of its two raw baselines.
	catchUpTarget = 0.5
	// rssTarget is the most resident memory the process may reach while
	// a projection catches up.
	rssTarget = 250 << 20
	// visibleTarget bounds the 99th percentile of append-to-visible.
	visibleTarget = 25 * time.Millisecond
	// foldTarget is the lowest acceptable replay throughput, records/s.
	foldTarget = 300_000
)

// rounds is how many times each throughput measurement runs; the median is
// reported. Three rather than storebench's five: a catch-up round of the
// default million records takes seconds, and with both baselines alternating
// with it five rounds would put the run well past four minutes on a 2-core
// machine.
const rounds = 3

// Config says how much work each measurement does. The zero value of every
// field except Dir means its default, so Config{Dir: dir} is complete.
type Config struct {
	// Dir is a scratch directory. The run keeps its servers and projection
	// files in a fresh subdirectory of it and removes that when done.
	// Required.
	Dir string
	// Records is the length of the log the catch-up projects, headers
	// included. Zero means DefaultRecords.
	Records int
	// Journals is the number of journals the log spreads over; at most
	// activeJournals of them are written at a time, as that many agents
	// running at once would. Zero means DefaultJournals; at most Records.
	Journals int
	// Rate is the pace, in records per second, of the appends whose
	// append-to-visible latency is measured. The end-to-end policy latency
	// is measured at a tenth of it. Zero means DefaultRate.
	Rate int
	// LatencyRecords is the number of records appended for the
	// append-to-visible latency. The end-to-end policy latency uses a tenth
	// as many observations (at least 10). Zero means DefaultLatencyRecords.
	LatencyRecords int
	// Progress, when set, receives one line per measurement as it finishes.
	Progress io.Writer
}

// DefaultConfig returns a Config with every default spelled out; callers set
// Dir.
func DefaultConfig() Config {
	return Config{
		Records:        DefaultRecords,
		Journals:       DefaultJournals,
		Rate:           DefaultRate,
		LatencyRecords: DefaultLatencyRecords,
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	p := benchkit.NewProblems("projbench")
	if c.Dir == "" {
		p.Addf("no Dir (want a scratch directory for the benchmark servers and files)")
	}
	p.NotNegative("Records", c.Records, DefaultRecords)
	p.NotNegative("Journals", c.Journals, DefaultJournals)
	p.NotNegative("Rate", c.Rate, DefaultRate)
	p.NotNegative("LatencyRecords", c.LatencyRecords, DefaultLatencyRecords)
	d := c.withDefaults()
	if d.Records > 0 && d.Journals > d.Records {
		p.Addf("Journals %d is more than Records %d (want each journal to hold at least its header)", d.Journals, d.Records)
	}
	return p.Err()
}

// withDefaults fills the zero fields that have a default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	benchkit.Default(&c.Records, d.Records)
	benchkit.Default(&c.Journals, d.Journals)
	benchkit.Default(&c.Rate, d.Rate)
	benchkit.Default(&c.LatencyRecords, d.LatencyRecords)
	return c
}

// Result is one measurement.
type Result struct {
	// Name says what was measured, e.g. "project/catch-up".
	Name string
	// Records is the number of records (or calls) one round handled.
	Records int
	// Elapsed is the median time of one round.
	Elapsed time.Duration
	// PerSecond is records per second, for a throughput measurement; 0
	// for a latency one.
	PerSecond float64
	// P50 and P99 are the latency percentiles of a latency measurement; 0
	// for a throughput one.
	P50, P99 time.Duration
	// Checks are the result's targets and how it did against them.
	Checks []Check
	// Method says in words what was timed.
	Method string
}

// Check is one target of a result.
type Check struct {
	// Metric names the figure, e.g. "ratio to slower raw" or "p99".
	Metric string
	// Value and Target are in Unit.
	Value, Target float64
	Unit          string
	// Below is true when Target is an upper bound (latency, memory), false
	// when it is a lower bound (throughput).
	Below bool
}

// Pass reports whether the value meets the target.
func (c Check) Pass() bool {
	if c.Below {
		return c.Value < c.Target
	}
	return c.Value >= c.Target
}

// Verdict is "PASS" or "BELOW" (the value misses its target).
func (c Check) Verdict() string {
	if c.Pass() {
		return "PASS"
	}
	return "BELOW"
}

// Report is the outcome of Run and the machine it ran on.
type Report struct {
	Results []Result
	// Config is the configuration run, defaults filled in.
	Config Config
	// Rounds is how many times each throughput measurement ran; its
	// figures are medians.
	Rounds int
	// LogBytes is the size of the catch-up log's records, encoded.
	LogBytes int64
	benchkit.Host
	Started time.Time
	// Elapsed is the whole run, set-up included.
	Elapsed time.Duration
}

// Result returns the result of the given name.
func (r Report) Result(name string) (Result, bool) {
	i := slices.IndexFunc(r.Results, func(res Result) bool { return res.Name == name })
	if i < 0 {
		return Result{}, false
	}
	return r.Results[i], true
}

// Below returns the checks that miss their targets, by result name.
func (r Report) Below() map[string][]Check {
	out := map[string][]Check{}
	for _, res := range r.Results {
		for _, c := range res.Checks {
			if !c.Pass() {
				out[res.Name] = append(out[res.Name], c)
			}
		}
	}
	return out
}

// Run takes every measurement in turn. A figure that misses its target is
// not an error: it is in the report. Run fails when a server cannot start,
// an operation fails or a projection comes out wrong.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	rep := Report{
		Config:  cfg,
		Rounds:  rounds,
		Host:    benchkit.Here(),
		Started: time.Now(),
	}
	r, err := newRunner(cfg)
	if err != nil {
		return Report{}, err
	}
	defer r.cleanup()
	steps := []func(context.Context) ([]Result, error){
		r.project,
		r.replay,
		r.decide,
		r.decideLive,
	}
	for _, step := range steps {
		res, err := step(ctx)
		if err != nil {
			return Report{}, err
		}
		for _, x := range res {
			r.progress(x)
		}
		rep.Results = append(rep.Results, res...)
	}
	rep.LogBytes = r.logBytes
	rep.Elapsed = time.Since(rep.Started)
	if err := r.cleanup(); err != nil {
		return Report{}, err
	}
	return rep, nil
}
