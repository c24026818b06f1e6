package contract

import (
	"encoding/json"
	"strings"
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

type runContext struct{ run, session, agent string }

func contextOf(recs []eventstore.Record) runContext {
	var c runContext
	for _, r := range recs {
		if h, ok := r.(*eventstore.Header); ok {
			c = runContext{run: h.AgentExecutionID, session: h.Session(), agent: h.AgentID}
			break
		}
	}
	return c
}

// Todos reads the todos from the plan observations of recs: each plan
// replaces the last, so an item missing from a later plan keeps its last
// status. Items are keyed by the agent's id, else by their text.
func Todos(recs []eventstore.Record) []AgentTodo {
	c := contextOf(recs)
	var out []AgentTodo
	index := map[string]int{}
	for _, r := range recs {
		o, ok := r.(*eventstore.Observation)
		if !ok || o.Signal == nil {
			continue
		}
		p, ok := o.Signal.Payload.(*eventstore.PlanSignal)
		if !ok {
			continue
		}
		for _, it := range p.Items {
			key := it.ID
			if key == "" {
				key = it.Text
			}
			ch := TodoChange{Status: it.Status, Text: it.Text, Sequence: o.Sequence, RecordID: o.RecordID, At: o.OccurredAt}
			i, seen := index[key]
			if !seen {
				index[key] = len(out)
				out = append(out, AgentTodo{TodoID: key, SessionID: c.session, Text: it.Text, Status: it.Status,
					CreatedAt: o.OccurredAt, UpdatedAt: o.OccurredAt, History: []TodoChange{ch}})
				continue
			}
			t := &out[i]
			if t.Status == it.Status && t.Text == it.Text {
				continue
			}
			t.Status, t.Text, t.UpdatedAt = it.Status, it.Text, o.OccurredAt
			t.History = append(t.History, ch)
		}
	}
	return out
}

// Approvals reads every input and permission request of recs with its
// answer; a request still open when the run reached a final lifecycle is
// closed by the run's end, one open otherwise is pending.
func Approvals(recs []eventstore.Record) []AgentApprovalCheckpoint {
	c := contextOf(recs)
	var out []AgentApprovalCheckpoint
	index := map[string]int{}
	for _, r := range recs {
		switch v := r.(type) {
		case *eventstore.Observation:
			if v.Signal == nil {
				continue
			}
			ni, ok := v.Signal.Payload.(*eventstore.NeedsInputSignal)
			if !ok || ni.RequestID == "" {
				continue
			}
			if _, dup := index[ni.RequestID]; dup {
				continue
			}
			kind := ni.Kind
			if kind == "" {
				kind = "question"
			}
			a := AgentApprovalCheckpoint{ApprovalID: ni.RequestID, RunID: c.run, SessionID: c.session, AgentID: c.agent,
				Kind: kind, Question: ni.Question, Choices: ni.Choices, Status: ApprovalPending,
				RequestedAt: v.OccurredAt, RequestSequence: v.Sequence}
			if ni.Tool != nil {
				a.Tool = ni.Tool.Name
			}
			index[ni.RequestID] = len(out)
			out = append(out, a)
		case *eventstore.MessageAccepted:
			if v.MessageType != "answer" {
				continue
			}
			var p struct {
				RequestID string `json:"requestId"`
				Text      string `json:"text"`
			}
			if json.Unmarshal(v.Payload, &p) != nil {
				continue
			}
			i, ok := index[p.RequestID]
			if !ok || out[i].Status != ApprovalPending {
				continue
			}
			a := &out[i]
			at := v.OccurredAt
			a.Answer, a.ResolvedBy, a.ResolvedAt, a.ResolvedSequence = p.Text, string(v.Source), &at, v.Sequence
			a.Status = ApprovalAnswered
			if a.Kind == "permission" {
				a.Status = ApprovalApproved
				if strings.EqualFold(strings.TrimSpace(p.Text), "deny") {
					a.Status = ApprovalDenied
				}
			}
		case *eventstore.StateChanged:
			if !v.Lifecycle.Final() {
				continue
			}
			at := v.OccurredAt
			for i := range out {
				if out[i].Status == ApprovalPending {
					out[i].Status, out[i].ResolvedBy, out[i].ResolvedAt, out[i].ResolvedSequence = ApprovalClosed, "run-end", &at, v.Sequence
				}
			}
		}
	}
	return out
}
