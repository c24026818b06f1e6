package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/contract"
)

// Todos returns the execution's todos in the runtime contract's shape
// (GET /v1/executions/{id}/todos).
func (c *Client) Todos(ctx context.Context, id string) ([]contract.AgentTodo, error) {
	var out wire.Todos
	err := c.do(ctx, http.MethodGet, executionPath(id, "/todos"), nil, nil, &out)
	return out.Todos, err
}

// Approvals returns the execution's input and permission requests as
// approval checkpoints (GET /v1/executions/{id}/approvals).
func (c *Client) Approvals(ctx context.Context, id string) ([]contract.AgentApprovalCheckpoint, error) {
	var out wire.Approvals
	err := c.do(ctx, http.MethodGet, executionPath(id, "/approvals"), nil, nil, &out)
	return out.Approvals, err
}

// SessionFilter selects sessions for Sessions; the zero value lists all.
type SessionFilter struct {
	Status contract.SessionStatus
	Limit  int
}

// Sessions lists the sessions, newest first (GET /v1/sessions).
func (c *Client) Sessions(ctx context.Context, f SessionFilter) ([]contract.AgentSession, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out wire.Sessions
	err := c.do(ctx, http.MethodGet, "/v1/sessions", q, nil, &out)
	return out.Sessions, err
}

// Session reads one session (GET /v1/sessions/{sessionId}).
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	var out Session
	if err := c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Run reads an execution as an AgentRun (GET /v1/executions/{id}/run).
func (c *Client) Run(ctx context.Context, id string) (*contract.AgentRun, error) {
	var out contract.AgentRun
	if err := c.do(ctx, http.MethodGet, executionPath(id, "/run"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Checkpoints lists an execution's checkpoints, oldest first
// (GET /v1/executions/{id}/checkpoints).
func (c *Client) Checkpoints(ctx context.Context, id string) ([]contract.AgentCheckpoint, error) {
	var out wire.Checkpoints
	err := c.do(ctx, http.MethodGet, executionPath(id, "/checkpoints"), nil, nil, &out)
	return out.Checkpoints, err
}

// Checkpoint records a checkpoint of an execution as it is now
// (POST /v1/executions/{id}/checkpoints).
func (c *Client) Checkpoint(ctx context.Context, id string, req CheckpointRequest) (*contract.AgentCheckpoint, error) {
	var out contract.AgentCheckpoint
	if err := c.do(ctx, http.MethodPost, executionPath(id, "/checkpoints"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
