package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// eventPayload is the data of a record event.
type eventPayload struct {
	ExecutionID string          `json:"executionId"`
	Offset      uint64          `json:"offset"`
	Sequence    uint64          `json:"sequence"`
	Record      eventstore.Kind `json:"record"`
	State       *struct {
		Lifecycle eventstore.Lifecycle `json:"lifecycle"`
	} `json:"state"`
	Message *struct {
		Text string `json:"text"`
	} `json:"message"`
}

func TestEvents(t *testing.T) {
	r := newRig(t)

	// Checked on the reading goroutine as each event arrives: the
	// projection must already hold the record the event describes.
	var mu sync.Mutex
	var problems []string
	check := func(ev sseEvent) {
		if ev.Name == "terminal" {
			return
		}
		var p eventPayload
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("event %s: data %q: %v", ev, ev.Data, err))
			mu.Unlock()
			return
		}
		var bad []string
		if p.Offset != ev.ID {
			bad = append(bad, fmt.Sprintf("data offset %d", p.Offset))
		}
		if cp, err := r.views.Checkpoint(); err != nil || cp < ev.ID {
			bad = append(bad, fmt.Sprintf("arrived with the projection at offset %d (%v)", cp, err))
		}
		if ev.Name == "execution.completed" {
			st, err := r.views.Execution(p.ExecutionID)
			if err != nil || st.Lifecycle != eventstore.LifecycleCompleted {
				bad = append(bad, fmt.Sprintf("arrived with the projection holding %v (%v)", st, err))
			}
			if p.State == nil || p.State.Lifecycle != eventstore.LifecycleCompleted {
				bad = append(bad, fmt.Sprintf("carries state %+v", p.State))
			}
		}
		if len(bad) > 0 {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("event %s: %s", ev, strings.Join(bad, "; ")))
			mu.Unlock()
		}
	}

	live := r.subscribe(t, "", "", check)
	l := r.launch(t, "t-events", "", `signal:{"type":"message","payload":{"text":"hello operator"}}`)
	id := l.Reference.AgentExecutionID

	// Wait until the run is over and decided, so that the log stops
	// growing, then read its last offset.
	last := r.waitDecided(t, id, "message")
	isEnd := func(ev sseEvent) bool { return ev.Name == "data.changed" && ev.ID == last }
	first := live.until(t, 20*time.Second, isEnd)

	var named []string
	var messageAt uint64
	for i, ev := range first {
		if i > 0 && ev.ID < first[i-1].ID {
			t.Errorf("event %s after %s: ids go back", ev, first[i-1])
		}
		var p eventPayload
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
			t.Fatal(err)
		}
		if p.ExecutionID != id {
			t.Errorf("event %s is of execution %s, want %s", ev, p.ExecutionID, id)
		}
		switch ev.Name {
		case "execution.started", "execution.message", "execution.completed":
			named = append(named, ev.Name)
		}
		if ev.Name == "execution.message" {
			messageAt = ev.ID
			if p.Message == nil || p.Message.Text != "hello operator" || p.Record != eventstore.KindObservation {
				t.Errorf("execution.message %s, want the agent's text", ev.Data)
			}
		}
	}
	if diff := cmp.Diff([]string{"execution.started", "execution.message", "execution.completed"}, named); diff != "" {
		t.Fatalf("named events (-want +got):\n%s\nall: %v", diff, first)
	}
	// Every record gets a data.changed, and every event's id is the offset
	// of a record of the run.
	changed := 0
	for _, ev := range first {
		if ev.Name == "data.changed" {
			changed++
		}
	}
	var recs int
	for _, err := range r.store.ReadLog(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		recs++
	}
	if changed != recs {
		t.Errorf("%d data.changed events for %d records", changed, recs)
	}

	// A client that reconnects with the id of the message event gets
	// exactly the events after it, from the log.
	var want []string
	for _, ev := range first {
		if ev.ID > messageAt {
			want = append(want, ev.String())
		}
	}
	resumed := r.subscribe(t, "", fmt.Sprint(messageAt), check)
	var got []string
	for _, ev := range resumed.until(t, 20*time.Second, isEnd) {
		got = append(got, ev.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("resumed stream (-want +got):\n%s", diff)
	}

	// The same from the start, for this execution alone.
	var all []string
	for _, ev := range first {
		all = append(all, ev.String())
	}
	var filtered []string
	for _, ev := range r.subscribe(t, "?execution="+id, "0", check).until(t, 20*time.Second, isEnd) {
		filtered = append(filtered, ev.String())
	}
	if diff := cmp.Diff(all, filtered); diff != "" {
		t.Fatalf("replayed stream of %s (-want +got):\n%s", id, diff)
	}

	// Nothing more arrives on any stream: no duplicates after the end.
	select {
	case ev := <-live.events:
		t.Errorf("live stream: unexpected %s after the end", ev)
	case ev := <-resumed.events:
		t.Errorf("resumed stream: unexpected %s after the end", ev)
	case <-time.After(300 * time.Millisecond):
	}

	// A live event after the resume reaches the resumed stream once.
	other := r.launch(t, "t-events", "", "exit:0").Reference.AgentExecutionID
	started := func(ev sseEvent) bool { return ev.Name == "execution.started" }
	for name, s := range map[string]*stream{"live": live, "resumed": resumed} {
		evs := s.until(t, 20*time.Second, started)
		var p eventPayload
		json.Unmarshal([]byte(evs[len(evs)-1].Data), &p)
		if p.ExecutionID != other || evs[0].ID <= last {
			t.Errorf("%s stream: %v, want the new execution's events after offset %d", name, evs, last)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
}

func TestEventsBadRequest(t *testing.T) {
	r := newRig(t)
	r.fail(t, "GET", "/v1/events?execution=", nil, testToken, 400, "invalid_field", "execution")
	r.fail(t, "GET", "/v1/events?since=4", nil, testToken, 400, "invalid_field", "since")
	resp, body := r.send(t, "GET", "/v1/events", nil, map[string]string{"Authorization": "Bearer " + testToken, "Last-Event-ID": "yesterday"})
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 400 || e.Error.Field != "Last-Event-ID" {
		t.Fatalf("bad Last-Event-ID: %d %+v (%v), want 400 naming Last-Event-ID", resp.StatusCode, e, err)
	}
}

// waitDecided waits until the run id has completed and its one
// observation, a what, is decided, so that the log stops growing, and
// returns the log's last offset then.
func (r *rig) waitDecided(t *testing.T, id, what string) uint64 {
	t.Helper()
	eventually(t, 20*time.Second, "the agent completes and its "+what+" is decided", func() bool {
		st, err := r.views.Execution(id)
		return err == nil && st.Lifecycle == eventstore.LifecycleCompleted && len(st.Decisions) == 1
	})
	last, err := r.store.LastOffset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestReplayedEventsCarryTheStateAsOfTheirRecord: a client that reconnects
// gets, for every record it missed, the state that record left, the same
// as replaying the journal up to it, and never a later one.
func TestReplayedEventsCarryTheStateAsOfTheirRecord(t *testing.T) {
	r := newRig(t)
	l := r.launch(t, "t-replayed-state", "", `signal:{"type":"progress","payload":{"summary":"half way"}}`)
	id := l.Reference.AgentExecutionID
	last := r.waitDecided(t, id, "progress")
	isEnd := func(ev sseEvent) bool { return ev.Name == "data.changed" && ev.ID == last }

	// What each record left: the journal replayed up to it.
	ref := r.lookup(t, id)
	type asOf struct {
		Sequence  uint64
		Lifecycle eventstore.Lifecycle
		Attention eventstore.Attention
	}
	want := map[uint64]asOf{} // by offset
	var recs []eventstore.Record
	for e, err := range r.store.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, e.Record)
		st, err := execution.Replay(recs)
		if err != nil {
			t.Fatal(err)
		}
		want[e.Offset] = asOf{e.Record.RecordBase().Sequence, st.Lifecycle, st.Attention}
	}

	for _, query := range []string{"", "?execution=" + id} {
		got := map[uint64]asOf{}
		for _, ev := range r.subscribe(t, query, "0", func(sseEvent) {}).until(t, 20*time.Second, isEnd) {
			if ev.Name != "data.changed" {
				continue
			}
			var p struct {
				State *struct {
					LastSequence uint64               `json:"lastSequence"`
					Lifecycle    eventstore.Lifecycle `json:"lifecycle"`
					Attention    eventstore.Attention `json:"attention"`
				} `json:"state"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &p); err != nil || p.State == nil {
				t.Fatalf("stream%s: event %s: data %s (%v), want a state", query, ev, ev.Data, err)
			}
			got[ev.ID] = asOf{p.State.LastSequence, p.State.Lifecycle, p.State.Attention}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stream%s: replayed states by offset (-journal replayed up to the record +event):\n%s", query, diff)
		}
	}
}
