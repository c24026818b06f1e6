package projbench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/policy"
)

// Sizes of the measurements that do not scale with Config.
const (
	// foldRecords is the length of the journal replay/fold folds.
	foldRecords = 100_000
	// decideCalls is the number of observations policy/decide decides.
	decideCalls = 100_000
	// decideStateRecords is the length of the journal whose state
	// policy/decide decides on: a journal of the default catch-up log.
	decideStateRecords = DefaultRecords / DefaultJournals
)

// replay measures execution.Replay over one long journal, decoded from its
// encoded form beforehand as a reader of the log would have it.
func (r *runner) replay(context.Context) ([]benchkit.Result, error) {
	ref, err := reference("fold", 0)
	if err != nil {
		return nil, err
	}
	recs := journal(ref, foldRecords)
	for i, rec := range recs {
		data, err := eventstore.Encode(rec)
		if err != nil {
			return nil, fmt.Errorf("replay/fold: encode %s: %w", rec.Kind(), err)
		}
		if recs[i], err = eventstore.Decode(data); err != nil {
			return nil, fmt.Errorf("replay/fold: decode %s: %w", rec.Kind(), err)
		}
	}
	var times []time.Duration
	for range rounds {
		var st *execution.State
		d, err := benchkit.Timed(func() (err error) {
			st, err = execution.Replay(recs)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("replay/fold: %w", err)
		}
		if st.Journal.RecordCount != uint64(len(recs)) {
			return nil, fmt.Errorf("replay/fold: the state counts %d records, want %d", st.Journal.RecordCount, len(recs))
		}
		times = append(times, d)
	}
	res := throughput("replay/fold", len(recs), times,
		"execution.Replay of one generated journal, records decoded beforehand, timeline items kept")
	res.Checks = []benchkit.Check{{Metric: "records/s", Value: res.Rate, Target: foldTarget}}
	return []benchkit.Result{res}, nil
}

// mixedObservation returns the i-th observation of a mix of every signal,
// mostly progress, a few of them with a confidence too low to move state.
func mixedObservation(i int) *eventstore.Observation {
	conf := eventstore.ConfidenceAuthoritative
	if i%7 == 3 {
		conf = eventstore.ConfidenceLow
	}
	var p eventstore.SignalPayload
	switch i % 10 {
	case 0, 1, 2:
		p = &eventstore.ProgressSignal{Summary: fmt.Sprintf("editing file %d of 40", i%40)}
	case 3:
		phase := []string{"planning", "editing", "executing", "testing"}[i/10%4]
		p = &eventstore.StatusSignal{Summary: phase, Phase: phase}
	case 4:
		in, out := int64(1000+i%500), int64(200+i%100)
		p = &eventstore.UsageSignal{InputTokens: &in, OutputTokens: &out}
	case 5:
		p = &eventstore.MessageSignal{Text: fmt.Sprintf("Looked at %d call sites; two need a change.", i%30)}
	case 6:
		p = &eventstore.NeedsInputSignal{RequestID: fmt.Sprintf("req-mix-%d", i), Question: "Which branch should I rebase on?", Choices: []string{"main", "release"}}
	case 7:
		p = &eventstore.BlockedSignal{Reason: "the test database is not reachable"}
	case 8:
		switch i / 10 % 3 {
		case 0:
			p = &eventstore.CompletedClaimSignal{Summary: "the handlers are done", Evidence: []string{"go test ./..."}}
		case 1:
			p = &eventstore.FailedClaimSignal{Reason: "the build fails on arm64"}
		default:
			p = &eventstore.ReadyForVerificationSignal{Summary: "ready for review"}
		}
	default:
		p = &eventstore.DiagnosticSignal{Message: "unknown event from the provider", Code: "unknown-event"}
	}
	return &eventstore.Observation{ObservationID: fmt.Sprintf("mix-%d", i), Source: eventstore.ObservedMCP,
		Confidence: conf, Signal: eventstore.NewSignal(p)}
}

// decide measures policy.Decide alone, call by call, on the state of a
// running execution.
func (r *runner) decide(context.Context) ([]benchkit.Result, error) {
	ref, err := reference("decide", 0)
	if err != nil {
		return nil, err
	}
	// A journal long enough never to end: the execution keeps running.
	g := newGenerator(ref, 1<<30)
	g.header()
	for range decideStateRecords - 1 {
		g.next()
	}
	st := g.state
	obs := make([]*eventstore.Observation, decideCalls)
	for i := range obs {
		obs[i] = mixedObservation(i)
	}
	latencies := make([]time.Duration, len(obs))
	var decided int
	began := time.Now()
	for i, o := range obs {
		start := time.Now()
		out := policy.Decide(st, o)
		latencies[i] = time.Since(start)
		if out.Decision != nil && !out.Duplicate {
			decided++
		}
	}
	took := time.Since(began)
	if decided != len(obs) {
		return nil, fmt.Errorf("policy/decide: %d of %d observations decided, want all", decided, len(obs))
	}
	res := benchkit.Result{Name: "policy/decide", Count: len(obs), Elapsed: took,
		P50: benchkit.Percentile(latencies, 0.50), P99: benchkit.Percentile(latencies, 0.99),
		Method: fmt.Sprintf("policy.Decide on the state of a running execution %d records into its journal, each of a mix of every signal timed on its own", decideStateRecords)}
	return []benchkit.Result{res}, nil
}

// decideLive measures the whole loop of the policy on a log of its own: an
// observation appended, delivered to a policy.Subscriber, decided and its
// decision appended, timed from just before the observation's Append until
// a follower of the log reads the decision.
func (r *runner) decideLive(ctx context.Context) (_ []benchkit.Result, err error) {
	n := max(10, r.cfg.LatencyRecords/10)
	pace := max(1, r.cfg.Rate/10)
	srv, err := startServer(ctx, filepath.Join(r.dir, "policy"))
	if err != nil {
		return nil, err
	}
	defer benchkit.CloseInto(srv, &err)

	refs := make([]eventstore.Reference, liveJournals)
	for i := range refs {
		if refs[i], err = reference("policy", i); err != nil {
			return nil, err
		}
		// The header and the state change that starts the execution.
		g := newGenerator(refs[i], 1<<30)
		if _, err := srv.store.EnsureJournal(ctx, refs[i], g.header()); err != nil {
			return nil, err
		}
		if _, err := srv.store.Append(ctx, refs[i], g.next()); err != nil {
			return nil, err
		}
	}
	from, err := srv.store.LastOffset(ctx)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	sub := policy.NewSubscriber(srv.store, policy.SubscriberConfig{Consumer: "projbench"})
	subErr := make(chan error, 1)
	wg.Go(func() { subErr <- sub.Run(ctx) })

	// The follower notes when each decision is read; starts are written
	// before their observation is appended, so a decision always finds its
	// start.
	var mu sync.Mutex
	starts := make(map[string]time.Time, n)
	latencies := make([]time.Duration, 0, n)
	all := make(chan struct{})
	followErr := make(chan error, 1)
	wg.Go(func() {
		for batch, err := range srv.store.Follow(ctx, from+1, 1000) {
			if err != nil {
				followErr <- err
				return
			}
			now := time.Now()
			mu.Lock()
			for _, e := range batch {
				d, ok := e.Record.(*eventstore.Decision)
				if !ok {
					continue
				}
				if start, ok := starts[d.ObservationID]; ok {
					latencies = append(latencies, now.Sub(start))
					delete(starts, d.ObservationID)
				}
			}
			done := len(latencies) == n
			mu.Unlock()
			if done {
				close(all)
				return
			}
		}
	})

	began := time.Now()
	err = paced(ctx, n, pace, func(i int) error {
		o := mixedObservation(i)
		mu.Lock()
		starts[o.ObservationID] = time.Now()
		mu.Unlock()
		_, err := srv.store.Append(ctx, refs[i%len(refs)], o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("policy/append-to-decision: %w", err)
	}
	select {
	case <-all:
	case err := <-followErr:
		return nil, fmt.Errorf("policy/append-to-decision: follow the log: %w", err)
	case err := <-subErr:
		return nil, fmt.Errorf("policy/append-to-decision: the subscriber stopped: %w", err)
	case <-time.After(time.Minute):
		mu.Lock()
		got := len(latencies)
		mu.Unlock()
		return nil, fmt.Errorf("policy/append-to-decision: %d of %d decisions after a minute", got, n)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	cancel()
	wg.Wait()
	if err := <-subErr; err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("policy/append-to-decision: subscriber: %w", err)
	}
	res := benchkit.Result{Name: "policy/append-to-decision", Count: n, Elapsed: time.Since(began),
		P50: benchkit.Percentile(latencies, 0.50), P99: benchkit.Percentile(latencies, 0.99),
		Method: fmt.Sprintf("observations appended to %d journals at %d/s with a policy.Subscriber on the log; each timed from before its Append until a follower of the log reads its decision.recorded", liveJournals, pace)}
	return []benchkit.Result{res}, nil
}
