package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

// live is the live overlay of an execution: the facts of this daemon's
// runtime that the journal does not hold.
func (s *Server) live(id string) wire.Live {
	v := wire.Live{Running: s.cfg.Runtime.IsRunning(id)}
	v.TerminalID, _ = s.cfg.Runtime.TerminalID(id)
	return v
}

// lookup finds an execution's journal; an unknown id is a 404.
func (s *Server) lookup(ctx context.Context, id string) (eventstore.Reference, error) {
	ref, err := s.cfg.Store.Lookup(ctx, id)
	if errors.Is(err, eventstore.ErrJournalNotFound) || errors.Is(err, eventstore.ErrInvalidID) {
		return ref, notFound("no execution %q", id)
	}
	return ref, err
}

// catchUp waits, up to DecisionWait, until the projection has applied
// every record the log holds now.
func (s *Server) catchUp(ctx context.Context) error {
	// Asking the log for its end would wait out the outage.
	if err := s.logDown(); err != nil {
		return s.unreachable(err)
	}
	last, err := s.cfg.Store.LastOffset(ctx)
	if err != nil {
		return fmt.Errorf("read the end of the log: %w", err)
	}
	return s.projectedThrough(ctx, last)
}

// projectedThrough waits, up to DecisionWait, until the projection has
// applied the record at offset and every one before it. While the log is
// unreachable the projection cannot move, so it does not wait: it answers
// 503 at once, and a wait under way when the log goes away ends then.
func (s *Server) projectedThrough(ctx context.Context, offset uint64) error {
	if err := s.logDown(); err != nil {
		return s.unreachable(err)
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.DecisionWait)
	defer cancel()
	if s.cfg.LogReachable != nil {
		var down context.CancelCauseFunc
		wctx, down = context.WithCancelCause(wctx)
		watched := make(chan struct{})
		defer func() { down(nil); <-watched }()
		go func() {
			defer close(watched)
			s.watchLog(wctx, down)
		}()
	}
	err := s.cfg.Views.WaitFor(wctx, offset)
	if err == nil {
		return nil
	}
	if cause := context.Cause(wctx); errors.Is(cause, errLogDown) && ctx.Err() == nil {
		return s.unreachable(cause)
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		cp, _ := s.cfg.Views.Checkpoint()
		return timeout("the read model has applied the log up to offset %d of %d and did not catch up within %s; is the projector running?",
			cp, offset, s.cfg.DecisionWait)
	}
	return err
}

// errLogDown ends a wait for the projection when the log becomes
// unreachable (watchLog).
var errLogDown = errors.New("the log became unreachable")

// logCheckEvery is how often a wait for the projection asks whether the
// log is still reachable: a read waits at most this much longer once it
// is not.
const logCheckEvery = 100 * time.Millisecond

// logDown says why the log cannot be reached now (Config.LogReachable),
// nil when it can, or when the daemon cannot tell (an embedded log).
func (s *Server) logDown() error {
	if s.cfg.LogReachable == nil {
		return nil
	}
	return s.cfg.LogReachable()
}

// watchLog cancels a wait for the projection with errLogDown once the log
// is unreachable, and returns when ctx ends.
func (s *Server) watchLog(ctx context.Context, down context.CancelCauseFunc) {
	t := time.NewTicker(logCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.logDown(); err != nil {
			down(fmt.Errorf("%w: %w", errLogDown, err))
			return
		}
	}
}

// unreachable is the answer of a read that needs the projection to catch
// up while the log is unreachable.
func (s *Server) unreachable(err error) error {
	cp, _ := s.cfg.Views.Checkpoint()
	return unavailable("the read model holds the log up to offset %d and cannot catch up while the log is unreachable (%v); "+
		"this daemon reconnects by itself, retry then", cp, err)
}

// tell is settle's cheaper form for an answer that tells of the records up
// to through: it answers at once and every later read of the read models
// waits for the projection to reach through instead (readable), so a
// client still reads what it was told of, and a busy projection is not
// asked for a commit per answer. A through of 0 (not known) settles on the
// log's end.
func (s *Server) tell(ctx context.Context, through uint64) {
	if through == 0 {
		s.settle(ctx)
		return
	}
	for {
		told := s.told.Load()
		if through <= told || s.told.CompareAndSwap(told, through) {
			return
		}
	}
}

