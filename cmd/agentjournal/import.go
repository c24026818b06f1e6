package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
)

// JournalImportCommand loads a journal from a JSONL file.
type JournalImportCommand struct {
	env *Env
}

var journalImportSpec = cmdSpec{
	Name: "journal import",
	Args: "FILE",
	Summary: `Load one journal from FILE, a JSONL file with one record per line, as
'journal export' writes it. Every line is decoded and checked before anything
is written: the first line is the journal.header, every record belongs to the
same journal, sequences run 1..n without gaps, no record id repeats, every
record id derived from a natural key is this journal's (not one made for
another journal), no record is over the 1 MiB record size limit, and there
are no blank lines. Any
problem fails the import, names the line, and writes nothing.

Records keep their ids, times and sequences, and are written in one atomic
write: a daemon serving the same log (reached with --nats-url) never sees
part of the journal, and a failed import writes nothing. The log takes at
most 100000 records in one write. Importing a journal that is already stored
with the same records succeeds and writes nothing; a stored journal with
other records is refused. A journal that holds the first records of FILE
(an import interrupted before atomic writes) gets the rest.

Beside a running daemon FILE is checked here and then imported through the
daemon, the same way; the daemon takes a file of at most ` + strconv.Itoa(api.DefaultMaxImportBody>>20) + ` MiB (stop it to
import a larger one).`,
	Example: "agentjournal journal import ./backup/agent-journals/ae-0123456789abcdef01234567.interaction.jsonl",
}

// Run implements Command.
func (c *JournalImportCommand) Run(ctx context.Context, args []string) error {
	fs := journalImportSpec.newFlagSet()
	pos, err := journalImportSpec.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return journalImportSpec.usageErr(fs, "missing FILE (want a JSONL journal file, e.g. one written by 'agentjournal journal export')")
	case len(pos) > 1:
		return journalImportSpec.usageErr(fs, "too many arguments %q (want one FILE)", pos)
	}
	name := pos[0]
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	// Checked here, before the daemon or the log is asked: a bad file is
	// refused in the same words either way.
	records, err := journalfile.Read(f)
	if err != nil {
		return fmt.Errorf("import %s, nothing was imported: %w", name, err)
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		res, err := importRecords(ctx, s, records)
		if err != nil {
			return fmt.Errorf("import %s: %w", name, err)
		}
		ref, n := res.Reference, len(records)
		switch {
		case res.Written == 0:
			_, err = fmt.Fprintf(c.env.Stdout, "Journal of agent execution %s (%s/%s) is already imported: %d records, nothing written\n",
				termSafe(ref.AgentExecutionID), termSafe(string(ref.OwnerEntity)), termSafe(ref.OwnerID), n)
		case res.Written < n:
			_, err = fmt.Fprintf(c.env.Stdout, "Resumed the import of agent execution %s (%s/%s): wrote the remaining %d of %d records\n",
				termSafe(ref.AgentExecutionID), termSafe(string(ref.OwnerEntity)), termSafe(ref.OwnerID), res.Written, n)
		default:
			_, err = fmt.Fprintf(c.env.Stdout, "Imported %d records of agent execution %s (%s/%s)\n",
				n, termSafe(ref.AgentExecutionID), termSafe(string(ref.OwnerEntity)), termSafe(ref.OwnerID))
		}
		return err
	})
}
