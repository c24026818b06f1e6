package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
)

// withJournals runs fn on the journals of the data directory: through the
// daemon that serves it, which holds the directory locked, when one runs;
// otherwise on the log itself, as withStore opens it. fn reads the same
// records either way, so a command prints the same. With --nats-url the
// log named there is read directly: joining it takes no lock.
func (e *Env) withJournals(ctx context.Context, fn func(eventstore.Store) error) error {
	if e.NATSURL == "" {
		cl, err := e.daemon(ctx)
		switch {
		case err == nil:
			defer cl.Close()
			return fn(&daemonStore{c: cl})
		case !errors.Is(err, errNoDaemon):
			return err
		}
	}
	return e.withStore(ctx, fn)
}

// withJournal calls fn with the store and the journal of the
// agentExecutionId id, as withJournals opens it; an unknown id is an error
// that says how to list the known ones.
func (e *Env) withJournal(ctx context.Context, id string, fn func(eventstore.Store, eventstore.Reference) error) error {
	return e.withJournals(ctx, func(s eventstore.Store) error {
		ref, err := lookup(ctx, s, id, e)
		if err != nil {
			return err
		}
		return fn(s, ref)
	})
}

// journalImporter is a store that imports whole journals itself: the
// daemon, which checks the file and writes it into its log in one write.
type journalImporter interface {
	ImportJournal(ctx context.Context, records []eventstore.Record) (journalfile.Result, error)
}

// importRecords imports a checked journal (journalfile.Read's records)
// into s: through the daemon when s is one, else straight into the log.
func importRecords(ctx context.Context, s eventstore.Store, records []eventstore.Record) (journalfile.Result, error) {
	if im, ok := s.(journalImporter); ok {
		return im.ImportJournal(ctx, records)
	}
	return journalfile.Import(ctx, s, records)
}

// errWholeJournals refuses a single append through the daemon.
var errWholeJournals = errors.New("the daemon takes whole journals only, through its import (POST /v1/journals); its runtime and policy append single records")

// daemonStore is the journal store as the daemon's API serves it: the
// same references, records, offsets and errors the commands read from the
// log without a daemon. It takes whole journals (ImportJournal); a single
// append is refused.
type daemonStore struct {
	c *client.Client
}

var (
	_ eventstore.Store = (*daemonStore)(nil)
	_ follower         = (*daemonStore)(nil)
	_ journalImporter  = (*daemonStore)(nil)
	_ damageTeller     = (*daemonStore)(nil)
)

// Journals implements eventstore.Store.
func (d *daemonStore) Journals(ctx context.Context) ([]eventstore.Reference, error) {
	refs, err := d.c.Journals(ctx)
	return refs, d.storeError(err)
}

// Lookup implements eventstore.Store.
func (d *daemonStore) Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error) {
	if _, err := eventstore.EscapeID(agentExecutionID); err != nil {
		// In the store's words: the daemon answers such an id as unknown.
		return eventstore.Reference{}, fmt.Errorf("look up %q: %w", agentExecutionID, err)
	}
	ref, err := d.c.Journal(ctx, agentExecutionID)
	return ref, d.storeError(err)
}

// Head implements eventstore.Store.
func (d *daemonStore) Head(ctx context.Context, ref eventstore.Reference) (eventstore.Reference, error) {
	return d.Lookup(ctx, ref.AgentExecutionID)
}

// ReadJournal implements eventstore.Store. The daemon reads a page at a
// time, so the records appended while the read goes on are read too.
func (d *daemonStore) ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error] {
	return d.entries(d.c.Entries(ctx, ref.AgentExecutionID, fromSeq))
}

// ReadLog implements eventstore.Store.
func (d *daemonStore) ReadLog(ctx context.Context, fromOffset uint64) iter.Seq2[eventstore.Entry, error] {
	return d.entries(d.c.LogEntries(ctx, fromOffset))
}

