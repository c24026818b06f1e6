package client

import (
	"context"
	"net/http"

	"github.com/agentjournal/agentjournal/contract"
)

// Todos returns the execution's todos in the runtime contract's shape
// (GET /v1/executions/{id}/todos).
func (c *Client) Todos(ctx context.Context, id string) ([]contract.AgentTodo, error) {
	var out struct {
		Todos []contract.AgentTodo `json:"todos"`
	}
	err := c.do(ctx, http.MethodGet, executionPath(id, "/todos"), nil, nil, &out)
	return out.Todos, err
}

// Approvals returns the execution's input and permission requests as
// approval checkpoints (GET /v1/executions/{id}/approvals).
func (c *Client) Approvals(ctx context.Context, id string) ([]contract.AgentApprovalCheckpoint, error) {
	var out struct {
		Approvals []contract.AgentApprovalCheckpoint `json:"approvals"`
	}
	err := c.do(ctx, http.MethodGet, executionPath(id, "/approvals"), nil, nil, &out)
	return out.Approvals, err
}
