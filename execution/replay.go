package execution

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

var (
	// ErrNoHeader reports a journal whose first record is not its header.
	ErrNoHeader = errors.New("execution: journal does not start with its header")
	// ErrForeignRecord reports a record of another journal or execution.
	ErrForeignRecord = errors.New("execution: record belongs to another journal")
	// ErrOutOfOrder reports a record whose sequence does not follow the last.
	ErrOutOfOrder = errors.New("execution: record out of order")
)

// Replay folds a journal's records, header first, into the execution's
// state. The same records always give the same state.
func Replay(records []eventstore.Record) (*State, error) {
	s := &State{}
	for _, r := range records {
		items, err := s.Apply(r)
		if err != nil {
			return s, err
		}
		s.Timeline = PlaceItems(s.Timeline, items...)
	}
	if s.ID == "" {
		return s, ErrNoHeader
	}
	return s, nil
}

// Apply folds one record into the state and returns the timeline items it
// produces; the caller decides where they are kept (Replay places them in
// Timeline, projections page them from their own bucket). An item may
// replace one given before, with the same ID and Sequence: a tool call's
// end completes the item of its start (PlaceItems). Activity records only
// touch Latest and the tool call items, so dropping any of them leaves the
// semantic state as it was.
func (s *State) Apply(r eventstore.Record) ([]TimelineItem, error) {
	b := r.RecordBase()
	if h, ok := r.(*eventstore.Header); ok {
		if s.ID != "" {
			return nil, fmt.Errorf("%w: second header at sequence %d", ErrOutOfOrder, b.Sequence)
		}
		s.applyHeader(h)
		return nil, nil
	}
	switch {
	case s.ID == "":
		return nil, fmt.Errorf("%w: first record is %s (sequence %d)", ErrNoHeader, r.Kind(), b.Sequence)
	case b.JournalID != s.Journal.JournalID || b.AgentExecutionID != s.ID:
		return nil, fmt.Errorf("%w: %s %s is of journal %s, execution %s; this is journal %s, execution %s",
			ErrForeignRecord, r.Kind(), b.RecordID, b.JournalID, b.AgentExecutionID, s.Journal.JournalID, s.ID)
	case b.Sequence <= s.Journal.LastSequence:
		return nil, fmt.Errorf("%w: sequence %d after %d", ErrOutOfOrder, b.Sequence, s.Journal.LastSequence)
	}
	s.Journal.RecordCount++
	s.Journal.LastSequence = b.Sequence
	s.UpdatedAt = b.OccurredAt
	switch r := r.(type) {
	case *eventstore.MessageAccepted:
		return s.applyMessage(r), nil
	case *eventstore.MessageDelivery:
		return s.applyDelivery(r), nil
	case *eventstore.Observation:
		return s.applyObservation(r), nil
	case *eventstore.Decision:
		return s.applyDecision(r), nil
	case *eventstore.StateChanged:
		return s.applyStateChanged(r), nil
	case *eventstore.ActivityUpdated:
		s.applyActivity(r)
		return s.applyToolCall(r), nil
	case *eventstore.OwnerEffect:
		return []TimelineItem{item(r, ItemOwnerEffect, r.EffectType)}, nil
	case *eventstore.ProjectionRecorded:
		// Reserved; timelines are derived from the other records.
	case *eventstore.Interruption:
		return s.applyInterruption(r), nil
	case *eventstore.CheckpointCreated:
		return []TimelineItem{item(r, ItemCheckpoint, eventstore.TimelineText(r))}, nil
	case *eventstore.SnapshotCreated:
		return []TimelineItem{item(r, ItemSnapshot, eventstore.TimelineText(r))}, nil
	case *eventstore.RestoreAttempted:
		return []TimelineItem{item(r, ItemRestore, eventstore.TimelineText(r))}, nil
	}
	return nil, nil
}

