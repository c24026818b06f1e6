package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/runtime"
)

// awayRig is a rig whose store reaches its log over a connection of its
// own to a NATS server that a test stops and starts again on the same
// store, as a daemon joined with --nats-url sees its host go and come
// back.
type awayRig struct {
	*rig
	natsDir, listen string
	host            *bus.Bus
}

// awayWait is the store's UnavailableWait in these tests: an append gives
// up on a log that does not answer after about that long, plus the
// attempt in flight.
const awayWait = 500 * time.Millisecond

func newAwayRig(t *testing.T, cfg runtime.Config) *awayRig {
	t.Helper()
	r := &awayRig{natsDir: t.TempDir(), listen: fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0])}
	r.start(t)
	peer := fixtures.StartNATS(t, func(c *bus.Config) { c.URL = r.host.ClientURL() })
	s, err := eventstore.OpenJetStream(context.Background(), peer.JetStream(), eventstore.JetStreamConfig{Stream: peer.StreamName(), UnavailableWait: awayWait})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = s
	r.rig = &rig{store: s, rt: startRuntime(t, cfg), agent: fixtures.AgentBinary(t)}
	return r
}

// start starts the NATS server on the rig's store and port.
func (r *awayRig) start(t *testing.T) {
	t.Helper()
	r.host = fixtures.StartNATSAt(t, r.natsDir, func(c *bus.Config) { c.Listen = r.listen })
}

// away stops the NATS server for d, then starts it again. Halfway, with
// elsewhere set, the server runs for a moment where only the test
// reaches it, and elsewhere writes to the log, as another daemon that can
// reach it does while this one cannot.
func (r *awayRig) away(t *testing.T, d time.Duration, elsewhere func(s *eventstore.JetStreamStore)) {
	t.Helper()
	if err := r.host.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d / 2)
	if elsewhere != nil {
		b := fixtures.StartNATSAt(t, r.natsDir)
		elsewhere(fixtures.OpenStore(t, b))
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(d / 2)
	r.start(t)
}

// markerIDs lists the observation ids of an execution's markers (its
// progress signals) in journal order, and its output-lost diagnostics.
func markerIDs(recs []eventstore.Record) (markers []string, lost []*eventstore.Observation) {
	for _, rec := range recs {
		o, ok := rec.(*eventstore.Observation)
		if !ok || o.Signal == nil {
			continue
		}
		switch p := o.Signal.Payload.(type) {
		case *eventstore.ProgressSignal:
			markers = append(markers, o.ObservationID)
		case *eventstore.DiagnosticSignal:
			if p.Code == runtime.CodeOutputLost {
				lost = append(lost, o)
			}
		}
	}
	return markers, lost
}

// stdoutIDs are the observation ids of stdout lines from..to.
func stdoutIDs(from, to int) []string {
	var ids []string
	for n := from; n <= to; n++ {
		ids = append(ids, fmt.Sprintf("stdout-%d", n))
	}
	return ids
}

// TestOutputIsHeldWhileTheLogIsAway: an agent prints markers while its
// log is away for many times the store's UnavailableWait; once the log is
// back every marker is in the journal, once, in order, and the run's end
// after them. Meanwhile another writer appends to the journal, as the
// policy or another daemon does on a busy log: the first attempt of the
// marker the store gave up on, which the connection keeps to send on
// reconnecting, then finds the journal moved on and is refused, so
// without the hold that marker is lost for good.
func TestOutputIsHeldWhileTheLogIsAway(t *testing.T) {
	r := newAwayRig(t, runtime.Config{})
	ref := r.launch(t, "sleep:500ms", "markers:20:100ms")
	r.away(t, 10*awayWait+3*time.Second, func(s *eventstore.JetStreamStore) {
		if _, err := s.Append(context.Background(), ref, &eventstore.Observation{ObservationID: "o-elsewhere", Source: eventstore.ObservedDaemon,
			Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(&eventstore.StatusSignal{Summary: "noted elsewhere"})}); err != nil {
			t.Fatal(err)
		}
	})
	st := r.wait(t, ref)
	recs := r.records(t, ref)
	markers, lost := markerIDs(recs)
	if want := stdoutIDs(1, 20); strings.Join(markers, " ") != strings.Join(want, " ") || len(lost) != 0 {
		t.Fatalf("markers in the journal %v, lost %v; want %v and no loss", markers, lost, want)
	}
	if st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	if last, ok := recs[len(recs)-1].(*eventstore.StateChanged); !ok || last.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("last record %s, want the end of the run after every marker", recs[len(recs)-1].Kind())
	}
}

