package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/commands"
)

// CmdCommand resolves a slash command in the daemon and carries it out.
type CmdCommand struct{ env *Env }

var cmdSpecOf = cmdSpec{
	Name: "cmd",
	Args: `ID "/COMMAND [ARGS]" [--dry-run] [--focus prompt|terminal] [--id NAME] [--list] [--json]`,
	Summary: `Resolve a slash command for the agent execution ID in the running daemon
into one typed invocation and carry it out: a Mission-native command
(/checkpoint [title], /blocked <reason>, /read <path>, /attach <path>,
/verify, /summarize-diff, /impact <symbol>), one of the execution's
cross-agent messages (/prompt <text>, /interrupt, /answer <text>) or one of
its adapter-scoped commands (declared by its adapter or advertised by the
agent). With --focus terminal, text nothing else claims is typed into the
terminal lane: transport evidence, never a journal record. --dry-run prints
the invocation without carrying it out. --list prints the commands the
execution offers whose name starts with the text (all without one). Text
that resolves to nothing fails with the input shape expected, and is
recorded as a diagnostic observation unless --dry-run. Giving --id makes a
retry safe: the same id records nothing new. See docs/commands.md.`,
	Example: `agentjournal cmd ae-0123456789abcdef01234567 "/impact Runtime" --dry-run`,
}

// Run implements Command.
func (c *CmdCommand) Run(ctx context.Context, args []string) error {
	fs := cmdSpecOf.newFlagSet()
	dry := fs.Bool("dry-run", false, "print the typed invocation without carrying it out")
	focusFlag := fs.String("focus", "prompt", "the lane typed in: `prompt` or terminal")
	list := fs.Bool("list", false, "list the commands offered for the text as a prefix")
	key := fs.String("id", "", "name the invocation `NAME` (letters, digits, . _ : -), so a retry is the same one")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, err := cmdSpecOf.parse(fs, args)
	if err != nil {
		return err
	}
	focus, err := commands.ParseFocus(*focusFlag)
	if err != nil {
		return cmdSpecOf.usageErr(fs, "--focus: %v", err)
	}
	switch {
	case len(pos) == 0:
		return cmdSpecOf.usageErr(fs, "missing the execution ID")
	case len(pos) == 1 && !*list:
		return cmdSpecOf.usageErr(fs, `missing the command text, e.g. "/checkpoint before the refactor"`)
	}
	id, text := pos[0], strings.Join(pos[1:], " ")
	if *list {
		ask := func(cl *client.Client) ([]commands.Completion, error) {
			cs, err := cl.Commands(ctx, id, text, focus)
			if err != nil {
				return nil, fmt.Errorf("cmd %s: %w", id, err)
			}
			return cs, nil
		}
		return askDaemon(ctx, c.env, *asJSON, ask, printCompletions)
	}
	ask := func(cl *client.Client) (*client.CommandResult, error) {
		res, err := cl.Command(ctx, id, client.CommandRequest{Text: text, Focus: focus, ID: *key}, *dry)
		if err != nil {
			return nil, fmt.Errorf("cmd %s: %w", id, err)
		}
		return res, nil
	}
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, res *client.CommandResult) error {
		inv := res.Invocation
		what := inv.Operation
		if inv.MessageType != "" {
			what += " (" + inv.MessageType + " message)"
		}
		if *dry {
			_, err := fmt.Fprintf(w, "%s %s, %s: would record %s\n", inv.Category, termSafe(what), inv.Portability, inv.Records)
			return err
		}
		seq := ""
		if res.Result.Sequence != 0 {
			seq = fmt.Sprintf(" at sequence %d", res.Result.Sequence)
		}
		_, err := fmt.Fprintf(w, "%s %s, %s: %s%s\n", inv.Category, termSafe(what), inv.Portability, termSafe(res.Result.Summary), seq)
		return err
	})
}

// printCompletions prints the commands cmd --list offers, one a line.
func printCompletions(w io.Writer, cs []commands.Completion) error {
	for _, cm := range cs {
		port := string(cm.Portability)
		if cm.AdapterID != "" {
			port += " (" + cm.AdapterID + ")"
		}
		if _, err := fmt.Fprintf(w, "%-28s %-18s %-28s %s\n", termSafe(cm.InputShape), cm.Category, termSafe(port), termSafe(cm.Description)); err != nil {
			return err
		}
	}
	return nil
}
