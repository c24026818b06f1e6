package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentjournal/agentjournal/api/mcp"
)

// The environment variables the daemon sets for the agents it launches.
const (
	mcpURLEnv = "AGENTJOURNAL_MCP_URL"
	tokenEnv  = "AGENTJOURNAL_TOKEN"
)

// MCPCommand bridges an agent that speaks MCP on stdio to the daemon's
// MCP endpoint.
type MCPCommand struct{ env *Env }

var mcpSpec = cmdSpec{
	Name: "mcp",
	Args: "[--url URL] [--token TOKEN]",
	Summary: `Serve the agentjournal signal tools (signal_progress, signal_needs_input,
…) as an MCP server on stdin and stdout, for an agent that speaks MCP over
stdio only. Each tool call is forwarded to the daemon's MCP endpoint and
recorded in the agent's own journal; the answer carries the policy's decision.

The daemon sets ` + mcpURLEnv + ` and ` + tokenEnv + ` for every agent it
launches, so configuring "agentjournal mcp" as a stdio MCP server of the agent
is all it takes. The token is scoped to the agent's execution. --url and
--token override the environment (a token on the command line is visible to
other local users). mcp ends when stdin ends.`,
	Example: "agentjournal mcp\n" +
		`agentjournal mcp --url http://127.0.0.1:7600/mcp --token "$EXECUTION_TOKEN"`,
}

// Run implements Command.
func (c *MCPCommand) Run(ctx context.Context, args []string) error {
	fs := mcpSpec.newFlagSet()
	url := fs.String("url", "", "the daemon's MCP endpoint `URL` (default $"+mcpURLEnv+")")
	token := fs.String("token", "", "the execution's `TOKEN` (default $"+tokenEnv+")")
	if err := mcpSpec.parseNone(fs, args, "mcp takes only flags"); err != nil {
		return err
	}
	getenv := c.env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if *url == "" {
		*url = getenv(mcpURLEnv)
	}
	if *token == "" {
		*token = getenv(tokenEnv)
	}
	var missing []string
	if *url == "" {
		missing = append(missing, "$"+mcpURLEnv+" (or --url)")
	}
	if *token == "" {
		missing = append(missing, "$"+tokenEnv+" (or --token)")
	}
	switch len(missing) {
	case 1:
		return fmt.Errorf("mcp: %s is not set; the daemon sets %s and %s for the agents it launches (run the agent with: %s launch -- CMD ARGS...)",
			missing[0], mcpURLEnv, tokenEnv, c.env.hintPrefix())
	case 2:
		return fmt.Errorf("mcp: %s and %s are not set; the daemon sets them for the agents it launches (run the agent with: %s launch -- CMD ARGS...)",
			missing[0], missing[1], c.env.hintPrefix())
	}
	// Each answer must reach the agent as soon as it is written.
	return mcp.RunStdioBridge(ctx, *url, *token, c.env.Stdin, &flushWriter{w: c.env.Stdout})
}