func (d *daemonStore) entries(es iter.Seq2[client.LogEntry, error]) iter.Seq2[eventstore.Entry, error] {
	return func(yield func(eventstore.Entry, error) bool) {
		for e, err := range es {
			if !yield(eventstore.Entry{Offset: e.Offset, Record: e.Record}, d.storeError(err)) {
				return
			}
		}
	}
}

// Follow tails the log through the daemon, asking it for new records every
// client.DefaultFollowPoll. A batch holds what one page held, whatever
// maxBatch.
func (d *daemonStore) Follow(ctx context.Context, fromOffset uint64, _ int) iter.Seq2[[]eventstore.Entry, error] {
	return func(yield func([]eventstore.Entry, error) bool) {
		for batch, err := range d.c.FollowLog(ctx, fromOffset, 0) {
			var es []eventstore.Entry
			for _, e := range batch {
				es = append(es, eventstore.Entry{Offset: e.Offset, Record: e.Record})
			}
			if !yield(es, d.storeError(err)) {
				return
			}
		}
	}
}

// ImportJournal implements journalImporter: records go to the daemon as a
// journal file.
func (d *daemonStore) ImportJournal(ctx context.Context, records []eventstore.Record) (journalfile.Result, error) {
	var file bytes.Buffer
	if err := journalfile.Write(&file, records); err != nil {
		return journalfile.Result{}, err
	}
	res, err := d.c.ImportJournal(ctx, &file)
	if err != nil {
		return journalfile.Result{}, d.storeError(err)
	}
	return journalfile.Result{Reference: res.Journal, Records: res.Records, Written: res.Written}, nil
}

// EnsureJournal implements eventstore.Store: refused, see errWholeJournals.
func (d *daemonStore) EnsureJournal(_ context.Context, ref eventstore.Reference, _ *eventstore.Header) (eventstore.Reference, error) {
	return ref, fmt.Errorf("create %s through the daemon at %s: %w", ref, d.c.URL(), errWholeJournals)
}

// Append implements eventstore.Store: refused, see errWholeJournals.
func (d *daemonStore) Append(_ context.Context, ref eventstore.Reference, _ eventstore.Record) (eventstore.Entry, error) {
	return eventstore.Entry{}, fmt.Errorf("append to %s through the daemon at %s: %w", ref, d.c.URL(), errWholeJournals)
}

// Close implements eventstore.Store; withJournals closes the client.
func (d *daemonStore) Close() error { return nil }

// Damaged is what the daemon's checks found damaged (/healthz).
func (d *daemonStore) Damaged(ctx context.Context) ([]string, error) {
	h, err := d.c.Health(ctx)
	if err != nil {
		return nil, fmt.Errorf("ask the daemon what it found damaged: %w", err)
	}
	return h.Damaged, nil
}

// storeError turns the daemon's answers that carry the store's own words
// (an unknown journal, a damaged one, a conflicting import, a record or
// file over its limit) into those words alone, so that a command prints
// them as it does without a daemon; errors.Is still matches the store's
// sentinel and the client's. Other answers name the daemon.
func (d *daemonStore) storeError(err error) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case client.CodeNotFound:
		return &storeAnswer{answer: ae, sentinel: eventstore.ErrJournalNotFound}
	case client.CodeDamaged:
		return &storeAnswer{answer: ae, sentinel: eventstore.ErrGap}
	case client.CodeConflict:
		return &storeAnswer{answer: ae, sentinel: eventstore.ErrConflict}
	case client.CodeTooLarge:
		return &storeAnswer{answer: ae, sentinel: client.ErrTooLarge}
	}
	return fmt.Errorf("the daemon at %s: %w", d.c.URL(), err)
}

// storeAnswer is an answer of the daemon in the store's words.
type storeAnswer struct {
	answer   *client.Error
	sentinel error
}

func (e *storeAnswer) Error() string   { return e.answer.Message }
func (e *storeAnswer) Unwrap() []error { return []error{e.sentinel, e.answer} }
