package execution

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// ItemKind is the kind of a timeline item. Signal items take the timeline
// kind the signal registry gives them; the others come from record kinds.
type ItemKind string

const (
	ItemMessage     ItemKind = "message"
	ItemDelivery    ItemKind = "delivery"
	ItemDecision    ItemKind = "decision"
	ItemState       ItemKind = "state"
	ItemOwnerEffect ItemKind = "owner-effect"
	// ItemTool is one tool call: its start, completed in place by its end.
	ItemTool ItemKind = "tool"
	// ItemCheckpoint, ItemSnapshot and ItemRestore are the records of
	// those kinds: a checkpoint of the run, a snapshot of its work tree,
	// a fork's restore of its parent's.
	ItemCheckpoint ItemKind = "checkpoint"
	ItemSnapshot   ItemKind = "snapshot"
	ItemRestore    ItemKind = "restore"

	ItemProgress   = ItemKind(eventstore.TimelineProgress)
	ItemStatus     = ItemKind(eventstore.TimelineStatus)
	ItemNeedsInput = ItemKind(eventstore.TimelineNeedsInput)
	ItemBlocked    = ItemKind(eventstore.TimelineBlocked)
	ItemClaim      = ItemKind(eventstore.TimelineClaim)
	ItemFailure    = ItemKind(eventstore.TimelineFailure)
	ItemChat       = ItemKind(eventstore.TimelineChat)
)

// TimelineItem is one entry of an execution's timeline (the chat
// projection). Its ID is the record id and its Sequence the record's, which
// is also the paging cursor. A needs-input item carries its request's
// choices, a blocked item its reason and needs.
type TimelineItem struct {
	ID       string          `json:"id"`
	Sequence uint64          `json:"sequence"`
	At       time.Time       `json:"at"`
	Kind     ItemKind        `json:"kind"`
	Record   eventstore.Kind `json:"record"`
	Text     string          `json:"text"`

	Source        string                    `json:"source,omitempty"`
	Signal        eventstore.SignalType     `json:"signal,omitempty"`
	MessageID     string                    `json:"messageId,omitempty"`
	MessageType   string                    `json:"messageType,omitempty"`
	ObservationID string                    `json:"observationId,omitempty"`
	RequestID     string                    `json:"requestId,omitempty"`
	Choices       []string                  `json:"choices,omitempty"`
	Action        eventstore.DecisionAction `json:"action,omitempty"`
	Lifecycle     eventstore.Lifecycle      `json:"lifecycle,omitempty"`
	Attention     eventstore.Attention      `json:"attention,omitempty"`

	// Reason and Needs are a blocked signal's: what blocks the agent and
	// what would unblock it.
	Reason string `json:"reason,omitempty"`
	Needs  string `json:"needs,omitempty"`

	// Tool is a tool item's call.
	Tool *ToolItem `json:"tool,omitempty"`

	// Inherited marks an item a fork inherited from its parent's prefix;
	// ExecutionID names the execution whose journal holds it (set only
	// then). Its ID and Sequence are that journal's.
	Inherited   bool   `json:"inherited,omitempty"`
	ExecutionID string `json:"executionId,omitempty"`
}

// ToolItem is a tool call as its timeline item tells it: from its start
// (status started) until its end completes it.
type ToolItem struct {
	// CallID is the agent CLI's id of the call; empty when it gave none.
	CallID string                    `json:"callId,omitempty"`
	Name   string                    `json:"name"`
	Status eventstore.ToolCallStatus `json:"status"`
	// Target is what the call works on: the command, path, URL or pattern.
	Target *eventstore.Target `json:"target,omitempty"`
	// DurationMs is the time from the call's start to its end; absent
	// until it ended, or when its start is not known.
	DurationMs *int64 `json:"durationMs,omitempty"`
	// EndSequence is the sequence of the record of the call's end.
	EndSequence uint64 `json:"endSequence,omitempty"`
	Error       string `json:"error,omitempty"`
	ExitCode    *int64 `json:"exitCode,omitempty"`
	// Output is the excerpt of the call's output, OutputBytes the size of
	// the whole when the excerpt was cut (eventstore.ToolCall).
	Output      string `json:"output,omitempty"`
	OutputBytes int64  `json:"outputBytes,omitempty"`
}

// Quiet reports whether an item is left out of a timeline unless all
// items are asked for: a decision that changes nothing. Such are the
// decisions with action record-only (the policy kept the input as it
// came: no state change follows it) and emit-message (the agent's message
// is its own chat item, and nothing else changes). A rejection, a state
// update and an owner effect change what the execution is or owes, and
// stay.
func (it *TimelineItem) Quiet() bool {
	return it.Kind == ItemDecision && (it.Action == eventstore.ActionRecordOnly || it.Action == eventstore.ActionEmitMessage)
}

