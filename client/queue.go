package client

import (
	"context"
	"net/http"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// QueuedRun is a queued or scheduled launch that has not started.
type QueuedRun struct {
	// Position is 1 for the run that starts next.
	Position         int                        `json:"position"`
	AgentExecutionID string                     `json:"agentExecutionId"`
	Journal          eventstore.Reference       `json:"journal"`
	Agent            string                     `json:"agent"`
	QueuedAt         time.Time                  `json:"queuedAt"`
	ScheduledFor     string                     `json:"scheduledFor,omitempty"`
	DispatchContext  eventstore.DispatchContext `json:"dispatchContext"`
}

// Queue is the daemon's queue of launches waiting to start.
type Queue struct {
	// Queued lists the waiting runs, the next one first.
	Queued []QueuedRun `json:"queued"`
	// MaxRunning is the daemon's limit of running agents, and Running
	// the executions live in it now.
	MaxRunning int `json:"maxRunning"`
	Running    int `json:"running"`
}

// Queue returns the launches waiting in the daemon's queue (GET
// /v1/queue). Stop cancels one of them: it ends cancelled and never
// starts.
func (c *Client) Queue(ctx context.Context) (Queue, error) {
	var out Queue
	err := c.do(ctx, http.MethodGet, "/v1/queue", nil, nil, &out)
	return out, err
}
