package client

import (
	"context"
	"net/http"
)

// Queue returns the launches waiting in the daemon's queue (GET
// /v1/queue). Stop cancels one of them: it ends cancelled and never
// starts.
func (c *Client) Queue(ctx context.Context) (Queue, error) {
	return doAs[Queue](ctx, c, http.MethodGet, "/v1/queue", nil, nil)
}
