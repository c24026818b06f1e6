package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

// eventName is the event a record means, besides the data.changed every
// record gets; "" for none. It depends on the record alone, so live and
// replayed streams name the same events.
func eventName(r eventstore.Record) string {
	switch r := r.(type) {
	case *eventstore.StateChanged:
		switch r.Lifecycle {
		case eventstore.LifecycleRunning:
			return wire.EventStarted
		case eventstore.LifecycleCompleted:
			return wire.EventCompleted
		case eventstore.LifecycleFailed:
			return wire.EventFailed
		case eventstore.LifecycleCancelled:
			return wire.EventCancelled
		case eventstore.LifecycleTerminated:
			return wire.EventTerminated
		}
		return wire.EventUpdated
	case *eventstore.Observation:
		if r.Signal != nil && r.Signal.Type == eventstore.SignalMessage {
			return wire.EventMessage
		}
		return wire.EventUpdated
	case *eventstore.Decision, *eventstore.ActivityUpdated, *eventstore.OwnerEffect:
		return wire.EventUpdated
	}
	return ""
}

// event is one Server-Sent Event, encoded once for every subscriber.
type event struct {
	offset    uint64
	name      string
	execution string
	data      []byte
	// ephemeral events do not come from the log (terminal events): they
	// are never replayed and do not move a subscriber's position.
	ephemeral bool
}

func newEvent(name string, d wire.EventData) event {
	data, err := json.Marshal(d)
	if err != nil {
		// wire.EventData holds only types that always encode.
		panic(fmt.Sprintf("encode %s event: %v", name, err))
	}
	return event{offset: d.Offset, name: name, execution: d.ExecutionID, data: data}
}

func writeEvent(w io.Writer, ev event) error {
	_, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.offset, ev.name, ev.data)
	return err
}

// summaries reads projected summaries for events, once per execution: by
// owner, since the projection lists an owner's executions from an index.
type summaries struct {
	views  *projections.DB
	log    *slog.Logger
	byID   map[string]*projections.Summary
	owners map[string]bool
}

func (s *Server) newSummaries() *summaries {
	return &summaries{views: s.cfg.Views, log: s.log, byID: map[string]*projections.Summary{}, owners: map[string]bool{}}
}

func (c *summaries) get(b *eventstore.Base) *projections.Summary {
	if sum, ok := c.byID[b.AgentExecutionID]; ok {
		return sum
	}
	owner := string(b.Scope) + "\x00" + b.OwnerID
	if c.owners[owner] {
		return nil
	}
	c.owners[owner] = true
	list, err := c.views.List(projections.Filter{OwnerEntity: b.Scope, OwnerID: b.OwnerID})
	if err != nil {
		c.log.Warn("live events: read summaries", logKeyExecution, b.AgentExecutionID, logKeyErr, err)
	}
	for i := range list {
		c.byID[list[i].ID] = &list[i]
	}
	return c.byID[b.AgentExecutionID]
}

// derive returns the events of one log record, carrying state: the event
// it means, if any, then data.changed.
func derive(e eventstore.Entry, state *projections.Summary) []event {
	b := e.Record.RecordBase()
	d := wire.EventData{ExecutionID: b.AgentExecutionID, Offset: e.Offset, Sequence: b.Sequence, Record: e.Record.Kind(), State: state}
	if o, ok := e.Record.(*eventstore.Observation); ok && o.Signal != nil {
		d.Signal = o.Signal.Type
	}
	evs := make([]event, 0, 2)
	if name := eventName(e.Record); name != "" {
		named := d
		if o, ok := e.Record.(*eventstore.Observation); ok && o.Signal != nil {
			named.Message, _ = o.Signal.Payload.(*eventstore.MessageSignal)
		}
		evs = append(evs, newEvent(name, named))
	}
	return append(evs, newEvent(wire.EventDataChanged, d))
}

// broker fans events out to the streams in process. Each subscriber has a
// bounded queue; one whose queue is full is dropped (its stream ends with
// an overflow event) so that no subscriber ever blocks the others.
type broker struct {
	buffer int

	mu     sync.Mutex
	last   uint64 // the offset of the last record published
	subs   map[*subscriber]struct{}
	closed bool
}

// subscriber is one event stream.
type subscriber struct {
	execution string // "" for every execution
	ch        chan event
	overflow  chan struct{} // closed when the queue overflowed
	last      uint64        // guarded by broker.mu: the last offset queued or skipped
}

func newBroker(buffer int) *broker {
	return &broker{buffer: buffer, subs: map[*subscriber]struct{}{}}
}

