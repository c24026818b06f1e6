package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
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
	return todosTable.print(ctx, c.env, args)
}

// Run implements Command.
func (c *ApprovalsCommand) Run(ctx context.Context, args []string) error {
	return approvalsTable.print(ctx, c.env, args)
}

// contractTable is one of the runtime contract's lists of an execution, as
// todos and approvals print it.
type contractTable[T any] struct {
	spec cmdSpec
	// list reads the list from the execution's records.
	list func([]eventstore.Record) []T
	// answer is what --json prints: the list as the API answers it.
	answer func([]T) any
	// header names the table's columns, tab-separated.
	header string
	// row is the cells of one entry, tab-separated.
	row func(T) string
}

var todosTable = contractTable[contract.AgentTodo]{
	spec:   todosSpec,
	list:   contract.Todos,
	answer: func(todos []contract.AgentTodo) any { return wire.Todos{Todos: todos} },
	header: "TODO\tSTATUS\tTEXT\tHISTORY",
	row: func(t contract.AgentTodo) string {
		var h []string
		for _, ch := range t.History {
			h = append(h, fmt.Sprintf("%s@%d", ch.Status, ch.Sequence))
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s", termSafe(t.TodoID), t.Status, termSafe(t.Text), strings.Join(h, " "))
	},
}

var approvalsTable = contractTable[contract.AgentApprovalCheckpoint]{
	spec:   approvalsSpec,
	list:   contract.Approvals,
	answer: func(approvals []contract.AgentApprovalCheckpoint) any { return wire.Approvals{Approvals: approvals} },
	header: "REQUEST\tKIND\tSTATUS\tBY\tAT\tQUESTION\tANSWER",
	row: func(a contract.AgentApprovalCheckpoint) string {
		at := "-"
		if a.ResolvedAt != nil {
			at = a.ResolvedAt.UTC().Format(time.RFC3339)
		}
		by := a.ResolvedBy
		if by == "" {
			by = "-"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", termSafe(a.ApprovalID), a.Kind, a.Status, by, at, termSafe(a.Question), termSafe(a.Answer))
	},
}

// print runs the command: it reads the list of the execution args name and
// prints it as JSON or as a table.
func (l contractTable[T]) print(ctx context.Context, env *Env, args []string) error {
	fs := l.spec.newFlagSet()
	asJSON := fs.Bool("json", false, "print JSON as the API answers")
	id, err := l.spec.parseID(fs, args)
	if err != nil {
		return err
	}
	recs, err := contractRecords(ctx, env, id)
	if err != nil {
		return err
	}
	list := l.list(recs)
	if list == nil {
		// The API answers an empty list, not null.
		list = []T{}
	}
	if *asJSON {
		return writeJSONSafe(env.Stdout, l.answer(list))
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, l.header)
	for _, v := range list {
		fmt.Fprintln(tw, l.row(v))
	}
	return tw.Flush()
}
