package storebench

import (
	"context"
	"io"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Defaults for the zero fields of Config.
const (
	DefaultRecords      = 5000
	DefaultReadRecords  = 10000
	DefaultJournals     = 100
	DefaultWriters      = 16
	DefaultPayloadBytes = 256
)

// Targets are the lowest acceptable ratios of store to raw throughput.
const (
	appendTarget = 0.7
	readTarget   = 0.5
)

// rounds is how many times each side of a comparison is measured; the
// median is reported, which keeps one slow fsync or a neighbour's burst on a
// shared machine from deciding the figure. Five rather than three: on a
// shared 2-core machine three rounds let the sync-interval append ratio
// wander between 0.44 and 0.64 from run to run, five kept it within 0.55 to
// 0.62, for about 9 seconds more with the default sizes.
const rounds = 5

// Config says how much work each measurement does. The zero value of every
// field except Dir means its default, so Config{Dir: dir} is complete.
type Config struct {
	// Dir is a scratch directory. Each measurement runs its own server in a
	// fresh subdirectory of it and removes that subdirectory when done.
	// Required.
	Dir string
	// Records is the number of records appended per round by each append
	// measurement. Zero means DefaultRecords.
	Records int
	// ReadRecords is the length of the journal read back, header included;
	// a second journal of the same length is interleaved with it. Zero means
	// DefaultReadRecords; otherwise at least 2.
	ReadRecords int
	// Journals is the number of journals the concurrent append spreads its
	// records over. Zero means DefaultJournals.
	Journals int
	// Writers is the number of goroutines of the concurrent append. Zero
	// means DefaultWriters.
	Writers int
	// PayloadBytes is the length of each record's variable part (the
	// summary of its progress signal); the encoded record is that plus its
	// fixed fields (see Report.RecordBytes). Zero means DefaultPayloadBytes.
	PayloadBytes int
	// Progress, when set, receives one line per measurement as it finishes.
	Progress io.Writer
}

// DefaultConfig returns a Config with every default spelled out; callers set
// Dir.
func DefaultConfig() Config {
	return Config{
		Records:      DefaultRecords,
		ReadRecords:  DefaultReadRecords,
		Journals:     DefaultJournals,
		Writers:      DefaultWriters,
		PayloadBytes: DefaultPayloadBytes,
	}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	p := benchkit.NewProblems("storebench")
	if c.Dir == "" {
		p.Addf("no Dir (want a scratch directory for the benchmark servers)")
	}
	p.NotNegative("Records", c.Records, DefaultRecords)
	p.NotNegative("Journals", c.Journals, DefaultJournals)
	p.NotNegative("Writers", c.Writers, DefaultWriters)
	p.NotNegative("PayloadBytes", c.PayloadBytes, DefaultPayloadBytes)
	if c.ReadRecords < 0 || c.ReadRecords == 1 {
		p.Addf("ReadRecords %d is too small (want 2 or more: a header and at least one record; 0 for %d)", c.ReadRecords, DefaultReadRecords)
	}
	return p.Err()
}

// withDefaults fills the zero fields that have a default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	benchkit.Default(&c.Records, d.Records)
	benchkit.Default(&c.ReadRecords, d.ReadRecords)
	benchkit.Default(&c.Journals, d.Journals)
	benchkit.Default(&c.Writers, d.Writers)
	benchkit.Default(&c.PayloadBytes, d.PayloadBytes)
	return c
}

// Result is one comparison of the store with raw JetStream.
type Result struct {
	// Name says what was measured, e.g. "append/single-writer/sync-always".
	Name string
	// Records is the number of records each side handled per round.
	Records int
	// Elapsed and RawElapsed are the median times of the store and of the
	// raw baseline.
	Elapsed    time.Duration
	RawElapsed time.Duration
	// PerSecond is the store's records per second.
	PerSecond float64
	// RawPerSecond is the raw baseline's records per second, measured on the
	// same server in the same run.
	RawPerSecond float64
	// Ratio is PerSecond / RawPerSecond.
	Ratio float64
	// Target is the lowest acceptable Ratio; 0 when there is none.
	Target float64
	// Baseline says in words what the raw figure is.
	Baseline string
	// PeerPerSecond is the records per second of the SQLite peer doing the
	// same appends as durably, measured in the same run; 0 when the result
	// has no peer.
	PeerPerSecond float64
	// PeerRatio is PerSecond / PeerPerSecond.
	PeerRatio float64
	// PeerTarget is the lowest acceptable PeerRatio; 0 when there is none.
	PeerTarget float64
}

// withPeer adds the SQLite peer's median time to a result.
func (r Result) withPeer(target float64, peer []time.Duration) Result {
	r.PeerPerSecond = benchkit.Rate(r.Records, benchkit.Median(peer))
	r.PeerTarget = target
	if r.PeerPerSecond > 0 {
		r.PeerRatio = r.PerSecond / r.PeerPerSecond
	}
	return r
}

// PeerVerdict is Verdict for PeerRatio and PeerTarget.
func (r Result) PeerVerdict() string {
	switch {
	case r.PeerTarget == 0:
		return ""
	case r.PeerRatio >= r.PeerTarget:
		return "PASS"
	default:
		return "BELOW"
	}
}

// Verdict is "PASS" when the ratio reaches the target, "BELOW" when it does
// not, and "" when there is no target.
func (r Result) Verdict() string {
	switch {
	case r.Target == 0:
		return ""
	case r.Ratio >= r.Target:
		return "PASS"
	default:
		return "BELOW"
	}
}

// Report is the outcome of Run and the machine it ran on.
type Report struct {
	Results []Result
	// Config is the configuration run, defaults filled in.
	Config Config
	// Rounds is how many times each side was measured; figures are medians.
	Rounds int
	// RecordBytes is the encoded size of one appended record.
	RecordBytes int
	benchkit.Host
	Started time.Time
	// Elapsed is the whole run, server start-ups and data set-up included.
	Elapsed time.Duration
}

// Below returns the results whose ratio to the raw baseline or to the
// SQLite peer is under its target.
func (r Report) Below() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Verdict() == "BELOW" || res.PeerVerdict() == "BELOW" {
			out = append(out, res)
		}
	}
	return out
}

// Run measures every comparison in turn. A ratio under its target is not an
// error: it is in the report. Run fails when a server cannot start, an
// operation fails or a read returns the wrong number of records.
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
	r := &runner{cfg: cfg, summary: benchkit.Filler(cfg.PayloadBytes)}
	steps := []func(context.Context) ([]Result, error){
		func(ctx context.Context) ([]Result, error) { return r.appendSingle(ctx, bus.SyncAlways) },
		func(ctx context.Context) ([]Result, error) { return r.appendSingle(ctx, bus.SyncInterval) },
		r.appendSpread,
		r.read,
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
	rep.RecordBytes = r.recordBytes
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// result turns the measured rounds of both sides into a Result.
func result(name string, records int, target float64, baseline string, store, raw []time.Duration) Result {
	res := Result{
		Name:       name,
		Records:    records,
		Elapsed:    benchkit.Median(store),
		RawElapsed: benchkit.Median(raw),
		Target:     target,
		Baseline:   baseline,
	}
	res.PerSecond = benchkit.Rate(records, res.Elapsed)
	res.RawPerSecond = benchkit.Rate(records, res.RawElapsed)
	if res.RawPerSecond > 0 {
		res.Ratio = res.PerSecond / res.RawPerSecond
	}
	return res
}
