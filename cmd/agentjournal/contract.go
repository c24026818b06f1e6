package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TodosCommand prints an execution's todos in the runtime contract's shape.
type TodosCommand struct {
	env *Env
}

// ApprovalsCommand prints an execution's approval checkpoints.
type ApprovalsCommand struct {
	env *Env
}

var todosSpec = cmdSpec{
	Name: "todos",
	Args: "ID [--json]",
	Summary: `Print the todos of the agent execution ID in the runtime contract's AgentTodo
shape, read from its journal's plan observations (Claude Code's TodoWrite,
Codex todo lists, ACP plans): each todo's id, status (open, in-progress, done
or dropped) and text, and every plan update that changed it with its record's
sequence. --json prints {"todos": [...]} as GET /v1/executions/{id}/todos
answers; see docs/contract.md.`,
	Example: "agentjournal todos ae-0123456789abcdef01234567 --json",
}

var approvalsSpec = cmdSpec{
	Name: "approvals",
	Args: "ID [--json]",
	Summary: `Print the approval checkpoints of the agent execution ID in the runtime
contract's AgentApprovalCheckpoint shape: every question and permission
request, its status (pending, answered, approved, denied or closed-by-run-end),
the answer, who gave it (operator, daemon, owner or system) and when. --json
prints {"approvals": [...]} as GET /v1/executions/{id}/approvals answers; see
docs/contract.md.`,
	Example: "agentjournal approvals ae-0123456789abcdef01234567",
}

// contractRecords reads the journal of id, through the daemon when one runs.
func contractRecords(ctx context.Context, env *Env, id string) ([]eventstore.Record, error) {
	var recs []eventstore.Record
	err := env.withJournals(ctx, func(s eventstore.Store) error {
		ref, err := s.Lookup(ctx, id)
		if errors.Is(err, eventstore.ErrJournalNotFound) || errors.Is(err, eventstore.ErrInvalidID) {
			return fmt.Errorf("no journal for agent execution %q in %s (list them with: %s journal ls)", id, env.DataDir, env.hintPrefix())
		}
		if err != nil {
			return err
		}
		for e, err := range s.ReadJournal(ctx, ref, 1) {
			if err != nil {
				return fmt.Errorf("read %s: %w", ref, err)
			}
			recs = append(recs, e.Record)
		}
		return nil
	})
	return recs, err
}

// Run implements Command.
func (c *TodosCommand) Run(ctx context.Context, args []string) error {
	fs := todosSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print JSON as the API answers")
	id, err := todosSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	recs, err := contractRecords(ctx, c.env, id)
	if err != nil {
		return err
	}
	todos := contract.Todos(recs)
	if todos == nil {
		todos = []contract.AgentTodo{}
	}
	if *asJSON {
		return writeJSONSafe(c.env.Stdout, map[string]any{"todos": todos})
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TODO\tSTATUS\tTEXT\tHISTORY")
	for _, t := range todos {
		var h []string
		for _, ch := range t.History {
			h = append(h, fmt.Sprintf("%s@%d", ch.Status, ch.Sequence))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(t.TodoID), t.Status, termSafe(t.Text), strings.Join(h, " "))
	}
	return tw.Flush()
}

// Run implements Command.
func (c *ApprovalsCommand) Run(ctx context.Context, args []string) error {
	fs := approvalsSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print JSON as the API answers")
	id, err := approvalsSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	recs, err := contractRecords(ctx, c.env, id)
	if err != nil {
		return err
	}
	approvals := contract.Approvals(recs)
	if approvals == nil {
		approvals = []contract.AgentApprovalCheckpoint{}
	}
	if *asJSON {
		return writeJSONSafe(c.env.Stdout, map[string]any{"approvals": approvals})
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tKIND\tSTATUS\tBY\tAT\tQUESTION\tANSWER")
	for _, a := range approvals {
		at := "-"
		if a.ResolvedAt != nil {
			at = a.ResolvedAt.UTC().Format(time.RFC3339)
		}
		by := a.ResolvedBy
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(a.ApprovalID), a.Kind, a.Status, by, at, termSafe(a.Question), termSafe(a.Answer))
	}
	return tw.Flush()
}