func (s *State) applyHeader(h *eventstore.Header) {
	*s = State{
		ID:                    h.AgentExecutionID,
		OwnerEntity:           h.Scope,
		OwnerID:               h.OwnerID,
		AgentID:               h.AgentID,
		Lifecycle:             eventstore.LifecycleStarting,
		Attention:             eventstore.AttentionNone,
		Activity:              eventstore.ActivityIdle,
		ProcessedMessages:     map[string]uint64{},
		ProcessedObservations: map[string]uint64{},
		Decisions:             map[string]DecisionRef{},
		Posture:               h.ProtocolDescriptor.Posture,
		ProtocolDescriptor:    h.ProtocolDescriptor,
		WorkingDirectory:      h.WorkingDirectory,
		TimeoutMs:             h.TimeoutMs,
		SessionID:             h.Session(),
		ForkedFrom:            h.ForkedFrom,
		Resumes:               h.Resumes,
		DispatchContext:       h.DispatchContext,
		Journal: eventstore.Reference{
			JournalID: h.JournalID, OwnerEntity: h.Scope, OwnerID: h.OwnerID, AgentExecutionID: h.AgentExecutionID,
			RecordCount: 1, LastSequence: h.Sequence,
		},
		CreatedAt: h.OccurredAt,
		UpdatedAt: h.OccurredAt,
		Timeline:  []TimelineItem{},
	}
	if h.TransportState != nil {
		s.TerminalAttached = h.TransportState.TerminalAttached
	}
}

func (s *State) applyMessage(r *eventstore.MessageAccepted) []TimelineItem {
	if _, dup := s.ProcessedMessages[r.MessageID]; dup {
		return nil
	}
	s.ProcessedMessages[r.MessageID] = r.Sequence
	if s.Prompt == "" && r.MessageType == "prompt" {
		if text, err := r.Text(); err == nil {
			s.Prompt = textclip.Runes(strings.Join(strings.Fields(text), " "), MaxPromptRunes)
		}
	}
	it := item(r, ItemMessage, MessageText(r))
	it.Source = string(r.Source)
	it.MessageID = r.MessageID
	it.MessageType = r.MessageType
	it.RequestID, _ = r.RequestID()
	return []TimelineItem{it}
}

// MessageText is the text of a message payload: its "text" field when it
// has one, the message type for a null payload, the payload itself
// otherwise.
func MessageText(r *eventstore.MessageAccepted) string {
	if text, err := r.Text(); err == nil && text != "" {
		return text
	}
	if string(r.Payload) == "null" {
		return r.MessageType
	}
	return string(r.Payload)
}

func (s *State) applyDelivery(r *eventstore.MessageDelivery) []TimelineItem {
	if r.Status != eventstore.DeliveryFailed && r.Status != eventstore.DeliverySkipped {
		return nil
	}
	text := string(r.Status)
	if r.Reason != "" {
		text += ": " + r.Reason
	}
	it := item(r, ItemDelivery, text)
	it.MessageID = r.MessageID
	return []TimelineItem{it}
}

func (s *State) applyObservation(r *eventstore.Observation) []TimelineItem {
	if _, dup := s.ProcessedObservations[r.ObservationID]; dup {
		return nil
	}
	s.ProcessedObservations[r.ObservationID] = r.Sequence
	if a, ok := advertisedOf(r); ok {
		s.AdvertisedMessages = a.Messages
	}
	if r.Signal == nil {
		return nil
	}
	switch p := r.Signal.Payload.(type) {
	case *eventstore.UsageSignal:
		s.Usage = s.Usage.Add(p)
	case *eventstore.PlanSignal:
		s.Plan = p.Items
	}
	spec, ok := eventstore.LookupSignal(r.Signal.Type)
	if !ok || spec.Timeline == eventstore.TimelineNone {
		return nil
	}
	it := item(r, ItemKind(spec.Timeline), r.Signal.Payload.TimelineText())
	it.Signal = r.Signal.Type
	it.Source = string(r.Source)
	it.ObservationID = r.ObservationID
	if ni, ok := r.Signal.Payload.(*eventstore.NeedsInputSignal); ok {
		s.LastInputRequest = InputRequest{RequestID: ni.RequestID, Question: ni.Question, Choices: ni.Choices, Kind: ni.Kind, Tool: ni.Tool}
		it.RequestID = ni.RequestID
		it.Choices = ni.Choices
	}
	if b, ok := r.Signal.Payload.(*eventstore.BlockedSignal); ok {
		if MovesState(r.Confidence) {
			// A weaker one blocks nothing, and must not lend its words
			// to a state change made for a stronger one before it.
			s.LastBlocked = &Blocked{Reason: b.Reason, Needs: b.Needs}
		}
		it.Reason, it.Needs = b.Reason, b.Needs
	}
	return []TimelineItem{it}
}