func (b *broker) newSubscriber(execution string) *subscriber {
	return &subscriber{execution: execution, ch: make(chan event, b.buffer), overflow: make(chan struct{})}
}

func (sub *subscriber) wants(ev event) bool {
	return sub.execution == "" || sub.execution == ev.execution
}

// reset sets the position the publisher starts from. A stream attached
// behind it could miss records, so it is ended, to resume from the log.
func (b *broker) reset(last uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = last
	for sub := range b.subs {
		if sub.last < last {
			b.drop(sub)
		}
	}
}

// position returns the offset of the last record published.
func (b *broker) position() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// attach registers sub if it has every event up to the broker's position:
// after is the offset of the last record the subscriber has. Otherwise it
// returns the position, to be caught up to from the log first, and false.
func (b *broker) attach(sub *subscriber, after uint64) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		// Not registered: the stream is ending.
		return b.last, true
	case after < b.last:
		return b.last, false
	}
	sub.last = after
	b.subs[sub] = struct{}{}
	return after, true
}

func (b *broker) detach(sub *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, sub)
}

func (b *broker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	clear(b.subs)
}

// listening reports whether any stream is attached.
func (b *broker) listening() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// publish queues the events of the record at offset for every subscriber
// that wants them and has not had that offset yet. The events are made
// only when some stream is open: with none, deriving them (which reads
// the projection) would be work for nobody; the check and the queueing
// are one step, so a stream that attaches meanwhile misses nothing.
func (b *broker) publish(offset uint64, events func() []event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = max(b.last, offset)
	if len(b.subs) == 0 {
		return
	}
	evs := events()
	for sub := range b.subs {
		if offset <= sub.last {
			continue
		}
		sub.last = offset
		for _, ev := range evs {
			if sub.wants(ev) && !b.send(sub, ev) {
				break
			}
		}
	}
}

// publishTerminal queues a terminal event for the streams that want it,
// with the id of the last record published.
func (b *broker) publishTerminal(v wire.Terminal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := newEvent(wire.EventTerminal, wire.EventData{ExecutionID: v.AgentExecutionID, Offset: b.last, Terminal: &v})
	ev.ephemeral = true
	for sub := range b.subs {
		if sub.wants(ev) {
			b.send(sub, ev)
		}
	}
}

// send queues ev for sub, or drops sub when its queue is full. b.mu is held.
func (b *broker) send(sub *subscriber, ev event) bool {
	select {
	case sub.ch <- ev:
		return true
	default:
		b.drop(sub)
		return false
	}
}

func (b *broker) drop(sub *subscriber) {
	delete(b.subs, sub)
	close(sub.overflow)
}

