package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/lineage"
)

// GraphCommand dispatches "agentjournal graph <subcommand>".
type GraphCommand struct {
	env *Env
}

var graphSpec = cmdSpec{
	Name: "graph",
	Args: "export [ID...] [--format json|dot]",
	Summary: `Work with the agent DAG built from the journals: agents, runs, records
named by their event ids, tool calls, working directories and snapshots,
joined by typed edges (docs/lineage.md).

  graph export [ID...]  write the graph of the executions, or of all, as JSON or DOT

Run 'agentjournal graph export -h' for its flags.`,
	Example: "agentjournal graph export --format dot | dot -Tsvg > journals.svg",
}

var graphSubcommands = []string{"export"}

// Run implements Command.
func (c *GraphCommand) Run(ctx context.Context, args []string) error {
	fs := graphSpec.newFlagSet()
	if len(args) == 0 {
		return graphSpec.usageErr(fs, "missing subcommand (want one of: %s)", strings.Join(graphSubcommands, ", "))
	}
	switch args[0] {
	case "export":
		return (&GraphExportCommand{env: c.env}).Run(ctx, args[1:])
	case "-h", "--help", "-help":
		return &helpRequest{text: graphSpec.help(fs)}
	}
	return graphSpec.usageErr(fs, "unknown subcommand %q (want one of: %s)", args[0], strings.Join(graphSubcommands, ", "))
}

// GraphExportCommand writes the graph of some executions, or all.
type GraphExportCommand struct {
	env *Env
}

var graphExportSpec = cmdSpec{
	Name: "graph export",
	Args: "[ID...] [--format json|dot]",
	Summary: `Write the agent DAG of the executions named, or of every journal when none
is, to stdout. Each record is a node named by its event id (sha256 of its
canonical JSON) with its execution and sequence; runs, agents, tool calls,
working directories and snapshots are nodes too. Edges are typed:
AGENT_HAS_RUN, RUN_HAS_EVENT (with the sequence), CALLS_TOOL and
RETURNS_RESULT (a tool call's start and end, paired by call id), FORKED_FROM
(a fork to the parent record it branches after), DERIVED_FROM (a fork or a
resume to the run it comes from), INTERRUPTS, SNAPSHOT_OF and RESTORES_TO.
A node outside the executions named that an edge reaches (a fork's parent)
is marked external. --format dot writes Graphviz DOT: runs are boxes, tool
calls diamonds, snapshots cylinders, external nodes dashed.`,
	Example: "agentjournal graph export\n" +
		"agentjournal graph export ae-0123456789abcdef01234567 --format dot > fork.dot",
}

// Run implements Command.
func (c *GraphExportCommand) Run(ctx context.Context, args []string) error {
	fs := graphExportSpec.newFlagSet()
	format := fs.String("format", lineage.FormatJSON, "`json` (nodes and edges) or dot (Graphviz)")
	ids, err := graphExportSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if !slices.Contains(lineage.Formats, *format) {
		return graphExportSpec.usageErr(fs, "--format %q (want one of: %s)", termSafe(*format), strings.Join(lineage.Formats, ", "))
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		g, err := lineage.Build(ctx, s, ids...)
		if err != nil {
			return lineageErr(err, c.env)
		}
		var buf bytes.Buffer
		if *format == lineage.FormatDOT {
			if err := lineage.WriteDOT(&buf, g); err != nil {
				return err
			}
		} else {
			data, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				return err
			}
			buf.Write(append(data, '\n'))
		}
		_, err = c.env.Stdout.Write(jsonSafe(buf.Bytes()))
		return err
	})
}

// lineageErr adds to an unknown execution where to list them.
func lineageErr(err error, env *Env) error {
	if errors.Is(err, lineage.ErrUnknownExecution) {
		return errors.New(termSafe(err.Error()) + " (list them with: " + env.hintPrefix() + " journal ls)")
	}
	return err
}
