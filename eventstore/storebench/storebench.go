package storebench

import (
	"context"
	"fmt"
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
	Dir string `bench:"-"`
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
	// fixed fields (the report's recordBytes setting). Zero means DefaultPayloadBytes.
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
	return benchkit.Defaults(c, DefaultConfig())
}

// Names of the figures and checks of a result beside the common ones.
const (
	figureRawRate     = "raw rec/s"
	figureRawElapsed  = "raw elapsed"
	figurePeerRate    = "peer rec/s"
	figureRawToPeer   = "raw/peer"
	checkRatioToRaw   = "ratio to raw"
	checkRatioToPeer  = "ratio to sqlite peer"
	baselineRaw       = "raw"
	unitRecordsPerSec = "records/s"
)

// Run measures every comparison in turn. A ratio under its target is not an
// error: it is in the report, and Report.Below lists it. Run fails when a
// server cannot start, an operation fails or a read returns the wrong
// number of records.
func Run(ctx context.Context, cfg Config) (benchkit.Report, error) {
	if err := cfg.Validate(); err != nil {
		return benchkit.Report{}, err
	}
	cfg = cfg.withDefaults()
	rep := benchkit.Report{
		Suite:   "store",
		Title:   "journal store vs raw JetStream",
		Host:    benchkit.Here(),
		Started: time.Now(),
		Notes: []string{"sqlite peer: " + peerDescription,
			nameDiskSync + ": the floor under the durable lines. A JetStream block grows with every record, and syncing a file whose size changed " +
				"commits the file system's journal too; SQLite's write-ahead log, once grown, is written over from its start, and a sync of bytes " +
				"the file already held is cheaper. Its ratio bounds how near one writer of a store that appends can come to the peer"},
	}
	r := &runner{cfg: cfg, summary: benchkit.Filler(cfg.PayloadBytes)}
	steps := []func(context.Context) ([]benchkit.Result, error){
		func(ctx context.Context) ([]benchkit.Result, error) { return r.appendSingle(ctx, bus.SyncAlways) },
		r.diskSync,
		func(ctx context.Context) ([]benchkit.Result, error) { return r.appendSingle(ctx, bus.SyncInterval) },
		r.appendSpread,
		r.read,
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
	rep.Setup = []string{fmt.Sprintf("%d-byte records; every figure is the median of %d rounds, the store's and the raw baseline's measured side by side", r.recordBytes, rounds)}
	rep.Config = append(benchkit.SettingsOf(cfg),
		benchkit.Setting{Name: "rounds", Value: rounds}, benchkit.Setting{Name: "recordBytes", Value: r.recordBytes})
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// result turns the measured rounds of both sides into a result: the
// store's median against the raw baseline's, judged against target when it
// is above 0. baseline says in words what the raw side did.
func result(name string, records int, target float64, baseline string, store, raw []time.Duration) benchkit.Result {
	elapsed, rawElapsed := benchkit.Median(store), benchkit.Median(raw)
	res := benchkit.Result{
		Name:     name,
		Count:    records,
		Elapsed:  elapsed,
		Rate:     benchkit.Rate(records, elapsed),
		RateUnit: unitRecordsPerSec,
		Baseline: baselineRaw,
		Method:   "raw baseline: " + baseline,
	}
	rawRate := benchkit.Rate(records, rawElapsed)
	if rawRate > 0 {
		res.Ratio = res.Rate / rawRate
	}
	res.Figures = []benchkit.Figure{{Name: figureRawRate, Value: rawRate}, benchkit.Seconds(figureRawElapsed, rawElapsed)}
	if target > 0 {
		res.Checks = []benchkit.Check{{Metric: checkRatioToRaw, Value: res.Ratio, Target: target, Unit: "x"}}
	}
	return res
}

// withPeer adds the SQLite peer's median time to a result, with the store's
// ratio to it judged against target.
func withPeer(res benchkit.Result, target float64, peer []time.Duration) benchkit.Result {
	peerRate := benchkit.Rate(res.Count, benchkit.Median(peer))
	var ratio float64
	if peerRate > 0 {
		ratio = res.Rate / peerRate
	}
	res.Figures = append(res.Figures, benchkit.Figure{Name: figurePeerRate, Value: peerRate})
	// The raw baseline against the peer is the floor of the store's
	// ratio: nats-server storing and syncing the same records itself.
	if rawRate, ok := res.Figure(figureRawRate); ok && peerRate > 0 {
		res.Figures = append(res.Figures, benchkit.Figure{Name: figureRawToPeer, Value: rawRate / peerRate, Unit: "x"})
	}
	res.Checks = append(res.Checks, benchkit.Check{Metric: checkRatioToPeer, Value: ratio, Target: target, Unit: "x"})
	return res
}