// publish follows the log from the broker's position and publishes the
// events of every record once the projection has applied it, until ctx
// ends.
func (s *Server) publish(ctx context.Context) {
	for {
		err := s.follow(ctx, s.broker.position()+1)
		if ctx.Err() != nil {
			return
		}
		s.log.Error("live events: following the log stopped; following it again", logKeyOffset, s.broker.position()+1, logKeyErr, err)
		t := time.NewTimer(retryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// errFollowEnded reports a Follow that stopped yielding before ctx ended.
var errFollowEnded = errors.New("the log stopped yielding records")

func (s *Server) follow(ctx context.Context, from uint64) error {
	for batch, err := range s.cfg.Store.Follow(ctx, from, followBatch) {
		if err != nil {
			// An undecodable record is passed over, as the projection
			// passes over records it refuses; an error that ends the
			// follow ends this loop too.
			if ctx.Err() == nil {
				s.log.Warn("live events: skip a record", logKeyErr, err)
			}
			continue
		}
		if len(batch) == 0 {
			continue
		}
		// Events carry the state the projection holds after their
		// record, so they wait for it to apply the batch. With no stream
		// listening none is derived and nothing waits: a waiter would
		// cut short a busy projector's lingering (DB.WaitFor).
		last := batch[len(batch)-1].Offset
		waited := false
		if s.broker.listening() {
			if err := s.cfg.Views.WaitFor(ctx, last); err != nil {
				return fmt.Errorf("wait for the projection to apply offset %d: %w", last, err)
			}
			waited = true
		}
		var sums *summaries
		for _, e := range batch {
			s.broker.publish(e.Offset, func() []event {
				if sums == nil {
					if !waited {
						// A stream began listening since the check:
						// it waits here, holding the broker, rarely
						// and for one batch. An error is ctx's, and
						// ends the follow at the next record.
						_ = s.cfg.Views.WaitFor(ctx, last)
						waited = true
					}
					sums = s.newSummaries()
				}
				return derive(e, sums.get(e.Record.RecordBase()))
			})
		}
	}
	return errFollowEnded
}

// events: GET /v1/events?execution=ID, Server-Sent Events. With
// Last-Event-ID the stream first replays, from the log, the events of
// every record after that offset. The API token may come in access_token
// instead of the Authorization header (a browser's EventSource).
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "execution", accessTokenParam); err != nil {
		return err
	}
	filter := r.URL.Query().Get("execution")
	if r.URL.Query().Has("execution") {
		if _, err := eventstore.EscapeID(filter); err != nil {
			return invalidField("execution", nil, "not an execution id: %v", err)
		}
	}
	after, resume := uint64(0), false
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return invalidField("Last-Event-ID", nil, "%q is not an event id of this stream (want the id of the last event received: a log offset)", v)
		}
		after, resume = n, true
	}
	end, err := s.beginStream()
	if err != nil {
		return err
	}
	defer end()

	sub := s.broker.newSubscriber(filter)
	defer s.broker.detach(sub)
	folds := s.newFolds()
	attached := false
	if !resume {
		// Attach before answering, so that a client holding the response
		// has every event from here on.
		after = s.broker.position()
		_, attached = s.broker.attach(sub, after)
	}
	out := newStreamWriter(w, s.cfg.StreamWriteTimeout)
	defer func() {
		if errors.Is(out.err, os.ErrDeadlineExceeded) {
			s.log.Info("event stream: disconnected a client that took no data", logKeyClient, clip(r.RemoteAddr, maxFieldLen), logKeyLimit, s.cfg.StreamWriteTimeout)
		}
		out.done()
	}()
	startStream(w, "text/event-stream")
	if _, err := io.WriteString(out, ": agentjournal events\n\n"); err != nil {
		return nil
	}
	if out.Flush() != nil {
		return nil
	}

	// Catch up from the log until the broker's position, then attach: the
	// publisher cannot move on between the check and the attach.
	for !attached {
		select {
		case <-s.closing:
			return nil
		default:
		}
		upTo, ok := s.broker.attach(sub, after)
		if ok {
			break
		}
		var err error
		if after, err = s.replayEvents(r.Context(), out, folds, filter, after, upTo); err != nil {
			// A write error is the client's; only a read error is ours.
			if out.err == nil && r.Context().Err() == nil {
				s.log.Warn("event stream: replay from the log", logKeyOffset, after+1, logKeyErr, err)
			}
			return nil
		}
		if out.Flush() != nil {
			return nil
		}
	}
	s.stream(r.Context(), out, sub, after)
	return nil
}

// streamWriter writes an event stream with a write deadline StreamWriteTimeout
// ahead of every write and flush. A client that stops reading fills its
// connection's buffers, and a write then blocks until the client reads:
// the broker drops a subscriber whose queue is full, but cannot end a
// write in progress, so without the deadline the stream's goroutine, and
// Close waiting for it, would wait for good.
type streamWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	limit time.Duration
	err   error // the first write error: the stream is over
}

// beginStream counts a long-lived answer, which Close waits for and the
// metrics show as an open stream; end stops counting it. A closing server
// takes no new stream.
func (s *Server) beginStream() (end func(), err error) {
	if !s.track() {
		return nil, unavailable("the server is closing")
	}
	s.streams.Add(1)
	return func() {
		s.streams.Add(-1)
		s.wg.Done()
	}, nil
}

// startStream sends the status and headers of a stream of contentType:
// no cache keeps it, and a proxy passes it on as it is written.
func startStream(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

func newStreamWriter(w http.ResponseWriter, limit time.Duration) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w), limit: limit}
}

func (sw *streamWriter) Write(p []byte) (int, error) {
	if sw.err != nil {
		return 0, sw.err
	}
	sw.extend()
	n, err := sw.w.Write(p)
	sw.err = err
	return n, err
}

func (sw *streamWriter) Flush() error {
	if sw.err != nil {
		return sw.err
	}
	sw.extend()
	sw.err = sw.rc.Flush()
	return sw.err
}

// extend moves the write deadline limit ahead. A writer that has no
// deadline (not a network connection) cannot block on a client, and is
// left as it is.
func (sw *streamWriter) extend() {
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.limit))
}

// done bounds the writes net/http makes once the handler returns (the end
// of the chunked body): a client that stopped reading as the stream ended
// would hold them too. net/http clears the deadline before the next
// request on the connection.
func (sw *streamWriter) done() {
	if sw.err == nil {
		sw.extend()
	}
}

