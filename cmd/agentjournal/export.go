package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentjournal/agentjournal/eventstore"
)

// JournalExportCommand writes one journal in the file store layout.
type JournalExportCommand struct {
	env *Env
}

var journalExportSpec = cmdSpec{
	Name: "journal export",
	Args: "ID --out DIR",
	Summary: `Write the journal of the agent execution ID to
DIR/agent-journals/<escaped ID>.interaction.jsonl: one record per line, exactly
as stored, sequences 1..n. DIR is a journal file store (it also gets the store's
log index), so several journals can be exported into one DIR. An existing
export of the same journal in DIR is never overwritten, and a symbolic link in
DIR in the place of the journal directory or any of its files is refused, never
written through. 'journal import' reads the file back.`,
	Example: "agentjournal journal export ae-0123456789abcdef01234567 --out ./backup",
}

// Run implements Command.
func (c *JournalExportCommand) Run(ctx context.Context, args []string) error {
	fs := journalExportSpec.newFlagSet()
	out := fs.String("out", "", "write into the directory `DIR` (required)")
	id, err := journalExportSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return journalExportSpec.usageErr(fs, "missing --out DIR (want the directory to write the journal file into)")
	}
	return c.env.withJournal(ctx, id, func(s eventstore.Store, ref eventstore.Reference) error {
		n, err := exportJournal(ctx, s, ref, *out)
		if err != nil {
			return err
		}
		path := exportPath(*out, ref.AgentExecutionID)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(*out, "agent-journals") // the store shortened a very long name
		}
		_, err = fmt.Fprintf(c.env.Stdout, "Exported %d records of agent execution %s to %s\n", n, ref.AgentExecutionID, path)
		return err
	})
}

// exportJournal copies a journal from src into a file store under dir,
// keeping every record's id, time and sequence, and returns the record count.
// It refuses a dir that already holds a journal for the same execution.
func exportJournal(ctx context.Context, src eventstore.Store, ref eventstore.Reference, dir string) (n uint64, err error) {
	dst, err := eventstore.OpenFile(eventstore.FileConfig{Dir: dir, Sync: true})
	if err != nil {
		return 0, fmt.Errorf("export to %s: %w", dir, err)
	}
	defer func() { err = errors.Join(err, dst.Close()) }()
	switch existing, err := dst.Lookup(ctx, ref.AgentExecutionID); {
	case err == nil:
		return 0, fmt.Errorf("export to %s: %s already holds the journal of agent execution %s (%d records); refusing to overwrite it (choose another --out, or remove that export)",
			dir, exportPath(dir, ref.AgentExecutionID), ref.AgentExecutionID, existing.RecordCount)
	case !errors.Is(err, eventstore.ErrJournalNotFound):
		return 0, fmt.Errorf("export to %s: %w", dir, err)
	}
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return n, err
		}
		want := n + 1
		var stored eventstore.Reference
		if h, ok := e.Record.(*eventstore.Header); ok {
			stored, err = dst.EnsureJournal(ctx, ref, h)
		} else {
			var se eventstore.Entry
			se, err = dst.Append(ctx, ref, e.Record)
			stored.LastSequence = se.Record.RecordBase().Sequence
		}
		if err != nil {
			return n, fmt.Errorf("export to %s: %w", dir, err)
		}
		if stored.LastSequence != want {
			return n, fmt.Errorf("export to %s: record %s landed at sequence %d, want %d", dir, e.Record.RecordBase().RecordID, stored.LastSequence, want)
		}
		n++
	}
	return n, nil
}

// exportPath is where a file store under dir keeps an execution's journal.
func exportPath(dir, agentExecutionID string) string {
	esc, err := eventstore.EscapeID(agentExecutionID)
	if err != nil {
		esc = agentExecutionID
	}
	return filepath.Join(dir, "agent-journals", esc+".interaction.jsonl")
}
