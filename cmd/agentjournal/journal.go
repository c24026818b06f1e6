package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"strings"
	"text/tabwriter"

	"github.com/agentjournal/agentjournal/eventstore"
)

// timeLayout is RFC 3339 with milliseconds, the time column of every listing.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// JournalCommand dispatches "agentjournal journal <subcommand>".
type JournalCommand struct {
	env *Env
}

var journalSpec = cmdSpec{
	Name: "journal",
	Args: "<ls|cat|export|import> [flags] [args]",
	Summary: `Work with single journals. A journal is the ordered records of one agent
execution, named by its agentExecutionId.

  journal ls            list the journals
  journal cat ID        print one journal, record by record
  journal export ID     write one journal as a JSONL file
  journal import FILE   load a journal from a JSONL file
  journal verify [ID]   read every journal whole and report damage

Run 'agentjournal journal <subcommand> -h' for its flags.`,
	Example: "agentjournal journal ls\nagentjournal journal cat ae-0123456789abcdef01234567",
}

var journalSubcommands = []string{"ls", "cat", "export", "import", "verify"}

// Run implements Command.
func (c *JournalCommand) Run(ctx context.Context, args []string) error {
	fs := journalSpec.newFlagSet()
	if len(args) == 0 {
		return journalSpec.usageErr(fs, "missing subcommand (want one of: %s)", strings.Join(journalSubcommands, ", "))
	}
	var sub Command
	switch args[0] {
	case "ls":
		sub = &JournalLsCommand{env: c.env}
	case "cat":
		sub = &JournalCatCommand{env: c.env}
	case "export":
		sub = &JournalExportCommand{env: c.env}
	case "import":
		sub = &JournalImportCommand{env: c.env}
	case "verify":
		sub = &JournalVerifyCommand{env: c.env}
	default:
		if _, err := journalSpec.parse(fs, args); err != nil {
			return err // -h, or an unknown flag
		}
		return journalSpec.usageErr(fs, "unknown subcommand %q (want one of: %s)", args[0], strings.Join(journalSubcommands, ", "))
	}
	return sub.Run(ctx, args[1:])
}

// JournalLsCommand lists the journals.
type JournalLsCommand struct {
	env *Env
}

var journalLsSpec = cmdSpec{
	Name: "journal ls",
	Args: "[--json]",
	Summary: `List every journal, one line each: its agentExecutionId, its owner
(Entity/id), its record count and its journalId.`,
	Example: "agentjournal journal ls\nagentjournal journal ls --json | jq .agentExecutionId",
}

// Run implements Command.
func (c *JournalLsCommand) Run(ctx context.Context, args []string) error {
	fs := journalLsSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print one journal reference as JSON per line")
	if err := journalLsSpec.parseNone(fs, args, "journal ls takes no arguments"); err != nil {
		return err
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		refs, err := s.Journals(ctx)
		if err != nil {
			return err
		}
		return c.print(refs, *asJSON)
	})
}

func (c *JournalLsCommand) print(refs []eventstore.Reference, asJSON bool) error {
	w := c.env.Stdout
	if asJSON {
		for _, r := range refs {
			if err := writeJSONSafe(w, r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(refs) == 0 {
		_, err := fmt.Fprintf(w, "No journals in %s yet. Make one with: %s demo\n", c.env.DataDir, c.env.hintPrefix())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT EXECUTION\tOWNER\tRECORDS\tJOURNAL")
	for _, r := range refs {
		// Cell by cell: a tab in an id must not make a column.
		fmt.Fprintf(tw, "%s\t%s/%s\t%d\t%s\n", termSafe(r.AgentExecutionID), termSafe(string(r.OwnerEntity)),
			termSafe(r.OwnerID), r.RecordCount, termSafe(r.JournalID))
	}
	return tw.Flush()
}

// JournalCatCommand prints one journal.
type JournalCatCommand struct {
	env *Env
}

var journalCatSpec = cmdSpec{
	Name: "journal cat",
	Args: "ID [--from-seq N] [--json]",
	Summary: `Print the journal of the agent execution ID (its agentExecutionId, as
'journal ls' shows it), one record per line: journal sequence, log offset,
time, record type and a short summary of the record. With --json, print each
record exactly as stored, one JSON object per line.`,
	Example: "agentjournal journal cat ae-0123456789abcdef01234567\n" +
		"agentjournal journal cat ae-0123456789abcdef01234567 --from-seq 10 --json",
}

// Run implements Command.
func (c *JournalCatCommand) Run(ctx context.Context, args []string) error {
	fs := journalCatSpec.newFlagSet()
	fromSeq := fs.Uint64("from-seq", 1, "start at journal sequence `N`")
	asJSON := fs.Bool("json", false, "print the stored record JSON, one per line")
	id, err := journalCatSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	return c.env.withJournal(ctx, id, func(s eventstore.Store, ref eventstore.Reference) error {
		return printJournal(c.env.Stdout, s.ReadJournal(ctx, ref, *fromSeq), *asJSON)
	})
}

// parseID parses args for a command whose one positional argument is an ID.
func (s cmdSpec) parseID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := s.parse(fs, args)
	if err != nil {
		return "", err
	}
	return oneID(s, fs, pos)
}

// oneID checks that exactly one positional argument, the ID, was given.
func oneID(spec cmdSpec, fs *flag.FlagSet, pos []string) (string, error) {
	switch {
	case len(pos) == 0:
		return "", spec.usageErr(fs, "missing ID (want the agentExecutionId of a journal; 'agentjournal journal ls' lists them)")
	case len(pos) > 1:
		return "", spec.usageErr(fs, "too many arguments %q (want one ID)", pos)
	}
	return pos[0], nil
}

// lookup resolves an agentExecutionId to its journal, with a hint when
// there is none.
func lookup(ctx context.Context, s eventstore.Store, id string, env *Env) (eventstore.Reference, error) {
	ref, err := s.Lookup(ctx, id)
	if errors.Is(err, eventstore.ErrJournalNotFound) {
		return ref, fmt.Errorf("no journal for agent execution %q in %s (list them with: %s journal ls)", id, env.DataDir, env.hintPrefix())
	}
	return ref, err
}

// printJournal writes a journal's entries as journal cat shows them.
func printJournal(w io.Writer, es iter.Seq2[eventstore.Entry, error], asJSON bool) error {
	if !asJSON {
		fmt.Fprintf(w, "%4s  %6s  %-24s  %-21s  %s\n", "SEQ", "OFFSET", "TIME", "TYPE", "SUMMARY")
	}
	for e, err := range es {
		if err != nil {
			return err
		}
		if asJSON {
			if err := writeRecordJSON(w, e.Record); err != nil {
				return err
			}
			continue
		}
		b := e.Record.RecordBase()
		if err := writeLine(w, "%4d  %6d  %-24s  %-21s  %s",
			b.Sequence, e.Offset, b.OccurredAt.Format(timeLayout), b.Type, summarize(e.Record)); err != nil {
			return err
		}
	}
	return nil
}

// writeRecordJSON writes a record's stored JSON, made jsonSafe, and a
// newline.
func writeRecordJSON(w io.Writer, r eventstore.Record) error {
	data, err := eventstore.Encode(r)
	if err != nil {
		return fmt.Errorf("encode %s record %d: %w", r.Kind(), r.RecordBase().Sequence, err)
	}
	_, err = w.Write(append(jsonSafe(data), '\n'))
	return err
}

// writeJSONSafe writes v as one jsonSafe JSON line.
func writeJSONSafe(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonSafe(data), '\n'))
	return err
}