// readable waits, up to DecisionWait, until the projection has applied
// every record an answer told of (tell), and then reads anyway, as settle
// does: a projection that stays behind shows in /healthz. Once a wait has
// run out, reads do not wait again until the projection moves: a stopped
// projector would otherwise hold every read for DecisionWait. While the
// log is unreachable (a daemon joined to another's NATS that is down) the
// projection cannot move and reads do not wait at all: they are served
// from the read models as they are, and /healthz answers 503 saying the
// log is unreachable.
func (s *Server) readable(ctx context.Context) {
	told := s.told.Load()
	if told == 0 {
		return
	}
	cp, err := s.cfg.Views.Checkpoint()
	if err != nil || cp >= told || s.stalledAt.Load() == cp+1 {
		return
	}
	// An error with the client still waiting is the wait running out, or
	// the log going away, which is no stall of the projection.
	if err := s.projectedThrough(ctx, told); err != nil && ctx.Err() == nil && s.logDown() == nil && s.stalledAt.Swap(cp+1) != cp+1 {
		s.log.Warn("the read models are behind what answers told of; reads are served as they are until the projection moves",
			logKeyOffset, cp, logKeyTold, told, logKeyErr, err)
	}
}

// observationDurable waits for an observation appended without waiting
// for the disk (Runtime.RecordObservationPending) to be on it, for an
// answer that does not carry its decision. The wait is the daemon's own:
// a client that stops waiting does not cut it short.
func (s *Server) observationDurable(ctx context.Context, observationID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mutationTimeout)
	defer cancel()
	if err := s.cfg.Runtime.WaitDurable(ctx); err != nil {
		return fmt.Errorf("observation %s may not be recorded: %w", observationID, err)
	}
	return nil
}

// settle lets the projection catch up with a write before its answer, so
// that a client reads what it has just written: it waits up to
// DecisionWait and then answers anyway, since the write itself succeeded
// (/healthz shows a projection that stays behind).
func (s *Server) settle(ctx context.Context) {
	_ = s.catchUp(ctx)
}

// projected runs read against the projection. When the projection does not
// hold the execution but its journal exists (the projection is behind), it
// waits for the projection to catch up and reads again, so a client reads
// what it has just written.
func (s *Server) projected(ctx context.Context, id string, read func() error) error {
	err := read()
	if !errors.Is(err, projections.ErrNotFound) {
		return err
	}
	if _, err := s.lookup(ctx, id); err != nil {
		return err
	}
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	err = read()
	if errors.Is(err, projections.ErrNotFound) {
		return notFound("execution %q has a journal that the read model does not hold (see the daemon log for skipped records)", id)
	}
	return err
}

// view reads an execution from the projection with its live overlay.
func (s *Server) view(ctx context.Context, id string) (wire.Execution, error) {
	var st *execution.State
	err := s.projected(ctx, id, func() (err error) {
		st, err = s.cfg.Views.Execution(id)
		return err
	})
	if err != nil {
		return wire.Execution{}, err
	}
	return wire.Execution{State: *st, Live: s.live(id)}, nil
}

// replayState folds an execution's journal as it is now: the state the
// projection holds once it has caught up.
func (s *Server) replayState(ctx context.Context, ref eventstore.Reference) (*execution.State, error) {
	// Through the fork links, as the projection folds a fork's prefix.
	st, err := execution.ReplayLineage(ctx, s.cfg.Store, ref)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", ref, err)
	}
	st.Timeline = []execution.TimelineItem{}
	return st, nil
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// enumParam reads an optional query parameter that must be one of accepted.
func enumParam[T ~string](r *http.Request, name string, accepted []T) (T, error) {
	v := T(r.URL.Query().Get(name))
	if v != "" && !slices.Contains(accepted, v) {
		return "", invalidField(name, strs(accepted), "%q is not accepted", string(v))
	}
	return v, nil
}

