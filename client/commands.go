package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/commands"
)

// Command resolves a slash command into one typed invocation and carries it
// out (POST /v1/executions/{id}/commands); with dryRun it only previews
// the invocation. Text that resolves to nothing is an ErrInvalidField
// whose message names the input shape expected.
func (c *Client) Command(ctx context.Context, id string, req CommandRequest, dryRun bool) (*CommandResult, error) {
	var q url.Values
	if dryRun {
		q = url.Values{"dryRun": {"true"}}
	}
	var out CommandResult
	if err := c.do(ctx, http.MethodPost, executionPath(id, "/commands"), q, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Commands lists the slash commands the execution offers whose name starts
// with prefix (GET /v1/executions/{id}/commands); focus "" is the prompt.
func (c *Client) Commands(ctx context.Context, id, prefix string, focus commands.Focus) ([]commands.Completion, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if focus != "" {
		q.Set("focus", string(focus))
	}
	var out wire.Completions
	err := c.do(ctx, http.MethodGet, executionPath(id, "/commands"), q, nil, &out)
	return out.Completions, err
}
