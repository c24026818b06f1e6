package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/integrity"
)

// LogCommand prints the global log.
type LogCommand struct {
	env *Env
}

var logSpec = cmdSpec{
	Name: "log",
	Args: "[--from-offset N] [--limit N] [--follow] [--json]",
	Summary: `Print the global log: the records of every journal, interleaved in the order
they were stored. The offset is a record's position in that log, shared by all
journals; the sequence is its position in its own journal. Each line shows the
offset, the agentExecutionId, the sequence, the time, the record type and a
summary. With --json, print {"offset":N,"record":{...}} per line, the record
exactly as stored. With --follow, keep printing records as they are appended
until interrupted (Ctrl-C), or until --limit records were printed; beside a
running daemon, log asks it for new records every 200 ms.

A stored record that cannot be decoded (written by something other than
agentjournal, or by a newer version) is reported on stderr with its offset
and passed over; log then exits with status 1 once it has printed the rest.
So does a log that lost records (a damaged or truncated log file): offsets
the log skips or says it lost, and sequences a journal skips, are named on
stderr after what is there was printed ('journal verify' checks further).`,
	Example: "agentjournal log\nagentjournal log --from-offset 120 --limit 20 --json\nagentjournal log --follow",
}

// Run implements Command.
func (c *LogCommand) Run(ctx context.Context, args []string) error {
	fs := logSpec.newFlagSet()
	from := fs.Uint64("from-offset", 1, "start at log offset `N`")
	limit := fs.Int("limit", 0, "print at most `N` records (0 prints all)")
	asJSON := fs.Bool("json", false, `print {"offset":N,"record":{...}} per line`)
	follow := fs.Bool("follow", false, "keep printing records as they are appended")
	if err := logSpec.parseNone(fs, args, "log takes only flags"); err != nil {
		return err
	}
	if *limit < 0 {
		return logSpec.usageErr(fs, "--limit %d is negative (want 0 for all, or a positive count)", *limit)
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		bad := &undecodable{w: c.env.Stderr, tally: integrity.NewTally(*from)}
		var err error
		if *follow {
			err = followLog(ctx, c.env.Stdout, bad, s, *from, *limit, *asJSON)
		} else {
			err = printLog(ctx, c.env.Stdout, bad, s, *from, *limit, *asJSON)
		}
		return errors.Join(err, bad.err(), missing(context.WithoutCancel(ctx), c.env.Stderr, s, bad.tally))
	})
}

// errMissing makes log exit 1 after it has printed what is there.
var errMissing = errors.New("records are missing from the log (see above); 'agentjournal journal verify' checks every journal")

// missing names on w what the log lacks: what the read skipped (tally),
// and what the log's state says it lost, which through a daemon is the
// log's finding of the daemon's checks; errMissing when anything is.
func missing(ctx context.Context, w io.Writer, s eventstore.Store, tally *integrity.Tally) error {
	var lines []string
	for _, f := range tally.Findings() {
		lines = append(lines, f.String())
	}
	if dt, ok := s.(damageTeller); ok {
		found, err := dt.Damaged(ctx)
		if err != nil {
			return err
		}
		for _, l := range found {
			if damagedExecution(l) == "" {
				lines = append(lines, l)
			}
		}
	} else {
		found, err := integrity.Lost(ctx, s)
		if err != nil {
			return err
		}
		for _, f := range found {
			lines = append(lines, f.String())
		}
	}
	for _, l := range lines {
		writeLine(w, "agentjournal: missing: %s", l)
	}
	if len(lines) > 0 {
		return errMissing
	}
	return nil
}

// undecodable reports the records log passes over, and tallies what it
// reads for what is missing between them.
type undecodable struct {
	w     io.Writer
	count int
	tally *integrity.Tally
}

// skip reports err and returns true when it is a record that cannot be
// decoded, which log passes over (it holds its offset in the tally); other
// errors end log.
func (u *undecodable) skip(err error) bool {
	var oe *eventstore.OffsetError
	if !errors.As(err, &oe) {
		return false
	}
	u.tally.Add(eventstore.Entry{}, err)
	u.count++
	// The error may quote what a foreign writer stored.
	writeLine(u.w, "agentjournal: skipped the record at offset %d: %v", oe.Offset, oe.Err)
	return true
}

func (u *undecodable) err() error {
	if u.count == 0 {
		return nil
	}
	return fmt.Errorf("%d record(s) could not be decoded and were skipped (see above)", u.count)
}

// logEntry is one line of log --json.
type logEntry struct {
	Offset uint64          `json:"offset"`
	Record json.RawMessage `json:"record"`
}

func printLog(ctx context.Context, w io.Writer, bad *undecodable, s eventstore.Store, from uint64, limit int, asJSON bool) error {
	if !asJSON {
		fmt.Fprintf(w, "%6s  %-27s  %4s  %-24s  %-21s  %s\n", "OFFSET", "AGENT EXECUTION", "SEQ", "TIME", "TYPE", "SUMMARY")
	}
	n := 0
	for e, err := range s.ReadLog(ctx, from) {
		if bad.skip(err) {
			continue
		}
		if err != nil {
			return err
		}
		bad.tally.Add(e, nil)
		if err := writeLogEntry(w, e, asJSON); err != nil {
			return err
		}
		if n++; n == limit {
			break
		}
	}
	return nil
}

func writeLogEntry(w io.Writer, e eventstore.Entry, asJSON bool) error {
	if asJSON {
		data, err := eventstore.Encode(e.Record)
		if err != nil {
			return fmt.Errorf("encode record at offset %d: %w", e.Offset, err)
		}
		return writeJSONSafe(w, logEntry{Offset: e.Offset, Record: data})
	}
	b := e.Record.RecordBase()
	return writeLine(w, "%6d  %-27s  %4d  %-24s  %-21s  %s",
		e.Offset, b.AgentExecutionID, b.Sequence, b.OccurredAt.Format(timeLayout), b.Type, summarize(e.Record))
}

// follower is a store that can tail the log.
type follower interface {
	Follow(ctx context.Context, fromOffset uint64, maxBatch int) iter.Seq2[[]eventstore.Entry, error]
}

// followLog prints the log from an offset and then each record as it is
// appended, until ctx ends (Ctrl-C) or limit records were printed.
func followLog(ctx context.Context, w io.Writer, bad *undecodable, s eventstore.Store, from uint64, limit int, asJSON bool) error {
	f, ok := s.(follower)
	if !ok {
		return errors.New("this store cannot follow the log")
	}
	if !asJSON {
		fmt.Fprintf(w, "%6s  %-27s  %4s  %-24s  %-21s  %s\n", "OFFSET", "AGENT EXECUTION", "SEQ", "TIME", "TYPE", "SUMMARY")
	}
	n := 0
	for batch, err := range f.Follow(ctx, from, 256) {
		if bad.skip(err) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range batch {
			bad.tally.Add(e, nil)
			if err := writeLogEntry(w, e, asJSON); err != nil {
				return err
			}
			if n++; n == limit {
				return nil
			}
		}
		if fl, ok := w.(interface{ Flush() error }); ok {
			fl.Flush()
		}
	}
	return nil // ctx ended: following stops there, cleanly
}
