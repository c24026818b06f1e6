package runtime_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// latencyStore notes, for each progress observation appended, how long ago
// the agent wrote it (the fixture puts its write time in the summary).
type latencyStore struct {
	runtime.Store
	mu   sync.Mutex
	lags []time.Duration
}

func (l *latencyStore) Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error) {
	e, err := l.Store.Append(ctx, ref, r)
	if o, ok := r.(*eventstore.Observation); ok && err == nil && o.Signal != nil {
		var stamp string
		switch p := o.Signal.Payload.(type) {
		case *eventstore.ProgressSignal:
			stamp = p.Summary
		case *eventstore.MessageSignal:
			stamp = p.Text
		}
		if ns, perr := strconv.ParseInt(stamp, 10, 64); perr == nil {
			l.mu.Lock()
			l.lags = append(l.lags, time.Since(time.Unix(0, ns)))
			l.mu.Unlock()
		}
	}
	return e, err
}

// benchLatency launches req until b.Loop ends, each launch waited for, and
// reports the lags its observations took to be acknowledged, beside the
// same percentiles of raw JetStream publishes with acks of a line's size on
// the same server, measured in the same run.
func benchLatency(b *testing.B, req runtime.LaunchRequest, unit string) {
	bus := fixtures.StartNATS(b)
	s := fixtures.OpenStore(b, bus)
	ls := &latencyStore{Store: s}
	rt := runtime.New(runtime.Config{Store: ls})
	defer rt.Close(context.Background())
	for b.Loop() {
		ref, err := rt.Launch(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if done := rt.Done(ref.AgentExecutionID); done != nil { // nil once ended
			<-done
		}
	}
	b.StopTimer()
	var raw []time.Duration
	data := make([]byte, 512)
	for i := range 500 {
		start := time.Now()
		if _, err := bus.JetStream().Publish(context.Background(), "journal.bench.raw."+strconv.Itoa(i%10), data); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(start))
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.lags) == 0 {
		b.Fatalf("no %s observed", unit)
	}
	q := func(d []time.Duration, f float64) float64 {
		slices.Sort(d)
		return float64(d[int(f*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(q(ls.lags, 0.50), "p50-µs")
	b.ReportMetric(q(ls.lags, 0.99), "p99-µs")
	b.ReportMetric(q(raw, 0.50), "raw-p50-µs")
	b.ReportMetric(q(raw, 0.99), "raw-p99-µs")
	b.ReportMetric(q(ls.lags, 0.50)/max(q(raw, 0.50), 1), "p50/raw")
	b.ReportMetric(float64(len(ls.lags)), unit)
}

// BenchmarkProviderLineToAck measures, per CLI output format, the time
// from the agent writing a line of provider output to the observation
// parsed from it being acknowledged by the journal (SyncAlways).
func BenchmarkProviderLineToAck(b *testing.B) {
	fixture := fixtures.AgentBinary(b)
	for _, agent := range []string{"claude-code", "codex", "copilot"} {
		b.Run(agent, func(b *testing.B) {
			benchLatency(b, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "bench",
				Agent: agent, Shape: eventstore.ShapeOneShot, Prompt: "bench",
				Command: []string{fixture, "lines:" + agent + ":500:1ms"}}, "lines")
		})
	}
}

// BenchmarkMarkerToAck measures the time from an agent writing a marker
// line to its observation being acknowledged by the journal (SyncAlways).
func BenchmarkMarkerToAck(b *testing.B) {
	benchLatency(b, runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "bench",
		Agent: "generic", Command: []string{fixtures.AgentBinary(b), "markers:500:1ms"}}, "markers")
}
