package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/commands"
)

// CommandRequest is the body of Command.
type CommandRequest struct {
	// Text is the command as typed: "/checkpoint before the refactor".
	Text string `json:"text"`
	// Focus is "prompt" (the default) or "terminal": only with terminal
	// focus does text nothing else claims become raw terminal input.
	Focus commands.Focus `json:"focus,omitempty"`
	// ID names the invocation, so that a retry with the same id records
	// nothing new (1 to 100 letters, digits, '.', '_', ':', '-').
	ID string `json:"id,omitempty"`
}

// CommandResult answers Command: the typed invocation and, unless it was a
// dry run, what carrying it out recorded.
type CommandResult struct {
	Invocation *commands.Invocation  `json:"invocation"`
	DryRun     bool                  `json:"dryRun"`
	Result     *runtime.InvokeResult `json:"result,omitempty"`
}

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
	var out struct {
		Completions []commands.Completion `json:"completions"`
	}
	err := c.do(ctx, http.MethodGet, executionPath(id, "/commands"), q, nil, &out)
	return out.Completions, err
}
