package execution

import (
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

	// Inherited marks an item a fork inherited from its parent's prefix;
	// ExecutionID names the execution whose journal holds it (set only
	// then). Its ID and Sequence are that journal's.
	Inherited   bool   `json:"inherited,omitempty"`
	ExecutionID string `json:"executionId,omitempty"`
}
