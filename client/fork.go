package client

import (
	"context"
	"net/http"
)

// Fork launches a fork of execution id that branches off after its record
// in.At (POST /v1/executions/{id}/fork). Refused input is an *Error naming
// the field, with nothing written.
func (c *Client) Fork(ctx context.Context, id string, in ForkRequest) (Launched, error) {
	return doAs[Launched](ctx, c, http.MethodPost, executionPath(id, "/fork"), nil, in)
}

// Resume launches a new run of execution id's session (POST
// /v1/executions/{id}/resume); ErrConflict while id still runs.
func (c *Client) Resume(ctx context.Context, id string, in ResumeRequest) (Launched, error) {
	return doAs[Launched](ctx, c, http.MethodPost, executionPath(id, "/resume"), nil, in)
}