// listExecutions: GET /v1/executions?owner=Entity[/id]&lifecycle=&attention=&offset=&limit=
func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "owner", "lifecycle", "attention", "offset", "limit"); err != nil {
		return err
	}
	var f projections.Filter
	if owner := r.URL.Query().Get("owner"); owner != "" {
		entity, id, _ := strings.Cut(owner, "/")
		if !slices.Contains(eventstore.OwnerEntities, eventstore.OwnerEntity(entity)) {
			return invalidField("owner", strs(eventstore.OwnerEntities), "owner entity %q is not accepted (write Entity or Entity/id)", entity)
		}
		f.OwnerEntity, f.OwnerID = eventstore.OwnerEntity(entity), id
	}
	var err error
	if f.Lifecycle, err = enumParam(r, "lifecycle", eventstore.Lifecycles); err != nil {
		return err
	}
	if f.Attention, err = enumParam(r, "attention", eventstore.Attentions); err != nil {
		return err
	}
	offset, err := uintParam(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	// The whole filtered list is read (the read model sorts all of it for
	// a limit anyway) so that its length can be told: a reader that pages
	// needs the total to know what it has not seen.
	list, err := s.cfg.Views.List(f)
	if err != nil {
		return err
	}
	w.Header().Set(totalCountHeader, strconv.Itoa(len(list)))
	list = list[min(int(offset), len(list)):]
	if limit > 0 && uint64(len(list)) > limit {
		list = list[:limit]
	}
	writeJSON(w, http.StatusOK, wire.Executions{Executions: orEmpty(list)})
	return nil
}

// totalCountHeader tells, on GET /v1/executions, how many executions match
// the filter before offset and limit.
const totalCountHeader = "X-Total-Count"

// readExecution: GET /v1/executions/{id}
func (s *Server) readExecution(w http.ResponseWriter, r *http.Request) error {
	return readByID(w, r, s.view)
}

// stop: POST /v1/executions/{id}/stop. It answers once the process has
// ended and the projection holds its final lifecycle.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeRequest(w, r, &struct{}{}, true); err != nil {
		return err
	}
	id := r.PathValue("id")
	// A stop that has begun runs its grace period out even if the client
	// goes away: cancelling it would kill the agent at once.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	err := s.cfg.Runtime.Stop(ctx, id)
	if errors.Is(err, runtime.ErrNotRunning) {
		if _, err := s.lookup(ctx, id); err != nil {
			return err
		}
		state := ""
		if st, err := s.cfg.Views.Execution(id); err == nil {
			state = fmt.Sprintf(" (it is %s)", st.Lifecycle)
		}
		return conflict("execution %s has no live process in this daemon%s; only an execution running here can be stopped", id, state)
	}
	if err != nil {
		return err
	}
	if err := s.catchUp(r.Context()); err != nil {
		return err
	}
	v, err := s.view(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// sendMessage: POST /v1/executions/{id}/messages
func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) error {
	var in wire.Message
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.checkAnswer(r.Context(), id, in); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	ack, err := s.cfg.Runtime.SendMessage(ctx, id, runtime.SendMessageInput{
		MessageID: in.MessageID, Type: in.Type, Source: in.Source, Payload: in.Payload,
	})
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return notFound("no execution %q", id)
	case err != nil:
		return err
	}
	s.settle(r.Context())
	writeJSON(w, http.StatusOK, wire.MessageAck(ack))
	return nil
}

// checkAnswer refuses an answer to an input request that is not the open
// one: nothing would take it, and a client told "delivered" would wait for
// an agent that never reads it. A retried answer (its id seen before) gets
// its first acknowledgement instead, whatever is open now.
func (s *Server) checkAnswer(ctx context.Context, id string, in wire.Message) error {
	if in.Type != "answer" {
		return nil
	}
	req, _ := (&eventstore.MessageAccepted{Payload: in.Payload}).RequestID()
	if req == "" {
		return nil // the runtime says what an answer needs
	}
	if in.MessageID != "" {
		if _, seen, err := s.cfg.Views.ProcessedID(id, false, in.MessageID); err != nil || seen {
			return err
		}
	}
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	st, err := s.cfg.Views.Execution(id)
	switch {
	case errors.Is(err, projections.ErrNotFound):
		return nil // the runtime answers an unknown execution
	case err != nil:
		return err
	case st.Lifecycle.Final():
		return conflict("request %s is not open: execution %s is %s, and takes no answers", req, id, st.Lifecycle)
	case st.CurrentInputRequestID == "":
		return conflict("request %s is not open: execution %s has no open input request", req, id)
	case st.CurrentInputRequestID != req:
		return conflict("request %s is not open: the open input request of execution %s is %s", req, id, st.CurrentInputRequestID)
	}
	return nil
}

