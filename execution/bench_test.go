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
		if p, ok := o.Signal.Payload.(*eventstore.ProgressSignal); ok {
			if ns, perr := strconv.ParseInt(p.Summary, 10, 64); perr == nil {
				l.mu.Lock()
				l.lags = append(l.lags, time.Since(time.Unix(0, ns)))
				l.mu.Unlock()
			}
		}
	}
	return e, err
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
	ls.mu.Lock()
	defer ls.mu.Unlock()
	slices.Sort(ls.lags)
	if len(ls.lags) == 0 {
		b.Fatal("no marker observed")
	}
	q := func(f float64) float64 { return float64(ls.lags[int(f*float64(len(ls.lags)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(ls.lags)), "markers")
}
