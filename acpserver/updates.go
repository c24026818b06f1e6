package acpserver

import (
	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Message types of the journal this package sends or shows.
const (
	msgPrompt    = "prompt"
	msgAnswer    = "answer"
	msgInterrupt = "interrupt"
)

// Updates returns the session/update notifications a journal record
// becomes, in order; none for a record an editor has nothing to show for
// (headers, deliveries, decisions, state changes, other signals). The same
// function maps a replayed journal (session/load) and a live one, so both
// show the same.
func Updates(rec eventstore.Record) []sdk.SessionUpdate {
	switch r := rec.(type) {
	case *eventstore.MessageAccepted:
		if r.MessageType != msgPrompt && r.MessageType != msgAnswer {
			return nil
		}
		p, err := r.DecodePayload()
		if err != nil || p.Text == "" {
			return nil
		}
		u := sdk.UpdateUserMessageText(p.Text)
		u.UserMessageChunk.MessageId = sdk.Ptr(r.MessageID)
		return []sdk.SessionUpdate{u}
	case *eventstore.Observation:
		return signalUpdates(r)
	case *eventstore.ActivityUpdated:
		if r.ToolCall == nil {
			return nil
		}
		return []sdk.SessionUpdate{toolUpdate(r)}
	}
	return nil
}

func signalUpdates(o *eventstore.Observation) []sdk.SessionUpdate {
	if o.Signal == nil {
		return nil
	}
	switch p := o.Signal.Payload.(type) {
	case *eventstore.MessageSignal:
		return []sdk.SessionUpdate{agentMessage(o)}
	case *eventstore.NeedsInputSignal:
		if askable(p) {
			// session/request_permission shows it while it is open.
			return nil
		}
		// A question with no choices is answered by the next prompt, so
		// the editor shows it as the agent's message.
		return []sdk.SessionUpdate{agentMessage(o)}
	case *eventstore.PlanSignal:
		entries := make([]sdk.PlanEntry, 0, len(p.Items))
		for _, it := range p.Items {
			st, ok := planStatus[it.Status]
			if !ok {
				continue // dropped: ACP has no such status
			}
			entries = append(entries, sdk.PlanEntry{Content: it.Text, Status: st, Priority: sdk.PlanEntryPriorityMedium})
		}
		return []sdk.SessionUpdate{sdk.UpdatePlan(entries...)}
	}
	return nil
}

// agentMessage shows an observation's signal as the agent's message: its
// text as the signal registry says a timeline shows it (a message's text,
// a question), under the observation's id.
func agentMessage(o *eventstore.Observation) sdk.SessionUpdate {
	u := sdk.UpdateAgentMessageText(o.Signal.Payload.TimelineText())
	u.AgentMessageChunk.MessageId = sdk.Ptr(o.ObservationID)
	return u
}

var planStatus = map[eventstore.PlanItemStatus]sdk.PlanEntryStatus{
	eventstore.PlanItemOpen:       sdk.PlanEntryStatusPending,
	eventstore.PlanItemInProgress: sdk.PlanEntryStatusInProgress,
	eventstore.PlanItemDone:       sdk.PlanEntryStatusCompleted,
}

// askable reports a needs_input signal the editor answers by picking an
// option: a permission request, or a question with choices.
func askable(p *eventstore.NeedsInputSignal) bool {
	return p.Kind == string(eventstore.InputPermission) || len(p.Choices) > 0
}

// toolUpdate is a tool call's start (tool_call) or end (tool_call_update).
func toolUpdate(r *eventstore.ActivityUpdated) sdk.SessionUpdate {
	tc := r.ToolCall
	id := sdk.ToolCallId(tc.ID)
	if id == "" {
		// Without the CLI's id a start and its end cannot be paired: each
		// is a call of its own.
		id = sdk.ToolCallId(r.RecordID)
	}
	if tc.Status == eventstore.ToolCallStarted || tc.ID == "" {
		status := sdk.ToolCallStatusInProgress
		switch tc.Status {
		case eventstore.ToolCallSucceeded:
			status = sdk.ToolCallStatusCompleted
		case eventstore.ToolCallFailed:
			status = sdk.ToolCallStatusFailed
		}
		opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(toolKind(r)), sdk.WithStartStatus(status)}
		if t := r.CurrentTarget; t != nil && t.Path != "" {
			opts = append(opts, sdk.WithStartLocations([]sdk.ToolCallLocation{{Path: t.Path}}))
		}
		if tc.Error != "" {
			opts = append(opts, sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(tc.Error))}))
		}
		return sdk.StartToolCall(id, tc.Name, opts...)
	}
	if tc.Status == eventstore.ToolCallFailed {
		opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(sdk.ToolCallStatusFailed)}
		if tc.Error != "" {
			opts = append(opts, sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(tc.Error))}))
		}
		return sdk.UpdateToolCall(id, opts...)
	}
	return sdk.UpdateToolCall(id, sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted))
}

// toolKind is the ACP kind of a tool call from the activity and target the
// journal gives it.
func toolKind(r *eventstore.ActivityUpdated) sdk.ToolKind {
	if t := r.CurrentTarget; t != nil {
		switch t.Kind {
		case eventstore.TargetSearch:
			return sdk.ToolKindSearch
		case eventstore.TargetURL:
			return sdk.ToolKindFetch
		}
	}
	switch r.Activity {
	case eventstore.ActivityReviewing:
		return sdk.ToolKindRead
	case eventstore.ActivityEditing:
		return sdk.ToolKindEdit
	case eventstore.ActivityExecuting, eventstore.ActivityTesting:
		return sdk.ToolKindExecute
	case eventstore.ActivityPlanning, eventstore.ActivityReasoning:
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}
