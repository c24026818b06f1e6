package contract

import (
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// AgentTodo is 004's AgentTodo, with the history of its status.
type AgentTodo struct {
	TodoID    string                    `json:"todoId"`
	SessionID string                    `json:"sessionId"`
	Text      string                    `json:"text"`
	Status    eventstore.PlanItemStatus `json:"status"`
	CreatedAt time.Time                 `json:"createdAt"`
	UpdatedAt time.Time                 `json:"updatedAt"`
	// History is every plan update that changed the todo, oldest first.
	History []TodoChange `json:"history"`
}

// TodoChange is one plan update that changed a todo.
type TodoChange struct {
	Status   eventstore.PlanItemStatus `json:"status"`
	Text     string                    `json:"text"`
	Sequence uint64                    `json:"sequence"`
	RecordID string                    `json:"recordId"`
	At       time.Time                 `json:"at"`
}

// Approval checkpoint statuses.
const (
	ApprovalPending  = "pending"
	ApprovalAnswered = "answered"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalClosed   = "closed-by-run-end"
)

// AgentApprovalCheckpoint is 004's AgentApprovalCheckpoint: one input or
// permission request of a run and how it was resolved.
type AgentApprovalCheckpoint struct {
	ApprovalID string   `json:"approvalId"`
	RunID      string   `json:"runId"`
	SessionID  string   `json:"sessionId"`
	AgentID    string   `json:"agentId"`
	Kind       string   `json:"kind"`
	Question   string   `json:"question"`
	Choices    []string `json:"choices,omitempty"`
	Tool       string   `json:"tool,omitempty"`
	Status     string   `json:"status"`
	// RequestedAt and RequestSequence are the request's observation.
	RequestedAt     time.Time `json:"requestedAt"`
	RequestSequence uint64    `json:"requestSequence"`
	Answer          string    `json:"answer,omitempty"`
	// ResolvedBy is the answering message's source: operator, daemon,
	// owner (policy) or system; "run-end" when the run ended first.
	ResolvedBy       string     `json:"resolvedBy,omitempty"`
	ResolvedAt       *time.Time `json:"resolvedAt,omitempty"`
	ResolvedSequence uint64     `json:"resolvedSequence,omitempty"`
}

// Todos reads the todos from the plan observations of recs: each plan
// replaces the last, so an item missing from a later plan keeps its last
// status. Items are keyed by the agent's id, else by their text.
func Todos(recs []eventstore.Record) []AgentTodo {
	return Fold(recs).Todos
}

// Approvals reads every input and permission request of recs with its
// answer; a request still open when the run reached a final lifecycle is
// closed by the run's end, one open otherwise is pending.
func Approvals(recs []eventstore.Record) []AgentApprovalCheckpoint {
	return Fold(recs).Approvals
}
