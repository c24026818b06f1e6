package apibench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

const (
	// eventInterval is the pace of sse/fan-out's appends: 200 records a
	// second, which a 2-core machine keeps up with, so that the figures
	// are delivery latency rather than the age of a backlog.
	eventInterval = 5 * time.Millisecond
	// deliveryTimeout bounds the wait, after the last append, for every
	// stream to receive the last record's event; what has not arrived by
	// then is missing.
	deliveryTimeout = 30 * time.Second
	// deliveryPoll is how often that wait looks at the streams.
	deliveryPoll = 10 * time.Millisecond
)

// overflowEvent is the name of the event that ends a stream which fell
// behind (the API's "overflow").
var overflowEvent = []byte("overflow")

// fanOut holds Subscribers event streams open while Events activity
// updates are appended with the store at a steady pace, and times each
// event's arrival at each stream from just before its Append.
func (r *runner) fanOut(ctx context.Context) (benchkit.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	streams := make([]*stream, 0, r.cfg.Subscribers)
	defer func() {
		cancel()
		for _, s := range streams {
			<-s.done
		}
	}()
	for range r.cfg.Subscribers {
		s, err := r.st.openStream(ctx)
		if err != nil {
			return benchkit.Result{}, fmt.Errorf("%s: %w", nameFanOut, err)
		}
		streams = append(streams, s)
	}

	// sent is one appended record: its log offset and when its Append
	// began.
	type sent struct {
		offset uint64
		at     time.Time
	}
	sends := make([]sent, r.cfg.Events)
	var last uint64
	next := time.Now()
	for k := range sends {
		if err := sleepUntil(ctx, next); err != nil {
			return benchkit.Result{}, fmt.Errorf("%s: %w", nameFanOut, err)
		}
		ref := r.st.agents[k%len(r.st.agents)]
		rec := activity(ref, fmt.Sprintf("sse-%d", k), r.text)
		at := time.Now()
		e, err := r.st.store.Append(ctx, ref, rec)
		if err != nil {
			return benchkit.Result{}, fmt.Errorf("%s: %w", nameFanOut, err)
		}
		sends[k] = sent{offset: e.Offset, at: at}
		last = max(last, e.Offset)
		// A steady pace: an append that overran its slot delays the
		// next one instead of bunching the ones after it.
		next = next.Add(eventInterval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}

	deadline := time.Now().Add(deliveryTimeout)
	for !allReached(streams, last) && time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(deliveryPoll)); err != nil {
			return benchkit.Result{}, fmt.Errorf("%s: %w", nameFanOut, err)
		}
	}
	cancel()
	for _, s := range streams {
		<-s.done
	}

	var lat []time.Duration
	missing := 0
	first, end := sends[0].at, sends[0].at
	for _, s := range streams {
		for _, snt := range sends {
			at, ok := s.arrivals[snt.offset]
			if !ok {
				missing++
				continue
			}
			lat = append(lat, at.Sub(snt.at))
			if at.After(end) {
				end = at
			}
		}
	}
	res := result(nameFanOut, r.cfg.Subscribers, lat, end.Sub(first), "",
		fmt.Sprintf("GET /v1/events from %d clients while %d activity updates (progress, a %d-byte summary) are appended with JetStreamStore.Append "+
			"to the %d agents' journals, one every %s; each (record, client) timed from just before the Append to the arrival of the first event with the record's offset as id",
			r.cfg.Subscribers, r.cfg.Events, textBytes, len(r.st.agents), eventInterval))
	res.Count = len(sends) * len(streams)
	res.Figures = append(res.Figures, benchkit.Figure{Name: figureMissing, Value: float64(missing)})
	return res, nil
}

// activity is the record sse/fan-out appends: the progress an agent
// reported, as the policy records it for the live view. No subscriber of
// the log answers it, so the streams carry the events of exactly the
// records appended.
func activity(ref eventstore.Reference, id, summary string) *eventstore.ActivityUpdated {
	a := &eventstore.ActivityUpdated{Progress: &eventstore.Progress{Summary: summary}}
	a.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindActivity, id)
	return a
}

// allReached reports whether every stream has received an event with id
// last or later, or has ended.
func allReached(streams []*stream, last uint64) bool {
	for _, s := range streams {
		select {
		case <-s.done:
			continue
		default:
		}
		if s.seen.Load() < last {
			return false
		}
	}
	return true
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// stream is one open GET /v1/events. Its reader goroutine owns arrivals
// until done is closed.
type stream struct {
	// arrivals holds when the first event with each id arrived.
	arrivals map[uint64]time.Time
	// seen is the highest id received.
	seen atomic.Uint64
	// done is closed when the reader has stopped.
	done chan struct{}
}

// openStream opens an event stream; the API has attached it to the live
// events once the answer's header is in. The stream is read until ctx ends
// or the server ends it.
func (s *stack) openStream(ctx context.Context) (*stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open an event stream: %w", err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("open an event stream: status %d, content type %q, want 200 text/event-stream: %s",
			resp.StatusCode, ct, bytes.TrimSpace(data))
	}
	st := &stream{arrivals: map[uint64]time.Time{}, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		st.read(resp.Body)
	}()
	return st, nil
}

// read parses Server-Sent Events as they arrive: the id, event and data
// fields and comment lines, which is what the API writes. An event is
// dispatched at the blank line that ends it, if it has data. It returns
// when the body ends or fails, or at an overflow event.
func (st *stream) read(body io.Reader) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var (
		id              uint64
		hasID, hasData  bool
		name            []byte
		field, value    []byte
		isField, parsed bool
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			now := time.Now()
			if hasData {
				if bytes.Equal(name, overflowEvent) {
					return
				}
				if hasID {
					if _, ok := st.arrivals[id]; !ok {
						st.arrivals[id] = now
					}
					if id > st.seen.Load() {
						st.seen.Store(id)
					}
				}
			}
			id, hasID, hasData, name = 0, false, false, name[:0]
			continue
		}
		if line[0] == ':' {
			continue // a comment: the greeting or a heartbeat
		}
		field, value, isField = bytes.Cut(line, []byte(":"))
		if !isField {
			field, value = line, nil
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id, parsed = parseID(value)
			hasID = parsed
		case "event":
			name = append(name[:0], value...)
		case "data":
			hasData = true
		}
	}
}

func parseID(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}
