package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
)

// Event names of GET /v1/events that a reader treats apart.
const (
	// EventDataChanged is the last event of every record.
	EventDataChanged = wire.EventDataChanged
	// EventTerminal is a terminal lane's change: not a journal record, and
	// its ID is not a position to resume from.
	EventTerminal = wire.EventTerminal
	// EventOverflow is the last event of a stream that fell too far
	// behind; its data names the lastEventId to resume from.
	EventOverflow = wire.EventOverflow
)

// ErrStreamEnded reports an event stream the daemon ended: it never ends
// one on its own while it runs (it is stopping, or a proxy cut it).
var ErrStreamEnded = errors.New("the daemon ended the event stream")

// maxEventLine bounds one line of the event stream.
const maxEventLine = 16 << 20

// Event is one Server-Sent Event of GET /v1/events, or a comment line.
type Event struct {
	// ID is the log offset of the record the event describes.
	ID string
	// Name is execution.started, execution.updated, execution.message,
	// …, data.changed, terminal or overflow (docs/api.md).
	Name string
	// Data is the event's JSON: an EventData but for overflow.
	Data []byte
	// Comment is true for a comment line, whose text is in Text: the
	// stream's greeting, and a heartbeat while it is idle.
	Comment bool
	Text    string
}

// Offset returns the event's ID as a log offset.
func (e Event) Offset() (uint64, error) { return strconv.ParseUint(e.ID, 10, 64) }

// EventsOptions choose the events of a stream.
type EventsOptions struct {
	// Execution keeps the events of one execution; all when empty.
	Execution string
	// After resumes after a log offset (Last-Event-ID): the stream first
	// replays the events of the records after it, then goes on live. When
	// Resume is false the stream starts now.
	After  uint64
	Resume bool
}

// Events opens one connection of GET /v1/events. The stream ends with
// ErrStreamEnded when the daemon stops, and is not reopened: Follow does
// that.
func (c *Client) Events(ctx context.Context, opts EventsOptions) (*EventStream, error) {
	q := url.Values{}
	if opts.Execution != "" {
		q.Set("execution", opts.Execution)
	}
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	if opts.Resume {
		h.Set("Last-Event-ID", strconv.FormatUint(opts.After, 10))
	}
	resp, err := c.Request(ctx, http.MethodGet, "/v1/events", q, nil, h)
	if err != nil {
		return nil, err
	}
	return NewEventStream(resp.Body), nil
}

// EventStream reads Server-Sent Events.
type EventStream struct {
	r  io.Reader
	sc *bufio.Scanner
	// ev and data are the event being read: a comment line may come
	// between its fields.
	ev   Event
	data [][]byte
}

// NewEventStream reads Server-Sent Events from r; Close closes r when it
// is an io.Closer.
func NewEventStream(r io.Reader) *EventStream {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	return &EventStream{r: r, sc: sc}
}

// Next returns the next event or comment line. At the end of the stream it
// returns ErrStreamEnded, or the error that cut it.
func (s *EventStream) Next() (Event, error) {
	for s.sc.Scan() {
		line := strings.TrimSuffix(s.sc.Text(), "\r")
		if line == "" {
			if s.data == nil {
				continue // an event without data is not dispatched
			}
			ev := s.ev
			ev.Data = bytes.Join(s.data, []byte("\n"))
			// The id carries over to the events that name none.
			s.ev, s.data = Event{ID: ev.ID}, nil
			return ev, nil
		}
		if text, ok := strings.CutPrefix(line, ":"); ok {
			return Event{Comment: true, Text: strings.TrimPrefix(text, " ")}, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			s.ev.ID = value
		case "event":
			s.ev.Name = value
		case "data":
			s.data = append(s.data, []byte(value))
		}
	}
	if err := s.sc.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, ErrStreamEnded
}

// Close closes the stream.
func (s *EventStream) Close() error {
	if c, ok := s.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Follow backoff bounds.
const (
	followBackoffFirst = 250 * time.Millisecond
	followBackoffMax   = 5 * time.Second
)

// Follow yields the events of GET /v1/events (comments left out) until ctx
// ends or the caller stops. When a connection drops, ends, or overflows
// because the caller fell behind, Follow yields the error and reconnects
// with Last-Event-ID after the last record's event it yielded, backing off
// up to 5 s between attempts: no event is lost or yielded twice. An *Error
// answer (a bad filter, a wrong token) is yielded and ends the sequence.
// The end of ctx ends it without an error.
func (c *Client) Follow(ctx context.Context, opts EventsOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		backoff := followBackoffFirst
		for ctx.Err() == nil {
			progressed, err := c.followOnce(ctx, &opts, yield)
			if err == nil || ctx.Err() != nil {
				return
			}
			if !yield(Event{}, err) {
				return
			}
			var apiErr *Error
			if errors.As(err, &apiErr) {
				return
			}
			if progressed {
				backoff = followBackoffFirst
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, followBackoffMax)
		}
	}
}

// OverflowError reports a stream the daemon closed because its reader
// fell behind; Follow resumes after LastEventID.
type OverflowError wire.Overflow

func (e *OverflowError) Error() string { return "event stream overflow: " + e.Message }

// followOnce reads one connection. It returns nil when the caller stopped,
// and why the connection ended otherwise; progressed reports events read.
func (c *Client) followOnce(ctx context.Context, opts *EventsOptions, yield func(Event, error) bool) (progressed bool, err error) {
	s, err := c.Events(ctx, *opts)
	if err != nil {
		return false, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			return progressed, err
		}
		if ev.Comment {
			continue
		}
		if ev.Name == EventOverflow {
			var o OverflowError
			if err := json.Unmarshal(ev.Data, &o); err != nil {
				return progressed, fmt.Errorf("event stream overflow: %s", ev.Data)
			}
			return progressed, &o
		}
		if ev.Name != EventTerminal {
			if off, err := ev.Offset(); err == nil {
				opts.After, opts.Resume = off, true
			}
		}
		progressed = true
		if !yield(ev, nil) {
			return false, nil
		}
	}
}
