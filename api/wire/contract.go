package wire

import "github.com/agentjournal/agentjournal/contract"

// Todos answers GET /v1/executions/{id}/todos: the todos in the order the
// agent first listed them.
type Todos struct {
	Todos []contract.AgentTodo `json:"todos"`
}

// Approvals answers GET /v1/executions/{id}/approvals: the input and
// permission requests as approval checkpoints, in the order they were
// asked.
type Approvals struct {
	Approvals []contract.AgentApprovalCheckpoint `json:"approvals"`
}

// Checkpoints answers GET /v1/executions/{id}/checkpoints, oldest first.
type Checkpoints struct {
	Checkpoints []contract.AgentCheckpoint `json:"checkpoints"`
}

// CheckpointRequest is the body of POST /v1/executions/{id}/checkpoints;
// every field is optional.
type CheckpointRequest struct {
	// ID names the checkpoint, so that a retry is the same checkpoint.
	ID      string `json:"id,omitempty"`
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// Sessions answers GET /v1/sessions, newest first.
type Sessions struct {
	Sessions []contract.AgentSession `json:"sessions"`
}

// Session answers GET /v1/sessions/{sessionId}: the AgentSession with its
// runs, tasks, todos, approvals and checkpoints.
type Session struct {
	Session     contract.AgentSession              `json:"session"`
	Runs        []contract.AgentRun                `json:"runs"`
	Tasks       []contract.AgentTask               `json:"tasks"`
	Todos       []contract.AgentTodo               `json:"todos"`
	Approvals   []contract.AgentApprovalCheckpoint `json:"approvals"`
	Checkpoints []contract.AgentCheckpoint         `json:"checkpoints"`
}
