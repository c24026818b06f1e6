package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Outcome is what the policy decided about one observation or message.
type Outcome struct {
	// Decision is the decision record; for a duplicate, the original one
	// rebuilt from state (it is already in the journal).
	Decision *eventstore.Decision
	// Records are the records that carry the decision out, in append order.
	Records []eventstore.Record
	// Duplicate is true when the input was decided before: nothing is to
	// be appended.
	Duplicate bool
}

// DecisionID is the decision id for an observation or message id. It is
// readable for ordinary ids and hashed when the id is too long to prefix.
func DecisionID(prefix, id string) string {
	if len(prefix)+len(id) <= eventstore.MaxIDLength {
		return prefix + id
	}
	sum := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(sum[:16])
}

// Decide applies the policy to an observation given the state replayed from
// every record before it. It is pure: the same inputs give the same outcome.
func Decide(st *execution.State, obs *eventstore.Observation) Outcome {
	if d, ok := st.Decisions[obs.ObservationID]; ok {
		return Outcome{Duplicate: true, Decision: &eventstore.Decision{
			Base:       eventstore.Base{Sequence: d.Sequence},
			DecisionID: d.DecisionID, ObservationID: obs.ObservationID, Action: d.Action, Reason: d.Reason,
		}}
	}
	o := &outcomeBuilder{st: st, decision: &eventstore.Decision{
		DecisionID: DecisionID("dec-", obs.ObservationID), ObservationID: obs.ObservationID,
	}}
	o.decide(obs)
	return o.outcome()
}

// DecideMessage applies the policy to an accepted message. A message that
// answers an input request always gets a decision; any other gets one only
// when it moves the attention (a message to a blocked agent, or to one
// whose claim waits for the owner); ok is false otherwise.
func DecideMessage(st *execution.State, m *eventstore.MessageAccepted) (out Outcome, ok bool) {
	req, _ := m.RequestID()
	if d, done := st.Decisions[m.MessageID]; done {
		return Outcome{Duplicate: true, Decision: &eventstore.Decision{
			Base:       eventstore.Base{Sequence: d.Sequence},
			DecisionID: d.DecisionID, MessageID: m.MessageID, Action: d.Action, Reason: d.Reason,
		}}, true
	}
	o := &outcomeBuilder{st: st, decision: &eventstore.Decision{DecisionID: DecisionID("dec-msg-", m.MessageID), MessageID: m.MessageID}}
	switch {
	case st.Lifecycle.Final():
		if req == "" {
			return Outcome{}, false
		}
		o.set(eventstore.ActionReject, fmt.Sprintf("answer to %s arrived after the execution was %s", req, st.Lifecycle))
	case req != "" && req == st.CurrentInputRequestID:
		mv := execution.NextAttention(st, execution.OnAnswer)
		o.set(eventstore.ActionUpdateState, "operator answered "+req)
		o.move(mv, &eventstore.StateChanged{Reason: "answered " + req})
	default:
		mv := execution.NextAttention(st, execution.OnMessage)
		var what []string
		if req != "" {
			what = append(what, fmt.Sprintf("answers %s, which is not the open input request", req))
		}
		switch {
		case mv.Moves:
			what = append(what, fmt.Sprintf("a %s message to the agent ends %s", m.Source, st.Attention))
			o.set(eventstore.ActionUpdateState, strings.Join(what, "; "))
			o.move(mv, &eventstore.StateChanged{Reason: fmt.Sprintf("%s message %s", m.Source, m.MessageID)})
		case req != "":
			o.set(eventstore.ActionRecordOnly, strings.Join(what, "; "))
		default:
			return Outcome{}, false
		}
	}
	return o.outcome(), true
}

type outcomeBuilder struct {
	st       *execution.State
	decision *eventstore.Decision
	records  []eventstore.Record
}

func (o *outcomeBuilder) set(a eventstore.DecisionAction, reason string) {
	o.decision.Action, o.decision.Reason = a, reason
}

// maxOutcomeRecords bounds the records one decision appends: an owner
// effect and a state change, or an activity update and a state change.
const maxOutcomeRecords = 2

// key derives the record id of the n-th follow-up record from the decision.
func (o *outcomeBuilder) key(kind eventstore.Kind) string {
	if len(o.records) >= maxOutcomeRecords {
		panic(fmt.Sprintf("policy: decision %s appends more than %d records", o.decision.DecisionID, maxOutcomeRecords))
	}
	return eventstore.RecordID(o.st.Journal.JournalID, kind, recordKey(o.decision.DecisionID, len(o.records)))
}

// recordKey is the natural key of the n-th record a decision appends.
func recordKey(decisionID string, n int) string {
	return fmt.Sprintf("%s#%d", decisionID, n)
}

func (o *outcomeBuilder) state(r *eventstore.StateChanged) {
	r.RecordID = o.key(eventstore.KindStateChanged)
	o.records = append(o.records, r)
}

