package projbench

import (
	"context"
	"fmt"
	"io"
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
	Dir string `bench:"-"`
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
	return benchkit.Defaults(c, DefaultConfig())
}

// throughput is the result of a throughput measurement: n records a round,
// the median of the rounds' times.
func throughput(name string, n int, times []time.Duration, method string) benchkit.Result {
	elapsed := benchkit.Median(times)
	return benchkit.Result{Name: name, Count: n, Elapsed: elapsed,
		Rate: benchkit.Rate(n, elapsed), RateUnit: "records/s", Method: method}
}

// Run takes every measurement in turn. A figure that misses its target is
// not an error: it is in the report, and Report.Below lists it. Run fails
// when a server cannot start, an operation fails or a projection comes out
// wrong. When only removing its scratch directory fails, Run returns the
// report of what it measured with that error.
func Run(ctx context.Context, cfg Config) (benchkit.Report, error) {
	if err := cfg.Validate(); err != nil {
		return benchkit.Report{}, err
	}
	cfg = cfg.withDefaults()
	rep := benchkit.Report{
		Suite:   "read",
		Title:   "projections read side",
		Host:    benchkit.Here(),
		Started: time.Now(),
	}
	r, err := newRunner(cfg)
	if err != nil {
		return benchkit.Report{}, err
	}
	defer r.cleanup()
	steps := []func(context.Context) ([]benchkit.Result, error){
		r.project,
		r.replay,
		r.decide,
		r.decideLive,
	}
	for _, step := range steps {
		res, err := step(ctx)
		if err != nil {
			return benchkit.Report{}, err
		}
		for _, x := range res {
			benchkit.WriteProgress(cfg.Progress, x)
		}
		rep.Results = append(rep.Results, res...)
	}
	rep.Setup = []string{fmt.Sprintf("catch-up log: %d records in %d journals, %d MiB encoded; throughputs are the median of %d rounds",
		cfg.Records, cfg.Journals, r.logBytes>>20, rounds)}
	rep.Config = append(benchkit.SettingsOf(cfg),
		benchkit.Setting{Name: "rounds", Value: rounds}, benchkit.Setting{Name: "logBytes", Value: r.logBytes})
	rep.Elapsed = time.Since(rep.Started)
	// The figures stand whether or not the scratch directory goes.
	if err := r.cleanup(); err != nil {
		return rep, fmt.Errorf("projbench: remove the scratch directory: %w", err)
	}
	return rep, nil
}
