package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/transcript"
)

// TailCommand prints the daemon's live events.
type TailCommand struct{ env *Env }

var tailSpec = cmdSpec{
	Name: "tail",
	Args: "[-f] [--execution ID] [--from-offset N] [--events | --json]",
	Summary: `Print what the running daemon's executions do, as transcripts
(docs/transcript.md): for every record an execution's journal gets, the
lines it adds to the execution's transcript (the prompt, the agent's
messages, one line per tool call with its outcome, plans, questions and
answers, turn ends with tokens and time, the end), each line behind the
execution's short label, ae- and the first 8 hex digits of its id. Records
that tell a reader nothing (deliveries, decisions, heartbeats) print
nothing. Colours on a terminal, unless NO_COLOR is set.

--events prints the events themselves instead, one line per journal record:

  OFFSET  EVENT  EXECUTION  WHAT

OFFSET is the record's log offset, EVENT what it means (execution.started,
execution.updated, execution.message, execution.completed, execution.failed,
execution.cancelled, execution.terminated, or data.changed for a record that
means none of these), WHAT the record kind and journal sequence, or the text
of a message.

Without -f, tail prints the events of the log from --from-offset (default 1)
up to its end when tail starts, and exits. With -f it keeps printing new
events until Ctrl-C, from --from-offset or else from now; when the stream
drops (the daemon restarted, or tail fell behind) it reconnects and resumes
after the last event printed. --json prints each event as
{"id":OFFSET,"event":EVENT,"data":{…}}, every data.changed included.`,
	Example: "agentjournal tail\nagentjournal tail -f --execution ae-0123456789abcdef01234567\nagentjournal tail -f --events\nagentjournal tail --from-offset 120 --json",
}

// Event names tail treats apart.
const (
	eventDataChanged = client.EventDataChanged
	eventTerminal    = client.EventTerminal
	eventOverflow    = client.EventOverflow
)

// tailBackoff bounds the wait between reconnections; tailAttempts is how
// many times in a row tail without -f tries to read the stream.
const (
	tailBackoffFirst = 250 * time.Millisecond
	tailBackoffMax   = 5 * time.Second
	tailAttempts     = 3
)

// errOverflow reports a stream the daemon closed because tail fell
// behind.
var errOverflow = errors.New("the daemon closed the event stream: tail fell too far behind")

// Run implements Command.
func (c *TailCommand) Run(ctx context.Context, args []string) error {
	fs := tailSpec.newFlagSet()
	var follow bool
	fs.BoolVar(&follow, "f", false, "short for --follow")
	fs.BoolVar(&follow, "follow", false, "keep printing new events until Ctrl-C")
	executionID := fs.String("execution", "", "only the events of execution `ID`")
	from := fs.Uint64("from-offset", 0, "start with the record at log offset `N` (default: 1, or now with -f)")
	asJSON := fs.Bool("json", false, `print {"id":OFFSET,"event":EVENT,"data":{…}} per event`)
	events := fs.Bool("events", false, "print one line per event (OFFSET EVENT EXECUTION WHAT) instead of the transcripts")
	if err := tailSpec.parseNone(fs, args, "name an execution with --execution ID"); err != nil {
		return err
	}
	if *events && *asJSON {
		return tailSpec.usageErr(fs, "--events and --json: give one of them")
	}
	cl, err := c.env.daemon(ctx)
	if err != nil {
		return err
	}
	defer func() { cl.Close() }()
	h, err := cl.Health(ctx)
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	t := &tailer{env: c.env, out: &flushWriter{w: c.env.Stdout}, execution: *executionID, json: *asJSON, follow: follow,
		transcripts: !*asJSON && !*events}
	switch {
	case follow && *from == 0:
		// From now: the end of the log is where a dropped stream resumes
		// if no event came yet.
		t.last = h.LastOffset
	case follow:
		t.last = *from - 1
	default:
		t.end = h.LastOffset
		t.last = max(*from, 1) - 1
		if t.last >= t.end {
			return nil
		}
	}

	backoff, failures := tailBackoffFirst, 0
	for {
		before := t.last
		err := t.stream(ctx, cl)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if follow {
				return nil // Ctrl-C is how tail -f ends
			}
			return ctx.Err()
		case isAPIError(err):
			return fmt.Errorf("tail: %w", err)
		}
		if t.last != before {
			backoff, failures = tailBackoffFirst, 0
		}
		if failures++; !follow && failures >= tailAttempts {
			return fmt.Errorf("tail: read the event stream: %w", err)
		}
		fmt.Fprintf(c.env.Stderr, "agentjournal: tail: %v; resuming after offset %d\n", err, t.last)
		select {
		case <-ctx.Done():
			if follow {
				return nil
			}
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, tailBackoffMax)
		// The daemon may have restarted, on another address.
		if next, err := c.env.daemon(ctx); err == nil {
			cl.Close()
			cl = next
		} else if follow && ctx.Err() == nil {
			fmt.Fprintf(c.env.Stderr, "agentjournal: tail: waiting for the daemon: %v\n", err)
		}
	}
}

