package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/acpserver"
	"github.com/agentjournal/agentjournal/eventstore"
)

// ACPCommand serves the daemon's executions to an editor over the Agent
// Client Protocol on stdin and stdout.
type ACPCommand struct{ env *Env }

var acpSpec = cmdSpec{
	Name: "acp",
	Args: "[--agent NAME] [--owner ENTITY/ID] [-- CMD ARGS...]",
	Summary: `Speak the Agent Client Protocol as an agent on stdin and stdout, so that an
editor (Zed's agent_servers, or any ACP client) opens journaled executions of
the running daemon: session/new launches an execution (of --agent and the
command after --, unless the request's _meta.agentjournal names another), the
session id is its execution id, a prompt is a message and its answer comes
when the journal records the turn's end, the execution's records stream as
session/update, its questions and permission requests go to the editor as
session/request_permission and the pick is recorded as the operator's
answer, session/cancel interrupts, session/list lists executions and
session/load replays a journal from its start, then follows it while it runs.
Needs a running daemon; it launches nothing of its own. stdout carries the
protocol only: logs go to stderr. See docs/acp.md.`,
	Example: "agentjournal acp --agent claude-code\n" +
		"agentjournal acp --owner Task/t-42 -- ./my-agent --flag\n" +
		`Zed settings: "agent_servers": {"agentjournal": {"command": "agentjournal", "args": ["acp", "--agent", "codex"]}}`,
}

// Run implements Command.
func (c *ACPCommand) Run(ctx context.Context, args []string) error {
	fs := acpSpec.newFlagSet()
	agent := fs.String("agent", "", "the agent adapter `NAME` session/new launches, one of "+strings.Join(runtime.Adapters(), ", ")+
		" (default generic with a command after --, else none: each session/new names its agent)")
	owner := fs.String("owner", "System/acp", "the owning `ENTITY/ID` of the executions launched; ENTITY is one of "+ownerEntityList()+
		"; session/list lists that owner's executions only when given")
	command, err := acpSpec.parseCommand(fs, args)
	if err != nil {
		return err
	}
	entity, ownerID, ok := strings.Cut(*owner, "/")
	ownerEntity, err := eventstore.ParseOwnerEntity(entity)
	if !ok || ownerID == "" || err != nil {
		return acpSpec.usageErr(fs, "--owner %q: want ENTITY/ID with ENTITY one of %s, e.g. Task/t-42", *owner, ownerEntityList())
	}
	if *agent == "" && len(command) > 0 {
		*agent = "generic"
	}
	if *agent != "" && !slices.Contains(runtime.Adapters(), *agent) {
		return acpSpec.usageErr(fs, "--agent %q: want one of %s", *agent, strings.Join(runtime.Adapters(), ", "))
	}
	cl, err := c.env.daemon(ctx)
	if err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	defer cl.Close()
	version := "dev"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	ownerGiven := false
	fs.Visit(func(f *flag.Flag) { ownerGiven = ownerGiven || f.Name == "owner" })
	cfg := acpserver.Config{Agent: *agent, Command: command, OwnerEntity: ownerEntity, OwnerID: ownerID, ListOwned: ownerGiven, Version: version,
		Logger: slog.New(slog.NewTextHandler(c.env.Stderr, nil))}
	// Each message must reach the editor as soon as it is written.
	return acpserver.Serve(ctx, cl, cfg, c.env.Stdin, &flushWriter{w: c.env.Stdout})
}