func (s *State) applyDecision(r *eventstore.Decision) []TimelineItem {
	key := r.ObservationID
	if key == "" {
		key = r.MessageID
	}
	if key != "" {
		if _, dup := s.Decisions[key]; dup {
			return nil
		}
		s.Decisions[key] = DecisionRef{DecisionID: r.DecisionID, Action: r.Action, Reason: r.Reason, Sequence: r.Sequence}
	}
	text := string(r.Action)
	if r.Reason != "" {
		text += ": " + r.Reason
	}
	it := item(r, ItemDecision, text)
	it.ObservationID = r.ObservationID
	it.MessageID = r.MessageID
	it.Action = r.Action
	return []TimelineItem{it}
}

func (s *State) applyStateChanged(r *eventstore.StateChanged) []TimelineItem {
	var changes []string
	if s.Lifecycle.Final() {
		// Nothing moves after the end: a decision on an observation made
		// just before the exit may be appended after it, and must not
		// change how the execution ended.
		return nil
	}
	if r.Host != "" {
		s.Host = r.Host
	}
	attention, activity, request := r.Attention, r.Activity, r.CurrentInputRequestID
	if on, final := EndEvent(r.Lifecycle); final {
		if m := NextAttention(s, on); m.Moves {
			// The attention table, not the record, says how an end leaves
			// the attention: an end recorded without it, or before the
			// decision on a claim the agent made just before it, ends the
			// same way.
			attention = m.To
			if m.Request == RequestClosed {
				request = eventstore.ClearInputRequest()
			}
		}
		// Nothing works once the process is gone, whatever phase the
		// agent said it was in last, and however late that was decided.
		activity = eventstore.ActivityIdle
	}
	if r.Lifecycle == eventstore.LifecycleStarting && s.Lifecycle == eventstore.LifecycleStarting && r.Reason != "" {
		// A run that has not started says why: it is queued, or
		// scheduled (dispatch.go).
		s.LifecycleReason = r.Reason
		changes = append(changes, "waiting to start")
	}
	if r.Lifecycle != "" && r.Lifecycle != s.Lifecycle {
		changes = append(changes, "lifecycle "+string(s.Lifecycle)+" → "+string(r.Lifecycle))
		s.Lifecycle = r.Lifecycle
		s.LifecycleReason = r.Reason
		if r.Lifecycle.Final() {
			at := r.OccurredAt
			s.EndedAt = &at
			s.Latest.endRun()
		}
	}
	if attention != "" && attention != s.Attention {
		changes = append(changes, "attention "+string(s.Attention)+" → "+string(attention))
		s.Attention = attention
	}
	switch {
	case s.Attention != eventstore.AttentionBlocked:
		s.Blocked = nil
	case attention == eventstore.AttentionBlocked:
		// Blocked again, maybe for another reason.
		s.Blocked = s.blockedBy(r.Reason)
	}
	if activity != "" && activity != s.Activity {
		changes = append(changes, "activity "+string(s.Activity)+" → "+string(activity))
		s.Activity = activity
	}
	if request.Set && request.ID != s.CurrentInputRequestID {
		switch {
		case request.ID != "":
			changes = append(changes, "input request "+request.ID+" open")
		case s.Lifecycle.Final():
			changes = append(changes, "input request "+s.CurrentInputRequestID+" closed unanswered")
		default:
			changes = append(changes, "input request "+s.CurrentInputRequestID+" answered")
		}
		s.CurrentInputRequestID = request.ID
		s.CurrentInputQuestion = ""
		if s.CurrentInputRequestID != "" && s.LastInputRequest.RequestID == s.CurrentInputRequestID {
			s.CurrentInputQuestion = s.LastInputRequest.Question
		}
	}
	if len(changes) == 0 {
		return nil
	}
	text := strings.Join(changes, ", ")
	if r.Reason != "" {
		text += " (" + r.Reason + ")"
	}
	it := item(r, ItemState, text)
	it.Lifecycle, it.Attention = r.Lifecycle, attention
	return []TimelineItem{it}
}

