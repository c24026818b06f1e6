package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// An execution's records go through its hold: while the log answers, each
// is appended at once, by the caller; once an append fails because the
// log cannot answer for the moment (eventstore.ErrUnavailable, a full
// disk, a lost race, a deadline), the record is held, and every later
// record of that execution waits behind it, so the journal keeps the
// order in which the agent's output came. One goroutine per holding
// execution tries the head again, with backoff, until the log answers,
// each time with the same record, whose id the store set on the first
// attempt: an attempt that landed but whose ack was lost is answered as a
// duplicate, never appended twice. Other executions are not held up.
//
// Memory is bounded: of the agent's output (observations and activity
// updates) at most Config.HoldLimit records are held at once; more are
// counted in place, and once the log is back an output-lost diagnostic
// stands where they would have been, saying how many records of which
// kinds, which ids and when. The runtime's own records of the run (state
// changes, the interruption, the end) are few and always held.
//
// A supervised agent's stdout reader waits for the hold after each line
// before it counts the line handled: the supervisor's spool keeps what
// the agent prints meanwhile, so nothing of it is held in memory and
// nothing is lost however long the log is away, and a daemon that stops
// or dies meanwhile leaves the line to the next one. Close lets held
// records land until its deadline, then gives up on them: they are
// logged, the execution's journal gets nothing more from this runtime,
// and no count of handled lines passes a record that is not there.

// DefaultHoldLimit is Config.HoldLimit when it is not set.
const DefaultHoldLimit = 1024

// CodeOutputLost is the code of the diagnostic observation that says which
// records of an execution's output were counted instead of held while the
// log did not answer.
const CodeOutputLost = "output-lost"

// How long the head of a hold waits before it is tried again: from
// holdFirstRetry, doubling, to holdMaxRetry. The store itself waits up to
// its UnavailableWait within each attempt.
const (
	holdFirstRetry = 250 * time.Millisecond
	holdMaxRetry   = 5 * time.Second
)

var (
	// errHeld reports a record that waits in its execution's hold, to be
	// appended once the log answers.
	errHeld = errors.New("held until the log answers")
	// errGaveUp reports a record that was not appended: the runtime closed
	// while the log did not answer.
	errGaveUp = errors.New("not journaled: the log did not answer before the runtime closed")
)

// hold is one execution's records waiting for the log; its zero value
// holds nothing.
type hold struct {
	mu    sync.Mutex
	queue []*heldRecord
	// kept counts the queued records that count toward the limit.
	kept int
	// idle is non-nil while anything is held, and closed once nothing is.
	idle chan struct{}
	// since is when the record that began the hold first failed.
	since time.Time
	// gaveUp: Close's deadline passed with records held; nothing more of
	// this execution is appended.
	gaveUp bool
}

// heldRecord is a record waiting in a hold, or, with loss set, the count
// of the output records dropped at that place, which becomes a record when
// it reaches the head.
type heldRecord struct {
	rec  eventstore.Record
	loss *loss
	// output: an observation or activity update, which counts toward the
	// limit.
	output bool
	// outcome, when set, receives the record's fate: nil once appended,
	// the store's refusal, or errGaveUp.
	outcome chan error
}

// loss counts consecutive output records dropped from a full hold.
type loss struct {
	observations, activities int
	// first and last are the ids of the first and the last dropped: an
	// observation's observationId, an activity update's recordId.
	first, last string
	from, to    time.Time
}

func (l *loss) records() int { return l.observations + l.activities }

// heldBack reports whether err says the log could not take a record for
// the moment, so that the record is held and tried again, as opposed to a
// refusal (an invalid record, a closed store, a damaged journal) that no
// retry would change. A deadline counts: the record may or may not have
// landed, and the retry carries the same id.
func heldBack(err error) bool {
	return errors.Is(err, eventstore.ErrUnavailable) || eventstore.IsDiskFull(err) ||
		errors.Is(err, eventstore.ErrConflict) || errors.Is(err, context.DeadlineExceeded)
}

