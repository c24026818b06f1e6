package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentjournal/agentjournal/eventstore"
)

// JournalVerifyCommand reads every journal whole and reports damage.
type JournalVerifyCommand struct {
	env *Env
}

var journalVerifySpec = cmdSpec{
	Name: "journal verify",
	Args: "[ID]",
	Summary: `Read every journal (or the one named) from its first record to its last and
report damage: records missing from a journal's sequence (a damaged or
truncated log file loses them; reads and replay then refuse the journal), and
records that do not decode. Prints one line per damaged journal and a
summary; exits 1 when a journal is damaged.

A damaged journal can be restored from an export ('journal export' writes
one, 'journal import' loads it into a fresh data directory).`,
	Example: "agentjournal journal verify\nagentjournal journal verify ae-0123456789abcdef01234567",
}

// errDamaged makes verify exit 1 after it has printed what it found.
var errDamaged = errors.New("the log is damaged")

// Run implements Command.
func (c *JournalVerifyCommand) Run(ctx context.Context, args []string) error {
	fs := journalVerifySpec.newFlagSet()
	pos, err := journalVerifySpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return journalVerifySpec.usageErr(fs, "too many arguments %q (want at most one execution ID)", pos)
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		var refs []eventstore.Reference
		if len(pos) == 1 {
			ref, err := s.Lookup(ctx, pos[0])
			if err != nil {
				return err
			}
			refs = []eventstore.Reference{ref}
		} else if refs, err = s.Journals(ctx); err != nil {
			return err
		}
		damaged, records := 0, 0
		for _, ref := range refs {
			n, problem := verifyJournal(ctx, s, ref)
			records += n
			if problem != "" {
				damaged++
				writeLine(c.env.Stdout, "damaged %s (journal %s): %s", ref.AgentExecutionID, ref.JournalID, problem)
			}
		}
		writeLine(c.env.Stdout, "%d journals, %d records read, %d damaged", len(refs), records, damaged)
		if damaged > 0 {
			return errDamaged
		}
		return nil
	})
}

// verifyJournal reads one journal whole: the records it read, and what is
// wrong with it ("" when nothing is).
func verifyJournal(ctx context.Context, s eventstore.Store, ref eventstore.Reference) (int, string) {
	n := 0
	var bad []string
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		switch {
		case errors.Is(err, eventstore.ErrGap):
			return n, err.Error()
		case err != nil && e.Record == nil && e.Offset == 0:
			return n, err.Error()
		case err != nil:
			bad = append(bad, fmt.Sprintf("the record at offset %d does not decode: %v", e.Offset, err))
		default:
			n++
		}
	}
	if len(bad) > 0 {
		return n, fmt.Sprintf("%s (and %d more)", bad[0], len(bad)-1)
	}
	return n, ""
}
