package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/agentjournal/agentjournal/lineage"
)

// Lineage returns execution id's lineage, with the snapshots of its
// working directory as of at (now when zero). An unknown id is ErrNotFound.
func (c *Client) Lineage(ctx context.Context, id string, at time.Time) (Lineage, error) {
	var q url.Values
	if !at.IsZero() {
		q = url.Values{"at": {at.UTC().Format(time.RFC3339Nano)}}
	}
	return doAs[Lineage](ctx, c, http.MethodGet, executionPath(id, "/lineage"), q, nil)
}

// Graph returns the agent DAG of the executions named, or of every
// journal when none is (GET /v1/graph).
func (c *Client) Graph(ctx context.Context, executionIDs ...string) (*lineage.Graph, error) {
	var g lineage.Graph
	if err := c.do(ctx, http.MethodGet, "/v1/graph", url.Values{"execution": executionIDs}, nil, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// GraphDOT writes the same graph in Graphviz's DOT language to w.
func (c *Client) GraphDOT(ctx context.Context, w io.Writer, executionIDs ...string) error {
	resp, err := c.Request(ctx, http.MethodGet, "/v1/graph", url.Values{"execution": executionIDs, "format": {lineage.FormatDOT}}, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read the graph: %w", err)
	}
	return nil
}

// EventOrigin returns the execution whose journal holds the record with
// the event id (GET /v1/events/{eventId}/origin). within, when not empty,
// narrows the search to that execution's lineage. A malformed id is
// ErrInvalidField, one no record has ErrNotFound.
func (c *Client) EventOrigin(ctx context.Context, eventID, within string) (lineage.Origin, error) {
	var q url.Values
	if within != "" {
		q = url.Values{"execution": {within}}
	}
	var o lineage.Origin
	err := c.do(ctx, http.MethodGet, "/v1/events/"+url.PathEscape(eventID)+"/origin", q, nil, &o)
	return o, err
}
