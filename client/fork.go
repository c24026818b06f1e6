package client

import (
	"context"
	"net/http"
)

// ForkRequest is the body of a fork.
type ForkRequest struct {
	// At is the parent's journal sequence the fork branches after (1 or
	// more).
	At uint64 `json:"at"`
	// Workspace is how the fork gets its working directory: keep (the
	// default, the parent's), snapshot (a worktree at the newest snapshot
	// at or before At) or discard (a new empty directory).
	Workspace string `json:"workspace,omitempty"`
	// Prompt is the fork's first instruction. Required when the agent gets
	// its history retold (every agent but Claude Code).
	Prompt string `json:"prompt,omitempty"`
	Seed   string `json:"seed,omitempty"`
	// Env is added to the fork's environment: the parent's is not
	// journaled.
	Env map[string]string `json:"env,omitempty"`
}

// ResumeRequest is the body of a resume.
type ResumeRequest struct {
	Prompt string            `json:"prompt,omitempty"`
	Seed   string            `json:"seed,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
}

// Fork launches a fork of execution id that branches off after its record
// in.At (POST /v1/executions/{id}/fork). Refused input is an *Error naming
// the field, with nothing written.
func (c *Client) Fork(ctx context.Context, id string, in ForkRequest) (Launched, error) {
	var out Launched
	err := c.do(ctx, http.MethodPost, executionPath(id, "/fork"), nil, in, &out)
	return out, err
}

// Resume launches a new run of execution id's session (POST
// /v1/executions/{id}/resume); ErrConflict while id still runs.
func (c *Client) Resume(ctx context.Context, id string, in ResumeRequest) (Launched, error) {
	var out Launched
	err := c.do(ctx, http.MethodPost, executionPath(id, "/resume"), nil, in, &out)
	return out, err
}