// blockedBy is what blocks the execution as a state change to blocked
// says: the newest blocked signal, or the change's reason without one.
func (s *State) blockedBy(reason string) *Blocked {
	if s.LastBlocked != nil && (reason == "" || reason == s.LastBlocked.Reason) {
		b := *s.LastBlocked
		return &b
	}
	return &Blocked{Reason: reason}
}

func (s *State) applyActivity(r *eventstore.ActivityUpdated) {
	l := &s.Latest
	if s.Lifecycle.Final() {
		// The run is over: what a late update says is running is not.
		return
	}
	if r.Activity != "" {
		l.Activity = r.Activity
	}
	if r.Progress != nil {
		l.Progress = r.Progress
	}
	if r.Telemetry != nil {
		l.Telemetry = mergeTelemetry(l.Telemetry, r.Telemetry)
		if !s.Usage.IsZero() {
			// The usage observations are the truth; a telemetry update
			// decided late carries totals older than them.
			l.Telemetry.InputTokens, l.Telemetry.OutputTokens, l.Telemetry.TotalTokens = s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.TotalTokens
		}
	}
	if r.Capabilities != nil {
		l.Capabilities = mergeCapabilities(l.Capabilities, r.Capabilities)
		if c := l.Capabilities.ToolCallActive; c != nil && !*c && l.Telemetry != nil {
			// No call is running: no tool is active.
			t := *l.Telemetry
			t.ActiveToolName = ""
			l.Telemetry = &t
		}
	}
	if r.CurrentTarget != nil {
		l.CurrentTarget = r.CurrentTarget
	}
	if r.ToolCall != nil {
		c := *r.ToolCall
		l.ToolCall = &c
	}
	l.Sequence = r.Sequence
	at := r.OccurredAt
	l.At = &at
}

// mergeTelemetry lays an update's telemetry over the last: each count and
// the active tool are replaced only when the update carries them, so a tool
// update does not erase the token counts, nor a usage update the tool.
func mergeTelemetry(last, t *eventstore.Telemetry) *eventstore.Telemetry {
	if last == nil {
		c := *t
		return &c
	}
	out := *last
	if t.InputTokens != nil {
		out.InputTokens = t.InputTokens
	}
	if t.OutputTokens != nil {
		out.OutputTokens = t.OutputTokens
	}
	if t.TotalTokens != nil {
		out.TotalTokens = t.TotalTokens
	}
	if t.ActiveToolName != "" {
		out.ActiveToolName = t.ActiveToolName
	}
	return &out
}

func mergeCapabilities(last, c *eventstore.Capabilities) *eventstore.Capabilities {
	if last == nil {
		n := *c
		return &n
	}
	out := *last
	for _, f := range []struct {
		dst **bool
		src *bool
	}{
		{&out.TerminalAttached, c.TerminalAttached}, {&out.Streaming, c.Streaming},
		{&out.ToolCallActive, c.ToolCallActive}, {&out.FilesystemMutating, c.FilesystemMutating},
	} {
		if f.src != nil {
			*f.dst = f.src
		}
	}
	return &out
}

func item(r eventstore.Record, kind ItemKind, text string) TimelineItem {
	b := r.RecordBase()
	return TimelineItem{ID: b.RecordID, Sequence: b.Sequence, At: b.OccurredAt, Kind: kind, Text: text, Record: r.Kind()}
}

func sortStrings(s []string) { sort.Strings(s) }
