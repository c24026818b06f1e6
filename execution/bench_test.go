package execution_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// latencyStore notes, for each progress observation appended, how long ago
// the agent wrote it (the fixture puts its write time in the summary).
type latencyStore struct {
	execution.Store
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

// report reports the lags' median and 99th percentile.
func (l *latencyStore) report(b *testing.B, unit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.lags)
	if len(l.lags) == 0 {
		b.Fatalf("no %s observed", unit)
	}
	q := func(f float64) float64 { return float64(l.lags[int(f*float64(len(l.lags)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(l.lags)), unit)
}

// BenchmarkProviderLineToAck measures, per CLI output format, the time
// from the agent writing a line of provider output to the observation
// parsed from it being acknowledged by the journal (SyncAlways).
func BenchmarkProviderLineToAck(b *testing.B) {
	for _, agent := range []string{"claude-code", "codex", "copilot"} {
		b.Run(agent, func(b *testing.B) {
			bus := fixtures.StartNATS(b)
			s, err := eventstore.OpenJetStream(context.Background(), bus.JetStream(), eventstore.JetStreamConfig{Stream: bus.StreamName()})
			if err != nil {
				b.Fatal(err)
			}
			ls := &latencyStore{Store: s}
			rt := execution.NewRuntime(execution.Config{Store: ls})
			defer rt.Close(context.Background())
			fixture := fixtures.AgentBinary(b)
			for b.Loop() {
				ref, err := rt.Launch(context.Background(), execution.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "bench",
					Agent: agent, Shape: eventstore.ShapeOneShot, Prompt: "bench",
					Command: []string{fixture, "lines:" + agent + ":500:1ms"}})
				if err != nil {
					b.Fatal(err)
				}
				if done := rt.Done(ref.AgentExecutionID); done != nil {
					<-done
				}
			}
			ls.report(b, "lines")
		})
	}
}

// BenchmarkMarkerToAck measures the time from an agent writing a marker
// line to its observation being acknowledged by the journal (SyncAlways).
func BenchmarkMarkerToAck(b *testing.B) {
	bus := fixtures.StartNATS(b)
	s, err := eventstore.OpenJetStream(context.Background(), bus.JetStream(), eventstore.JetStreamConfig{Stream: bus.StreamName()})
	if err != nil {
		b.Fatal(err)
	}
	ls := &latencyStore{Store: s}
	rt := execution.NewRuntime(execution.Config{Store: ls})
	defer rt.Close(context.Background())
	agent := fixtures.AgentBinary(b)
	for b.Loop() {
		ref, err := rt.Launch(context.Background(), execution.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "bench",
			Agent: "generic", Command: []string{agent, "markers:500:1ms"}})
		if err != nil {
			b.Fatal(err)
		}
		if done := rt.Done(ref.AgentExecutionID); done != nil { // nil once ended
			<-done
		}
	}
	ls.report(b, "markers")
}
