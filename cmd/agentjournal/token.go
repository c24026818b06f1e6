package main

import (
	"context"
	"fmt"
)

// TokenCommand prints the token scoped to one execution.
type TokenCommand struct{ env *Env }

var tokenSpec = cmdSpec{
	Name: "token",
	Args: "ID [--json]",
	Summary: `Print the token scoped to execution ID: the one its agent gets at launch in
AGENTJOURNAL_TOKEN. It is accepted only to record that execution's
observations (POST /v1/executions/ID/observations) and for MCP as its agent;
every other route refuses it with 403. Give it to a process that should
report as that agent (a hook, a wrapper, a sidecar) instead of the API
token, which can do everything. The token is derived from the execution id
and the daemon's secret (DATA/scoped-token.secret): asking again gives the same
token, and it stays valid until that secret is replaced. Needs a running
daemon.`,
	Example: "AGENTJOURNAL_TOKEN=$(agentjournal token ae-0123456789abcdef01234567) ./report-progress.sh\n" +
		"agentjournal token ae-0123456789abcdef01234567 --json",
}

// Run implements Command.
func (c *TokenCommand) Run(ctx context.Context, args []string) error {
	fs := tokenSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print {agentExecutionId, token, allows} as JSON")
	id, err := tokenSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	cl, err := c.env.daemon(ctx)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	defer cl.Close()
	grant, err := cl.ScopedToken(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSONSafe(c.env.Stdout, grant)
	}
	_, err = fmt.Fprintln(c.env.Stdout, grant.Token)
	return err
}