// TestOutputBeyondTheHoldLimitIsCounted: with room for 3 records, an agent
// that prints 12 markers while the log is away has the first 3 journaled
// once it is back, then one output-lost diagnostic that names the other 9,
// then the end of its run.
func TestOutputBeyondTheHoldLimitIsCounted(t *testing.T) {
	r := newAwayRig(t, runtime.Config{HoldLimit: 3})
	ref := r.launch(t, "sleep:500ms", "markers:12:10ms")
	r.away(t, 10*awayWait, nil)
	st := r.wait(t, ref)
	recs := r.records(t, ref)
	markers, lost := markerIDs(recs)
	if want := stdoutIDs(1, 3); strings.Join(markers, " ") != strings.Join(want, " ") || len(lost) != 1 {
		t.Fatalf("markers in the journal %v and %d output-lost records, want %v and one", markers, len(lost), want)
	}
	got := lost[0].Payload
	want := map[string]any{"records": 9.0, "observations": 9.0, "activityUpdates": 0.0, "first": "stdout-4", "last": "stdout-12", "holdLimit": 3.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output-lost payload %s = %v, want %v (payload %v)", k, got[k], v, got)
		}
	}
	if msg := lost[0].Signal.Payload.(*eventstore.DiagnosticSignal).Message; !strings.HasPrefix(msg, "9 records of the agent's output are not in the journal (stdout-4 to stdout-12)") {
		t.Errorf("output-lost message %q, want it to name the 9 records", msg)
	}
	var order []string
	for _, rec := range recs {
		if o, ok := rec.(*eventstore.Observation); ok {
			order = append(order, o.ObservationID)
		}
	}
	if w := append(stdoutIDs(1, 3), "output-lost-stdout-4"); strings.Join(order, " ") != strings.Join(w, " ") {
		t.Errorf("observations in journal order %v, want %v", order, w)
	}
	if st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("lifecycle %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
}

// TestCloseGivesUpHeldOutputAtItsDeadline: a runtime closed while its
// agent's markers wait for a log that stays away returns by its deadline,
// and records nothing that passes over them: once the log is back, the
// journal has no end of the run, which Recover is left to record.
func TestCloseGivesUpHeldOutputAtItsDeadline(t *testing.T) {
	r := newAwayRig(t, runtime.Config{})
	ref := r.launch(t, "sleep:500ms", "markers:5:10ms", "wait")
	if err := r.host.Close(); err != nil {
		t.Fatal(err)
	}
	// Long enough for the first marker's append to be given up on by the
	// store, and so held.
	time.Sleep(10 * awayWait)
	const deadline = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	err := r.rt.Close(ctx)
	if took := time.Since(start); took > deadline+2*time.Second {
		t.Fatalf("Close took %s with a deadline of %s", took, deadline)
	}
	t.Logf("Close: %v", err)
	r.start(t)
	for _, rec := range fixtures.ReadJournal(t, fixtures.OpenStore(t, r.host), ref) {
		if st, ok := rec.(*eventstore.StateChanged); ok && st.Lifecycle.Final() {
			t.Fatalf("the journal ends the run (%s: %s) though its output was dropped", st.Lifecycle, st.Reason)
		}
		if in, ok := rec.(*eventstore.Interruption); ok {
			t.Fatalf("the journal has an interruption (%s) though its output was dropped", in.Reason)
		}
	}
}