func isAPIError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae)
}

// tailer prints one tail's events and remembers where it is.
type tailer struct {
	env       *Env
	out       io.Writer
	execution string
	json      bool
	follow    bool
	// last is the offset of the last record whose events were read: a new
	// stream resumes after it.
	last uint64
	// end is the offset after which tail without -f stops.
	end uint64
	// named is the offset of the last named event printed; the
	// data.changed of the same record is not printed.
	named uint64
	// transcripts prints the executions' transcripts instead of the
	// events, each execution's told by its own writer.
	transcripts bool
	told        map[string]*toldExecution
}

// toldExecution is the transcript of one execution tail follows: its
// writer, and the sequence of the next record to read for it.
type toldExecution struct {
	w    *transcript.Writer
	next uint64
}

// stream reads one connection of the event stream. It returns nil when
// tail without -f has printed every event up to its end, and why the
// stream ended otherwise.
func (t *tailer) stream(ctx context.Context, cl *client.Client) error {
	// Tail without -f filters here, so that it sees every offset up to
	// its end.
	filter := ""
	if t.follow {
		filter = t.execution
	}
	s, err := cl.Events(ctx, client.EventsOptions{Execution: filter, After: t.last, Resume: true})
	if err != nil {
		return err
	}
	defer s.Close()
	return readStream(s, func(ev sseEvent) error { return t.event(ctx, cl, ev) }, func(text string) error {
		if !t.follow && text == "heartbeat" {
			// The daemon had nothing more to send: every event up to
			// the end has been read.
			return errStopEvents
		}
		return nil
	})
}

func (t *tailer) event(ctx context.Context, cl *client.Client, ev sseEvent) error {
	if ev.Name == eventOverflow {
		return errOverflow
	}
	var d client.EventData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return fmt.Errorf("event %s %s does not decode: %w", ev.ID, ev.Name, err)
	}
	ephemeral := ev.Name == eventTerminal
	if !t.follow && d.Offset > t.end {
		return errStopEvents
	}
	if !ephemeral {
		t.last = max(t.last, d.Offset)
	}
	if t.execution == "" || d.ExecutionID == t.execution {
		show := t.print
		if t.transcripts {
			show = func(ev sseEvent, d client.EventData) error { return t.tell(ctx, cl, ev, d) }
		}
		if err := show(ev, d); err != nil {
			return err
		}
	}
	// data.changed is the last event of each record.
	if !t.follow && ev.Name == eventDataChanged && d.Offset >= t.end {
		return errStopEvents
	}
	return nil
}

func (t *tailer) print(ev sseEvent, d client.EventData) error {
	if t.json {
		return writeJSONLine(t.out, struct {
			ID    uint64          `json:"id"`
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}{d.Offset, ev.Name, ev.Data})
	}
	if ev.Name == eventDataChanged && d.Offset == t.named && t.named != 0 {
		return nil
	}
	if ev.Name != eventDataChanged && ev.Name != eventTerminal {
		t.named = d.Offset
	}
	what := fmt.Sprintf("%s #%d", d.Record, d.Sequence)
	switch {
	case d.Message != nil:
		what = clip(d.Message.Text)
	case d.Terminal != nil:
		state := "closed"
		if d.Terminal.Available {
			state = "available"
		}
		what = fmt.Sprintf("terminal lane %s %s", d.Terminal.TerminalID, state)
	}
	return writeLine(t.out, "%8d  %-20s  %-27s  %s", d.Offset, ev.Name, d.ExecutionID, what)
}

// tell adds the records of d's execution up to d's record to the
// execution's transcript. The events name records; the records are read
// from the journal, from the first one not yet told: those a dropped
// stream skipped are told too, and an event of a record already told adds
// nothing.
func (t *tailer) tell(ctx context.Context, cl *client.Client, ev sseEvent, d client.EventData) error {
	if d.ExecutionID == "" || d.Sequence == 0 || ev.Name == eventTerminal {
		return nil
	}
	told := t.told[d.ExecutionID]
	if told == nil {
		if t.told == nil {
			t.told = map[string]*toldExecution{}
		}
		// An execution first seen mid-journal is told from there.
		told = &toldExecution{w: t.env.newTranscript(t.out, shortLabel(d.ExecutionID)), next: d.Sequence}
		t.told[d.ExecutionID] = told
	}
	for told.next <= d.Sequence {
		records, _, err := cl.Records(ctx, d.ExecutionID, told.next, int(min(d.Sequence-told.next+1, 1000)))
		if err != nil {
			return err
		}
		if len(records) == 0 {
			return nil
		}
		for _, r := range records {
			if err := told.w.Add(r); err != nil {
				return err
			}
			told.next = r.RecordBase().Sequence + 1
		}
	}
	return nil
}

// shortLabel is the label of an execution's lines where several are told
// at once: ae- and the first 8 hex digits of its id.
func shortLabel(id string) string {
	if len(id) > 11 {
		return id[:11]
	}
	return id
}