// observationInput is the body of recordObservation as it is decoded: the
// wire form, with the signal and the payload decoded strictly by the
// record's own types (a field of them that is not accepted is an error
// that names it) instead of carried raw.
type observationInput struct {
	wire.Observation
	Signal  *eventstore.Signal `json:"signal,omitempty"`
	Payload map[string]any     `json:"payload,omitempty"`
}

// agentSources are the observation sources an agent reports through
// itself; the others (the daemon's own parsers and watchers) are not its
// to claim.
var agentSources = []eventstore.ObservationSource{eventstore.ObservedMCP, eventstore.ObservedSDK}

// validateObservation checks the caller's fields with the journal's own
// rules. The record's base fields are the journal's to fill, so they are
// given placeholder values that pass.
func validateObservation(o *eventstore.Observation) error {
	probe := *o
	probe.Base = eventstore.Base{
		RecordID: "probe", Sequence: 2, Type: eventstore.KindObservation, SchemaVersion: eventstore.SchemaVersion,
		JournalID: eventstore.JournalIDFor(eventstore.OwnerSystem, "probe", "probe"), AgentExecutionID: "probe",
		OwnerID: "probe", Scope: eventstore.OwnerSystem, OccurredAt: time.Unix(1, 0),
	}
	return eventstore.Validate(&probe)
}

// recordObservation: POST /v1/executions/{id}/observations. It records the
// observation and answers with the decision the policy subscriber appends
// for it, waiting up to DecisionWait, and longer for a failover of the
// policy (awaitDecision).
func (s *Server) recordObservation(w http.ResponseWriter, r *http.Request) error {
	var in observationInput
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	obs := &eventstore.Observation{ObservationID: in.ObservationID, Source: in.Source, Confidence: in.Confidence,
		Signal: in.Signal, RawText: in.RawText, Payload: in.Payload}
	if err := validateObservation(obs); err != nil {
		return err
	}
	if _, scoped := scopedExecution(r.Context()); scoped && !slices.Contains(agentSources, obs.Source) {
		return invalidField("source", strs(agentSources), "%q is not a source an agent speaks through: a token scoped to an execution is the agent's own", obs.Source)
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	pushed, release := s.decisions.wait(id, obs.ObservationID)
	defer release()
	// The observation is durable once its decision is (awaitDecision),
	// so its own append does not wait for the disk.
	e, dup, err := s.cfg.Runtime.RecordObservationPending(ctx, id, obs)
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return notFound("no execution %q", id)
	case err != nil:
		return err
	}
	b := e.Record.RecordBase()
	ref := eventstore.Reference{JournalID: b.JournalID, OwnerEntity: b.Scope, OwnerID: b.OwnerID, AgentExecutionID: b.AgentExecutionID}
	decided, err := s.awaitDecision(r.Context(), ref, obs.ObservationID, b.Sequence, pushed, dup)
	if late := (*decisionLate)(nil); errors.As(err, &late) {
		if err := s.observationDurable(r.Context(), obs.ObservationID); err != nil {
			return err
		}
		return timeout("observation %s is recorded at sequence %d, but %v; "+
			"sending it again with the same observationId appends nothing and answers with the decision once there is one", obs.ObservationID, b.Sequence, late)
	}
	if err != nil {
		return err
	}
	s.tell(r.Context(), decided.Through)
	d := decided.Decision
	writeJSON(w, http.StatusOK, wire.ObservationAck{
		ObservationID: obs.ObservationID, Sequence: b.Sequence, Duplicate: dup,
		Decision: wire.Decision{DecisionID: d.DecisionID, Action: d.Action, Reason: d.Reason, Sequence: d.Sequence},
	})
	return nil
}

// Reads of awaitDecision, for a decision no subscriber in this process
// hands over (another daemon decided it), then less and less often: the
// first soon after a decision's usual time, or, where a subscriber here
// hands decisions over (Config.Decisions), only after a few times its
// usual wait under load, since a read may find a decision whose state
// changes are not appended yet.
const (
	decisionPollFirst       = 20 * time.Millisecond
	decisionPollFirstPushed = 500 * time.Millisecond
	decisionPollMax         = 2 * time.Second
)