// isOutput reports whether r is of the agent's output, which the hold
// bounds.
func isOutput(r eventstore.Record) bool {
	switch r.(type) {
	case *eventstore.Observation, *eventstore.ActivityUpdated:
		return true
	}
	return false
}

// journal appends r to p's journal after whatever of p is held: nil once
// appended, errHeld when it waits (or, beyond the limit, is counted) for
// the log, errGaveUp after Close gave up on p, or the store's refusal.
func (rt *Runtime) journal(ctx context.Context, p *process, r eventstore.Record) error {
	_, err := rt.enter(ctx, p, r, false)
	return err
}

// journalAwait is journal for a record whose fate the caller needs before
// it goes on (the end of a run): held, it waits until the record is
// appended, refused, or given up on at Close's deadline.
func (rt *Runtime) journalAwait(ctx context.Context, p *process, r eventstore.Record) error {
	outcome, err := rt.enter(ctx, p, r, true)
	if !errors.Is(err, errHeld) {
		return err
	}
	return <-outcome
}

// enter appends r at once when nothing of p is held, and holds it when
// something is or when the append meets a log that cannot answer. With
// await, a held r gets a channel that receives its fate.
func (rt *Runtime) enter(ctx context.Context, p *process, r eventstore.Record, await bool) (<-chan error, error) {
	h := &p.held
	h.mu.Lock()
	switch {
	case h.gaveUp:
		h.mu.Unlock()
		return nil, errGaveUp
	case h.idle != nil:
		defer h.mu.Unlock()
		return h.add(r, rt.cfg.HoldLimit, rt.cfg.Now(), await), errHeld
	}
	h.mu.Unlock()
	_, err := rt.cfg.Store.Append(ctx, p.ref, r)
	if err == nil || !heldBack(err) {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gaveUp {
		return nil, errGaveUp
	}
	if h.idle == nil {
		h.idle, h.since = make(chan struct{}), rt.cfg.Now()
		rt.cfg.Logger.Warn("the log does not answer; holding the execution's records until it does",
			"execution", p.ref.AgentExecutionID, "err", err)
		rt.wg.Add(1)
		go rt.release(p)
	}
	return h.add(r, rt.cfg.HoldLimit, rt.cfg.Now(), await), errHeld
}

// add queues r, or counts it when it is output, limit output records are
// held already and no caller waits for it. The caller holds mu.
func (h *hold) add(r eventstore.Record, limit int, now time.Time, await bool) chan error {
	e := &heldRecord{rec: r, output: isOutput(r)}
	if e.output && !await && h.kept >= limit {
		h.count(r, now)
		return nil
	}
	if await {
		e.outcome = make(chan error, 1)
	}
	if e.output {
		h.kept++
	}
	h.queue = append(h.queue, e)
	return e.outcome
}

// count adds a dropped output record to the loss at the end of the queue,
// or starts one there. A loss at the head being appended is sealed.
func (h *hold) count(r eventstore.Record, now time.Time) {
	var l *loss
	if n := len(h.queue); n > 0 && h.queue[n-1].loss != nil && h.queue[n-1].rec == nil {
		l = h.queue[n-1].loss
	} else {
		l = &loss{from: now}
		h.queue = append(h.queue, &heldRecord{loss: l})
	}
	id := r.RecordBase().RecordID
	if o, ok := r.(*eventstore.Observation); ok {
		l.observations++
		id = o.ObservationID
	} else {
		l.activities++
	}
	if l.first == "" {
		l.first = id
	}
	l.last, l.to = id, now
}

// release appends what p holds, head first, trying the head again until
// the log takes it; it ends once nothing is held, or gives up when Close's
// deadline passes.
func (rt *Runtime) release(p *process) {
	defer rt.wg.Done()
	h := &p.held
	delay, appended := holdFirstRetry, 0
	for failed := true; ; {
		if failed {
			t := time.NewTimer(delay)
			select {
			case <-rt.holding.Done():
				t.Stop()
				rt.giveUp(p)
				return
			case <-t.C:
			}
			delay = min(2*delay, holdMaxRetry)
		}
		h.mu.Lock()
		if len(h.queue) == 0 {
			close(h.idle)
			h.idle = nil
			rt.cfg.Logger.Info("the log answers again; the held records are journaled",
				"execution", p.ref.AgentExecutionID, "records", appended, "held", rt.cfg.Now().Sub(h.since).Round(time.Millisecond))
			h.mu.Unlock()
			return
		}
		e := h.queue[0]
		if e.rec == nil {
			e.rec = rt.lossRecord(e.loss)
		}
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(rt.holding, 30*time.Second)
		_, err := rt.cfg.Store.Append(ctx, p.ref, e.rec)
		cancel()
		if failed = err != nil && (heldBack(err) || rt.holding.Err() != nil); failed {
			continue
		}
		if err != nil {
			rt.cfg.Logger.Error("record held "+string(e.rec.Kind()), "execution", p.ref.AgentExecutionID, "err", err)
		} else {
			appended++
		}
		h.mu.Lock()
		h.queue[0] = nil
		h.queue = h.queue[1:]
		if e.output {
			h.kept--
		}
		h.mu.Unlock()
		if e.outcome != nil {
			e.outcome <- err
		}
		delay = holdFirstRetry
	}
}

// giveUp drops what p holds when Close's deadline has passed: it is
// logged, not journaled, and nothing more of p is appended, so the
// journal says nothing that skips what was dropped.
func (rt *Runtime) giveUp(p *process) {
	h := &p.held
	h.mu.Lock()
	held, counted := 0, 0
	for _, e := range h.queue {
		if e.loss != nil {
			counted += e.loss.records()
		} else {
			held++
		}
		if e.outcome != nil {
			e.outcome <- errGaveUp
		}
	}
	h.queue, h.kept, h.gaveUp = nil, 0, true
	close(h.idle)
	h.idle = nil
	h.mu.Unlock()
	rt.cfg.Logger.Error("the log did not answer before the runtime closed; the execution's held records are not journaled",
		"execution", p.ref.AgentExecutionID, "held", held, "counted beyond the limit", counted)
}

// settled waits until nothing of p is held, and reports whether all of it
// was appended: false once Close gave up on p, or when stop closes first.
func (rt *Runtime) settled(p *process, stop <-chan struct{}) bool {
	h := &p.held
	h.mu.Lock()
	idle := h.idle
	h.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-stop:
			return false
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.gaveUp
}

// lossRecord is the diagnostic that stands in the journal for the output
// records l counted. Its id follows from the first of them, so a retry
// of it, or of the same loss after a restart, is one record.
func (rt *Runtime) lossRecord(l *loss) *eventstore.Observation {
	id := "output-lost-" + l.first
	if len(id) > eventstore.MaxIDLength {
		sum := sha256.Sum256([]byte(l.first))
		id = "output-lost-" + hex.EncodeToString(sum[:12])
	}
	which := l.first
	if l.records() > 1 {
		which += " to " + l.last
	}
	msg := fmt.Sprintf("%d records of the agent's output are not in the journal (%s): the log did not answer, and %d were held already",
		l.records(), which, rt.cfg.HoldLimit)
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedDaemon, Confidence: eventstore.ConfidenceDiagnostic,
		Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{Code: CodeOutputLost, Message: msg}),
		Payload: map[string]any{
			"records": l.records(), "observations": l.observations, "activityUpdates": l.activities,
			"first": l.first, "last": l.last,
			"from": l.from.UTC().Format(time.RFC3339Nano), "to": l.to.UTC().Format(time.RFC3339Nano),
			"holdLimit": rt.cfg.HoldLimit,
		}}
}

// awaitHeld lets the records held for the log land while ctx lasts, then
// gives up on what is still held, so that Close ends by its deadline.
func (rt *Runtime) awaitHeld(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		rt.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	rt.giveUpHeld()
}