// move adds the state change that carries out an attention move onto r,
// which holds the rest of the change (a request the move opens included);
// when it does not move, r alone if it changes anything.
func (o *outcomeBuilder) move(mv execution.AttentionMove, r *eventstore.StateChanged) {
	if !mv.Moves {
		if r.Activity != "" || r.Lifecycle != "" {
			o.state(r)
		}
		return
	}
	r.Attention = mv.To
	if mv.Request == execution.RequestClosed {
		r.CurrentInputRequestID = eventstore.ClearInputRequest()
	}
	if r.Reason == "" {
		r.Reason = mv.Reason
	}
	o.state(r)
}

func (o *outcomeBuilder) activity(r *eventstore.ActivityUpdated) {
	r.RecordID = o.key(eventstore.KindActivity)
	o.records = append(o.records, r)
}

func (o *outcomeBuilder) effect(obs *eventstore.Observation, effectType string, payload map[string]any) {
	o.records = append(o.records, &eventstore.OwnerEffect{
		EffectID: DecisionID("eff-", obs.ObservationID), ObservationID: obs.ObservationID,
		OwnerEntity: o.st.OwnerEntity, EffectType: effectType, Payload: payload,
	})
}

func (o *outcomeBuilder) outcome() Outcome {
	return Outcome{Decision: o.decision, Records: o.records}
}

func (o *outcomeBuilder) decide(obs *eventstore.Observation) {
	st := o.st
	if st.Lifecycle.Final() {
		o.set(eventstore.ActionReject, fmt.Sprintf("the execution is %s", st.Lifecycle))
		return
	}
	if obs.Signal == nil {
		o.set(eventstore.ActionRecordOnly, "evidence without a signal")
		return
	}
	sig := obs.Signal
	spec, _ := eventstore.LookupSignal(sig.Type)
	if spec.Surfaced && !slices.Contains(st.ProtocolDescriptor.Signals, sig.Type) {
		o.set(eventstore.ActionReject, fmt.Sprintf("signal %s is not declared by this execution's protocol descriptor", sig.Type))
		return
	}
	strong := execution.MovesState(obs.Confidence)
	switch p := sig.Payload.(type) {
	case *eventstore.DiagnosticSignal:
		o.set(eventstore.ActionRecordOnly, diagnosticReason(p))
	case *eventstore.UsageSignal:
		o.set(eventstore.ActionRecordOnly, "token usage is telemetry")
		o.activity(&eventstore.ActivityUpdated{Telemetry: o.telemetry(obs, p)})
	case *eventstore.PlanSignal:
		o.set(eventstore.ActionRecordOnly, fmt.Sprintf("the agent's plan: %d items", len(p.Items)))
		o.working(obs, &eventstore.StateChanged{})
	case *eventstore.ProgressSignal:
		o.set(eventstore.ActionRecordOnly, "progress is activity, not state")
		o.activity(&eventstore.ActivityUpdated{Progress: &eventstore.Progress{Summary: p.Summary, Detail: p.Detail, Units: p.Units}})
		o.working(obs, &eventstore.StateChanged{})
	case *eventstore.MessageSignal:
		o.set(eventstore.ActionEmitMessage, "agent message shown to the operator")
	case *eventstore.StatusSignal:
		act := eventstore.Activity(p.Phase)
		switch {
		case !strong:
			o.set(eventstore.ActionRecordOnly, fmt.Sprintf("%s confidence does not move state", obs.Confidence))
			return
		case slices.Contains(eventstore.Activities, act) && act != st.Activity:
			o.set(eventstore.ActionUpdateState, fmt.Sprintf("status phase %s sets activity", act))
			o.working(obs, &eventstore.StateChanged{Activity: act})
		default:
			o.set(eventstore.ActionRecordOnly, "status without a new activity phase")
			o.working(obs, &eventstore.StateChanged{})
		}
	case *eventstore.NeedsInputSignal:
		if !strong {
			o.set(eventstore.ActionRecordOnly, fmt.Sprintf("%s confidence does not open an input request", obs.Confidence))
			return
		}
		what := "agent waits for the operator: "
		if p.Kind == string(eventstore.InputPermission) {
			what = "agent asks permission"
			if p.Tool != nil {
				what += " to run " + p.Tool.Name
			}
			what += ": "
		}
		o.set(eventstore.ActionUpdateState, what+p.RequestID)
		o.move(execution.NextAttention(st, execution.OnNeedsInput), &eventstore.StateChanged{Lifecycle: o.running(),
			CurrentInputRequestID: eventstore.SetInputRequest(p.RequestID), Reason: "needs_input " + p.RequestID})
	case *eventstore.BlockedSignal:
		if !strong {
			o.set(eventstore.ActionRecordOnly, fmt.Sprintf("%s confidence does not block", obs.Confidence))
			return
		}
		o.moveOrStay(execution.OnBlocked, "blocked", "agent is blocked", &eventstore.StateChanged{Reason: p.Reason})
	case *eventstore.ReadyForVerificationSignal:
		if !strong {
			o.set(eventstore.ActionRecordOnly, fmt.Sprintf("%s confidence does not request verification", obs.Confidence))
			return
		}
		o.moveOrStay(execution.OnClaim, "ready for verification", "work is ready for verification",
			&eventstore.StateChanged{Reason: "ready_for_verification"})
	case *eventstore.CompletedClaimSignal:
		o.claim(obs, strong, "execution.completion-claimed", map[string]any{"summary": p.Summary, "evidence": p.Evidence})
	case *eventstore.FailedClaimSignal:
		o.claim(obs, strong, "execution.failure-claimed", map[string]any{"reason": p.Reason, "detail": p.Detail})
	default:
		o.set(eventstore.ActionRecordOnly, fmt.Sprintf("no rule for signal %s", sig.Type))
	}
}