// policyFailoverWait is how much longer than DecisionWait a request waits
// for the decision on an observation it recorded when a policy subscriber
// runs in this process (Config.Decisions): one that runs here takes the
// deciding over when the subscriber deciding now is lost, so a decision
// will come, and one that is late is most likely waiting out a failover.
// The longest seen is a cluster electing the policy consumer's new leader
// (nats-server's election timeout is 4 to 9 s) and then the lost
// subscriber's pin (policy.DefaultPinnedTTL, 5 s) or its partitions' locks
// (5 s) lapsing: decisions came 14 to 16 s after their observations, past
// the 10 s DecisionWait.
const policyFailoverWait = 15 * time.Second

// awaitDecision waits for the durable decision on the observation at
// sequence from: up to DecisionWait, and then, when a policy subscriber
// runs in this process, up to policyFailoverWait more, saying so in the
// daemon's log. The error of a wait that ran out says how long it waited
// (*decisionLate).
func (s *Server) awaitDecision(ctx context.Context, ref eventstore.Reference, observationID string, from uint64, pushed <-chan eventstore.Decided, readFirst bool) (eventstore.Decided, error) {
	d, err := s.awaitDecisionFor(ctx, s.cfg.DecisionWait, ref, observationID, from, pushed, readFirst)
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return d, err
	}
	if s.cfg.Decisions == nil {
		return d, &decisionLate{waited: s.cfg.DecisionWait}
	}
	s.log.Info("no decision on the observation within the decision wait; waiting for the policy to fail over",
		logKeyExecution, ref.AgentExecutionID, logKeyObservation, observationID, logKeyWait, policyFailoverWait)
	d, err = s.awaitDecisionFor(ctx, policyFailoverWait, ref, observationID, from, pushed, true)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return d, &decisionLate{waited: s.cfg.DecisionWait + policyFailoverWait, failover: true}
	}
	return d, err
}

// Log attribute keys of awaitDecision.
const (
	logKeyObservation = "observation"
	logKeyWait        = "wait"
)

// decisionLate is awaitDecision's error when no decision came in its wait.
// It is context.DeadlineExceeded.
type decisionLate struct {
	waited time.Duration
	// failover is set when the wait included policyFailoverWait: a policy
	// subscriber runs here, so the decision is late, not missing.
	failover bool
}

func (e *decisionLate) Error() string {
	if e.failover {
		return fmt.Sprintf("the policy did not decide on it within %s, which allows for the policy to fail over; "+
			"a policy subscriber runs in this daemon and takes the deciding over, so the decision is late, not missing", e.waited)
	}
	return fmt.Sprintf("the policy did not decide on it within %s (is the policy subscriber running?)", e.waited)
}

func (e *decisionLate) Is(target error) bool { return target == context.DeadlineExceeded }

// awaitDecisionFor waits, up to wait, for the durable decision on the
// observation at sequence from. A policy subscriber in this process hands
// it over on pushed once its state changes are appended too (Decisions);
// pushed is registered before the observation was appended, so only an
// observation recorded before (a duplicate) may have its decision in the
// journal already, and the journal is read at once only then. Otherwise
// it is read now and then, for a decision another process made; each read
// starts after the last record seen.
func (s *Server) awaitDecisionFor(ctx context.Context, wait time.Duration, ref eventstore.Reference, observationID string, from uint64, pushed <-chan eventstore.Decided, readFirst bool) (eventstore.Decided, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	delay := decisionPollFirst
	if s.cfg.Decisions != nil {
		delay = decisionPollFirstPushed
	}
	if !readFirst {
		select {
		case <-ctx.Done():
			return eventstore.Decided{}, ctx.Err()
		case d := <-pushed:
			return d, nil
		case <-time.After(delay):
		}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		for e, err := range s.cfg.Store.ReadJournal(ctx, ref, from) {
			if err != nil {
				if ctx.Err() != nil {
					return eventstore.Decided{}, ctx.Err()
				}
				return eventstore.Decided{}, fmt.Errorf("await the decision on %s: %w", observationID, err)
			}
			if d, ok := e.Record.(*eventstore.Decision); ok && d.ObservationID == observationID {
				// A decision read from the log may be stored and not yet
				// on disk; one handed over is durable.
				return eventstore.Decided{Decision: d}, s.cfg.Runtime.WaitDurable(ctx)
			}
			from = e.Record.RecordBase().Sequence + 1
		}
		select {
		case <-ctx.Done():
			return eventstore.Decided{}, ctx.Err()
		case d := <-pushed:
			return d, nil
		case <-t.C:
		}
		delay = min(2*delay, decisionPollMax)
		t.Reset(delay)
	}
}
