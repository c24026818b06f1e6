package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/agentjournal/agentjournal/narrative"
)

// NarrativeDocument writes the narrative of an execution (GET
// /v1/executions/{id}/narrative), or with session of the session id names
// (GET /v1/sessions/{id}/narrative), to w in format: md, html or json;
// with audit, Markdown and HTML list every line on its record instead of
// telling the story.
func (c *Client) NarrativeDocument(ctx context.Context, w io.Writer, id string, session bool, format string, audit bool) error {
	path := executionPath(id, "/narrative")
	if session {
		path = "/v1/sessions/" + url.PathEscape(id) + "/narrative"
	}
	q := url.Values{"format": {format}}
	if audit {
		q.Set("audit", "true")
	}
	resp, err := c.Request(ctx, http.MethodGet, path, q, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read the narrative of %s: %w", id, err)
	}
	return nil
}

// Narrative returns the narrative of an execution, or with session of the
// session id names, decoded from its JSON rendering.
func (c *Client) Narrative(ctx context.Context, id string, session bool) (*narrative.Narrative, error) {
	path := executionPath(id, "/narrative")
	if session {
		path = "/v1/sessions/" + url.PathEscape(id) + "/narrative"
	}
	var n narrative.Narrative
	if err := c.do(ctx, http.MethodGet, path, url.Values{"format": {"json"}}, nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}