// working carries out a signal that shows the agent at work: with r (an
// activity change, or nothing) it ends blocked, as the attention table says.
func (o *outcomeBuilder) working(obs *eventstore.Observation, r *eventstore.StateChanged) {
	if !execution.MovesState(obs.Confidence) {
		// Only a signal trusted to move state says the agent works again.
		o.move(execution.AttentionMove{}, r)
		return
	}
	mv := execution.NextAttention(o.st, execution.OnWorking)
	switch {
	case !mv.Moves:
	case o.decision.Action == eventstore.ActionRecordOnly:
		o.set(eventstore.ActionUpdateState, fmt.Sprintf("%s: %s", obs.Signal.Type, mv.Reason))
	default:
		o.decision.Reason += "; " + mv.Reason
	}
	o.move(mv, r)
}

// moveOrStay moves the attention on event and updates the state by r,
// saying why; when the attention stays, the signal (what) is recorded only.
func (o *outcomeBuilder) moveOrStay(on execution.AttentionEvent, what, why string, r *eventstore.StateChanged) {
	mv := execution.NextAttention(o.st, on)
	if !mv.Moves {
		o.set(eventstore.ActionRecordOnly, o.stays(what))
		return
	}
	o.set(eventstore.ActionUpdateState, why)
	o.move(mv, r)
}

// stays says why a signal leaves the attention as it is: an open input
// request waits for its answer whatever else the agent says.
func (o *outcomeBuilder) stays(what string) string {
	return fmt.Sprintf("%s while input request %s is open: the request waits for its answer", what, o.st.CurrentInputRequestID)
}

// claim routes a completion or failure claim to the owner, which decides
// whether the claim holds; the execution waits for that verdict.
func (o *outcomeBuilder) claim(obs *eventstore.Observation, strong bool, effectType string, payload map[string]any) {
	if !strong {
		o.set(eventstore.ActionRecordOnly, fmt.Sprintf("%s confidence does not make a claim", obs.Confidence))
		return
	}
	o.set(eventstore.ActionRouteOwnerEffect, string(obs.Signal.Type)+" routed to the owner")
	o.effect(obs, effectType, payload)
	on := execution.OnClaim
	if o.st.ProtocolDescriptor.SessionShape == eventstore.ShapeConversation && obs.Source == eventstore.ObservedProviderOutput {
		// The CLI's result ends a turn of a conversation, not the work:
		// the runtime records that the execution waits for the next
		// message, in order with the turn that message starts.
		on = execution.OnTurnResult
	}
	o.move(execution.NextAttention(o.st, on), &eventstore.StateChanged{Reason: string(obs.Signal.Type)})
}

// diagnosticReason names what was noticed, so a timeline of decisions says
// more than "diagnostic".
func diagnosticReason(d *eventstore.DiagnosticSignal) string {
	reason := "diagnostic"
	if d.Code != "" {
		reason += " " + d.Code
	}
	switch {
	case d.LineType != "":
		reason += ": " + d.Adapter + " line type " + d.LineType
		if d.AgentVersion != "" {
			reason += " (version " + d.AgentVersion + ")"
		}
	case d.Message != "":
		reason += ": " + d.Message
	}
	const max = 300
	if len(reason) > max {
		reason = reason[:max] + "…"
	}
	return strings.ToValidUTF8(reason, "")
}

// running returns the lifecycle to set with an input request: running when
// the execution is still starting, unchanged otherwise.
func (o *outcomeBuilder) running() eventstore.Lifecycle {
	if o.st.Lifecycle == eventstore.LifecycleStarting {
		return eventstore.LifecycleRunning
	}
	return ""
}

// telemetry gives the running totals with a usage signal counted: the
// totals replay folded from the usage observations, which include this one
// once it is in the state the policy decides on. Counting from the
// observations, not from the last telemetry record, keeps the totals exact
// whatever activity records came between, and however late the decision
// on the usage before this one was appended.
func (o *outcomeBuilder) telemetry(obs *eventstore.Observation, u *eventstore.UsageSignal) *eventstore.Telemetry {
	totals := o.st.Usage
	if _, folded := o.st.ProcessedObservations[obs.ObservationID]; !folded {
		totals = totals.Add(u)
	}
	return &eventstore.Telemetry{InputTokens: totals.InputTokens, OutputTokens: totals.OutputTokens, TotalTokens: totals.TotalTokens}
}
