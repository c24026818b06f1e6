package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestJoinedDaemonHoldsOutputWhileItsNATSIsDown: a daemon joined with
// --nats-url runs an agent that prints 40 numbered markers while the NATS
// it joined is down for longer than the store's UnavailableWait; once the
// server is back, on the same store, every marker is in the journal once
// and in order, followed by the run's end. Halfway through the outage
// another writer that can reach the server appends to the journal, as the
// policy and other daemons do on a busy log: the first attempt of the
// marker whose append the store gave up on, kept by the daemon's
// connection to send on reconnecting, then finds the journal moved on and
// is refused. Without the runtime's hold that marker was gone for good.
func TestJoinedDaemonHoldsOutputWhileItsNATSIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon as a process")
	}
	const markers = 40
	natsDir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0])
	host := fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })
	b := startDaemon(t, "B", t.TempDir(), []string{"--nats-url", host.ClientURL(), "--nats-secret-file", natsSecretFile(t)})
	id := b.launchAgent(t, "t-away", fmt.Sprintf("markers:%d:250ms", markers))
	pollUntil(t, procConvergeWait, "the first markers in the journal", func() (bool, string) {
		n := len(markerIDs(b.records(t, id)))
		return n >= 3, fmt.Sprintf("%d markers", n)
	})

	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	// Longer than UnavailableWait, in two halves: the markers printed
	// meanwhile wait in the agent's spool.
	half := eventstore.DefaultUnavailableWait/2 + 2*time.Second
	time.Sleep(half)
	elsewhere := fixtures.StartNATSAt(t, natsDir)
	s := fixtures.OpenStore(t, elsewhere)
	ref, err := s.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), ref, &eventstore.Observation{ObservationID: "o-elsewhere", Source: eventstore.ObservedDaemon,
		Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(&eventstore.StatusSignal{Summary: "noted elsewhere"})}); err != nil {
		t.Fatal(err)
	}
	if err := elsewhere.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(half)
	if code, out, err := b.do("GET", "/healthz", nil); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("healthz while the NATS is down: %d %s %v; want 503", code, out, err)
	}
	fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })

	pollUntil(t, procDecisionWait, "the run's end in the journal", func() (bool, string) {
		recs, busy := b.tryRecords(t, id)
		if busy != "" {
			return false, busy
		}
		for _, r := range recs {
			if r.Type == string(eventstore.KindStateChanged) && strings.Contains(r.Reason, "exit status") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d markers, no end yet", len(markerIDs(recs)))
	})
	recs := b.records(t, id)
	var want []string
	for n := 1; n <= markers; n++ {
		want = append(want, fmt.Sprintf("stdout-%d", n))
	}
	if got := markerIDs(recs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("markers in journal order:\n%v\nwant each of the %d once, in order", got, markers)
	}
	// The end comes after every marker; the policy may still append what
	// follows its decision on the last one (an activity update) after it.
	end, lastMarker := -1, -1
	for i, r := range recs {
		switch {
		case r.Type == string(eventstore.KindStateChanged) && strings.Contains(r.Reason, "exit status"):
			end = i
		case r.Type == string(eventstore.KindObservation) && strings.HasPrefix(r.ObservationID, "stdout-"):
			// A decision names the observation it is on too, and the
			// policy may decide on the last markers after the end.
			lastMarker = i
		}
	}
	if end < lastMarker {
		var around []string
		for _, r := range recs[max(end-3, 0):min(lastMarker+2, len(recs))] {
			around = append(around, fmt.Sprintf("#%d %s %s%s %s", r.Sequence, r.Type, r.ObservationID, r.DecisionID, r.Reason))
		}
		t.Fatalf("the run's end at record %d, before the marker at %d: want it after every marker; around them:\n%s", end, lastMarker, strings.Join(around, "\n"))
	}
	if st := b.state(t, id); st.Lifecycle != string(eventstore.LifecycleCompleted) {
		t.Fatalf("lifecycle %s, want completed", st.Lifecycle)
	}
	b.stop()
}

// markerIDs lists the observation ids of the agent's stdout markers in
// journal order.
func markerIDs(recs []seenRecord) []string {
	var ids []string
	for _, r := range recs {
		if r.Type == string(eventstore.KindObservation) && strings.HasPrefix(r.ObservationID, "stdout-") {
			ids = append(ids, r.ObservationID)
		}
	}
	return ids
}
