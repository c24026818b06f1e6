package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/agentjournal/agentjournal/api/wire"
)

// The transcript's bodies, as package wire declares them.
type (
	// Transcript is the answer of Transcript.
	Transcript = wire.Transcript
	// TranscriptEntry is one entry of a transcript.
	TranscriptEntry = wire.TranscriptEntry
)

// Transcript returns the transcript of an execution (GET
// /v1/executions/{id}/transcript): its journal told entry by entry.
func (c *Client) Transcript(ctx context.Context, id string) (*Transcript, error) {
	var t Transcript
	if err := c.do(ctx, http.MethodGet, executionPath(id, "/transcript"), url.Values{"format": {"json"}}, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TranscriptDocument writes the transcript of an execution to w, rendered
// by the daemon in format: text or markdown.
func (c *Client) TranscriptDocument(ctx context.Context, w io.Writer, id, format string) error {
	resp, err := c.Request(ctx, http.MethodGet, executionPath(id, "/transcript"), url.Values{"format": {format}}, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("read the transcript of %s: %w", id, err)
	}
	return nil
}