// PlaceItems adds the items a record produced to a timeline: an item with
// the ID and Sequence of one already in it replaces that one (a tool call
// completed by its end), any other is appended.
func PlaceItems(tl []TimelineItem, items ...TimelineItem) []TimelineItem {
next:
	for _, it := range items {
		for i := len(tl) - 1; i >= 0 && tl[i].Sequence >= it.Sequence; i-- {
			if tl[i].Sequence == it.Sequence && tl[i].ID == it.ID {
				tl[i] = it
				continue next
			}
		}
		tl = append(tl, it)
	}
	return tl
}

// maxOpenToolCalls bounds the tool calls a state waits for the end of:
// a call whose end never comes (the run crashed, the record was dropped)
// must not hold state forever. The oldest is let go first; its item stays
// as it started.
const maxOpenToolCalls = 64

// applyToolCall makes the timeline item of a tool call's start, and
// completes it when the call's end arrives: the end's item has the
// start's ID and Sequence, so it replaces it. An end whose start is not
// known (the call has no id, or its start was let go) is an item of its
// own. A late end still completes its item after the run ended.
func (s *State) applyToolCall(r *eventstore.ActivityUpdated) []TimelineItem {
	c := r.ToolCall
	if c == nil {
		return nil
	}
	open := -1
	if c.ID != "" {
		for i := range s.OpenToolCalls {
			if s.OpenToolCalls[i].Tool.CallID == c.ID {
				open = i
			}
		}
	}
	if c.Status == eventstore.ToolCallStarted {
		if open >= 0 {
			// Started twice: the first start is the item.
			return nil
		}
		it := item(r, ItemTool, "")
		it.Tool = &ToolItem{CallID: c.ID, Name: c.Name, Status: c.Status, Target: r.CurrentTarget}
		it.Text = it.Tool.text()
		if c.ID != "" {
			// A new slice: a state may share its slices with a copy of it.
			opened := s.OpenToolCalls[max(0, len(s.OpenToolCalls)-maxOpenToolCalls+1):]
			s.OpenToolCalls = append(append(make([]TimelineItem, 0, len(opened)+1), opened...), it)
		}
		return []TimelineItem{it}
	}
	var it TimelineItem
	if open >= 0 {
		it = s.OpenToolCalls[open]
		t := *it.Tool
		it.Tool = &t
		if d := r.OccurredAt.Sub(it.At); d >= 0 {
			ms := d.Milliseconds()
			it.Tool.DurationMs = &ms
		}
		s.OpenToolCalls = append(append(make([]TimelineItem, 0, len(s.OpenToolCalls)-1), s.OpenToolCalls[:open]...), s.OpenToolCalls[open+1:]...)
		if len(s.OpenToolCalls) == 0 {
			s.OpenToolCalls = nil
		}
	} else {
		it = item(r, ItemTool, "")
		it.Tool = &ToolItem{CallID: c.ID, Name: c.Name, Target: r.CurrentTarget}
	}
	it.Tool.Status, it.Tool.EndSequence = c.Status, r.Sequence
	it.Tool.Error, it.Tool.ExitCode = c.Error, c.ExitCode
	it.Tool.Output, it.Tool.OutputBytes = c.Output, c.OutputBytes
	it.Text = it.Tool.text()
	return []TimelineItem{it}
}

// text tells the call on one line: its tool, what it worked on, and how it
// ended, e.g. "Bash: go test ./... — failed (exit 1) after 2.3s".
func (t *ToolItem) text() string {
	var b strings.Builder
	b.WriteString(t.Name)
	if on := targetText(t.Target); on != "" && on != t.Name {
		b.WriteString(": " + on)
	}
	b.WriteString(" — ")
	if t.Status == eventstore.ToolCallStarted {
		b.WriteString("running")
		return b.String()
	}
	b.WriteString(string(t.Status))
	if t.ExitCode != nil {
		fmt.Fprintf(&b, " (exit %d)", *t.ExitCode)
	}
	if t.DurationMs != nil {
		b.WriteString(" after " + duration(*t.DurationMs))
	}
	if t.Status == eventstore.ToolCallFailed && t.Error != "" {
		// The first line says what went wrong; the item has the rest.
		line, _, _ := strings.Cut(strings.TrimSpace(t.Error), "\n")
		b.WriteString(": " + line)
	}
	return b.String()
}

// duration tells a call's duration as people read it: 850ms, 2.3s, 4m10s.
func duration(ms int64) string {
	switch d := time.Duration(ms) * time.Millisecond; {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// targetText is what a call works on, as its target names it: the path
// (a file, a command line, a URL, a pattern), else the label.
func targetText(t *eventstore.Target) string {
	switch {
	case t == nil:
		return ""
	case t.Path != "":
		return t.Path
	}
	return t.Label
}
