package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/integrity"
	"github.com/agentjournal/agentjournal/projections"
)

// JournalVerifyCommand checks the log for damage and names what it finds.
type JournalVerifyCommand struct {
	env *Env
}

var journalVerifySpec = cmdSpec{
	Name: "journal verify",
	Args: "[ID]",
	Summary: `Check the log for damage (a damaged or truncated log file loses records) and
name every journal that lost records, or the one named: the offsets the log
says it lost, each journal's last record against the count the log keeps of
it, the read model's last applied record of each execution against the log
(the one witness of a journal whose newest records were lost), and a read of
each journal whole for sequences it skips and records that do not decode. Through a running daemon, what the daemon's own checks found is
named too. Prints one line per damaged journal (and one for the log when it
lost records it cannot place) and a summary; exits 1 when anything is
damaged.

A damaged journal takes no writes. It can be restored from an export
('journal export' writes one, 'journal import' loads it into a fresh data
directory).`,
	Example: "agentjournal journal verify\nagentjournal journal verify ae-0123456789abcdef01234567",
}

// errDamaged makes verify exit 1 after it has printed what it found.
var errDamaged = errors.New("the log is damaged")

// damageTeller is a store that can say what its daemon found damaged
// (daemonStore, from /healthz).
type damageTeller interface {
	Damaged(ctx context.Context) ([]string, error)
}

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
		only := ""
		if len(pos) == 1 {
			ref, err := s.Lookup(ctx, pos[0])
			if err != nil {
				return err
			}
			only = ref.AgentExecutionID
		}
		applied, closeApplied := c.env.readModel(s)
		defer closeApplied()
		var ids []string
		if only != "" {
			ids = []string{only}
		}
		rep, err := integrity.Deep(ctx, s, applied, ids...)
		if err != nil {
			return err
		}
		damaged := 0
		named := map[string]bool{}
		for _, f := range rep.Findings {
			if only != "" && f.AgentExecutionID != "" && f.AgentExecutionID != only {
				continue
			}
			damaged++
			named[f.AgentExecutionID] = true
			if f.AgentExecutionID == "" {
				writeLine(c.env.Stdout, "damaged log: %s", f)
			} else {
				writeLine(c.env.Stdout, "damaged %s (journal %s): %s", f.AgentExecutionID, f.JournalID, f)
			}
		}
		if dt, ok := s.(damageTeller); ok {
			found, err := dt.Damaged(ctx)
			if err != nil {
				return err
			}
			for _, line := range found {
				id := damagedExecution(line)
				if named[id] || only != "" && id != "" && id != only {
					continue
				}
				damaged++
				named[id] = true
				if id == "" {
					writeLine(c.env.Stdout, "damaged log: %s", line)
				} else {
					writeLine(c.env.Stdout, "damaged %s: %s", id, line)
				}
			}
		}
		writeLine(c.env.Stdout, "%d journals, %d records read, %d damaged", rep.Journals, rep.Records, damaged)
		if damaged > 0 {
			return errDamaged
		}
		return nil
	})
}

// damagedExecution is the execution a daemon's damage line names
// (integrity.Finding's text), "" for the log's.
func damagedExecution(line string) string {
	rest, ok := strings.CutPrefix(line, "execution ")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, " ")
	return id
}

// readModel opens the data directory's read model for the checks, when s
// is the log itself (no daemon serves it) and the read model is there; a
// read model that cannot be opened is said on stderr and left out, which
// leaves out the one witness of a lost tail.
func (e *Env) readModel(s eventstore.Store) (integrity.Applied, func()) {
	none := func() {}
	if _, local := s.(*eventstore.JetStreamStore); !local || e.NATSURL != "" {
		return nil, none
	}
	path := daemon.Layout{Dir: e.DataDir}.Projections()
	if _, err := os.Stat(path); err != nil {
		return nil, none
	}
	db, err := projections.Open(projections.DefaultConfig(path))
	if err != nil {
		writeLine(e.Stderr, "agentjournal: the read model is left out of the check (a journal that lost its newest records may go unnoticed): %v", err)
		return nil, none
	}
	return db, func() { db.Close() }
}