// stream writes the subscriber's events until the client goes or takes no
// data for StreamWriteTimeout, the server closes or the subscriber
// overflows.
func (s *Server) stream(ctx context.Context, w *streamWriter, sub *subscriber, sent uint64) {
	write := func(ev event) error {
		if !ev.ephemeral {
			sent = ev.offset
		}
		return writeEvent(w, ev)
	}
	// drain writes what is queued without waiting.
	drain := func() error {
		for {
			select {
			case ev := <-sub.ch:
				if err := write(ev); err != nil {
					return err
				}
			default:
				return nil
			}
		}
	}
	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case ev := <-sub.ch:
			if write(ev) != nil || drain() != nil || w.Flush() != nil {
				return
			}
		case <-sub.overflow:
			if drain() != nil {
				return
			}
			msg, _ := json.Marshal(wire.Overflow{
				LastEventID: sent,
				Message: fmt.Sprintf("this stream fell more than %d events behind and is closed; reconnect with Last-Event-ID: %d to resume where it stopped",
					cap(sub.ch), sent),
			})
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", wire.EventOverflow, msg)
			w.Flush()
			return
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || w.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}

// maxFolds bounds the executions a replay keeps folded states of; past it
// they are dropped, and an execution seen again is folded again from its
// journal.
const maxFolds = 1000

// folds gives replayed events the state as of their record. A client that
// reconnects gets, for each record it missed, the state that record left,
// as a client that never disconnected saw it, not the state of now.
type folds struct {
	store Store
	log   *slog.Logger
	// byID holds each execution's state folded up to the last record
	// given; nil when its journal cannot be read.
	byID map[string]*execution.State
}

func (s *Server) newFolds() *folds {
	return &folds{store: s.cfg.Store, log: s.log, byID: map[string]*execution.State{}}
}

// apply folds e into its execution's state, reading the journal before e
// first when the execution is new here, and returns the summary as of e.
func (f *folds) apply(ctx context.Context, e eventstore.Entry) *projections.Summary {
	b := e.Record.RecordBase()
	st, ok := f.byID[b.AgentExecutionID]
	if !ok {
		if len(f.byID) == maxFolds {
			clear(f.byID)
		}
		st = f.prefix(ctx, b)
		f.byID[b.AgentExecutionID] = st
	}
	if st == nil {
		return nil
	}
	if b.Sequence > st.Journal.LastSequence {
		// A record the fold refuses is passed over, as the projection
		// passes over it.
		_, _ = st.Apply(e.Record)
	}
	if st.ID == "" {
		return nil
	}
	sum := projections.SummaryOf(st)
	return &sum
}

// prefix folds the records of b's journal before b.
func (f *folds) prefix(ctx context.Context, b *eventstore.Base) *execution.State {
	st := &execution.State{}
	if b.Sequence <= 1 {
		return st
	}
	ref, err := f.store.Lookup(ctx, b.AgentExecutionID)
	if err == nil {
		for e, rerr := range f.store.ReadJournal(ctx, ref, 1) {
			if rerr != nil {
				if e.Offset != 0 {
					continue // undecodable: passed over
				}
				err = rerr
				break
			}
			if e.Record.RecordBase().Sequence >= b.Sequence {
				break
			}
			_, _ = st.Apply(e.Record)
		}
	}
	if err != nil {
		f.log.Warn("event stream: fold a journal for replayed states", logKeyExecution, b.AgentExecutionID, logKeyErr, err)
		return nil
	}
	return st
}

// replayEvents writes the events of the records after offset after, up to
// upTo, and returns upTo. Those records are applied by the projection
// already: the publisher has published them. A stream of one execution
// reads that execution's journal, folding the records it passes over;
// the others read the log.
func (s *Server) replayEvents(ctx context.Context, w io.Writer, folds *folds, filter string, after, upTo uint64) (uint64, error) {
	entries := s.cfg.Store.ReadLog(ctx, after+1)
	if filter != "" {
		ref, err := s.cfg.Store.Lookup(ctx, filter)
		if errors.Is(err, eventstore.ErrJournalNotFound) {
			// No record of it is in the log, so none up to upTo either.
			return upTo, nil
		}
		if err != nil {
			return after, err
		}
		entries = s.cfg.Store.ReadJournal(ctx, ref, 1)
		if _, ok := folds.byID[filter]; !ok {
			folds.byID[filter] = &execution.State{}
		}
	}
	for e, err := range entries {
		if e.Offset > upTo {
			break
		}
		if err != nil {
			if e.Offset != 0 {
				continue // undecodable: passed over, as the publisher does
			}
			return after, err
		}
		state := folds.apply(ctx, e)
		if e.Offset <= after {
			continue
		}
		for _, ev := range derive(e, state) {
			if err := writeEvent(w, ev); err != nil {
				return after, err
			}
		}
	}
	return upTo, nil
}
