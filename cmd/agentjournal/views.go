package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/transcript"
)

// withProjection opens the store and the projection file, brings the
// projection up to the end of the log, and runs fn. A damaged projection
// file is moved aside and rebuilt from the log, and the user is told.
func (e *Env) withProjection(ctx context.Context, fn func(eventstore.Store, *projections.DB) error) error {
	return e.withStore(ctx, func(s eventstore.Store) error {
		src, ok := s.(projections.Source)
		if !ok {
			return errors.New("this store cannot feed projections")
		}
		cfg := projections.DefaultConfig(e.layout().Projections())
		db, rebuilt, err := projections.OpenOrRebuild(ctx, cfg, src, nil)
		if err != nil {
			return fmt.Errorf("open the read models: %w", err)
		}
		defer db.Close()
		if rebuilt {
			fmt.Fprintf(e.Stderr, "agentjournal: the projection file %s could not be trusted (damaged, or written without syncing before the system restarted); it was moved aside and rebuilt from the log\n", cfg.Path)
		}
		return fn(s, db)
	})
}

// viewReader reads executions from a read model: the running daemon's, or
// the data directory's when no daemon runs. An unknown execution is
// projections.ErrNotFound and a bad filter projections.ErrInvalidFilter,
// whichever reads.
type viewReader interface {
	List(ctx context.Context, f projections.Filter) ([]projections.Summary, error)
	Execution(ctx context.Context, id string) (*execution.State, error)
	Timeline(ctx context.Context, id string, q projections.TimelineQuery) ([]execution.TimelineItem, uint64, error)
	// Transcript is the execution's own journal as transcript entries.
	Transcript(ctx context.Context, id string) ([]transcript.Entry, error)
}

var (
	_ viewReader = localViews{}
	_ viewReader = daemonViews{}
)

// withViews runs fn on the read model of the daemon that runs for the data
// directory, which holds the directory locked; without one, on the data
// directory's own read model.
func (e *Env) withViews(ctx context.Context, fn func(viewReader) error) error {
	cl, err := e.daemon(ctx)
	if errors.Is(err, errNoDaemon) {
		return e.withProjection(ctx, func(s eventstore.Store, db *projections.DB) error {
			return fn(localViews{db: db, store: s})
		})
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(daemonViews{cl})
}

// localViews reads the projection file of the data directory, and the
// journals of its store.
type localViews struct {
	db    *projections.DB
	store eventstore.Store
}

func (v localViews) Transcript(ctx context.Context, id string) ([]transcript.Entry, error) {
	ref, err := v.store.Lookup(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("transcript of %s: %w", id, err)
	}
	var records []eventstore.Record
	for e, err := range v.store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		records = append(records, e.Record)
	}
	return transcript.Entries(records), nil
}

func (v localViews) List(_ context.Context, f projections.Filter) ([]projections.Summary, error) {
	return v.db.List(f)
}

func (v localViews) Execution(_ context.Context, id string) (*execution.State, error) {
	return v.db.Execution(id)
}

func (v localViews) Timeline(_ context.Context, id string, q projections.TimelineQuery) ([]execution.TimelineItem, uint64, error) {
	return v.db.QueryTimeline(id, q)
}

// daemonViews reads through the daemon's API.
type daemonViews struct{ c *client.Client }

func (v daemonViews) Transcript(ctx context.Context, id string) ([]transcript.Entry, error) {
	t, err := v.c.Transcript(ctx, id)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}

func (v daemonViews) List(ctx context.Context, f projections.Filter) ([]projections.Summary, error) {
	list, err := v.c.List(ctx, client.ExecutionFilter(f))
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == client.CodeInvalidField {
		return nil, fmt.Errorf("%w: %s", projections.ErrInvalidFilter, ae.Message)
	}
	return list, err
}

func (v daemonViews) Execution(ctx context.Context, id string) (*execution.State, error) {
	ex, err := v.c.Execution(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &ex.State, nil
}

func (v daemonViews) Timeline(ctx context.Context, id string, q projections.TimelineQuery) ([]execution.TimelineItem, uint64, error) {
	items, next, err := v.c.QueryTimeline(ctx, id, client.TimelineQuery(q))
	return items, next, notFound(err)
}

// notFound maps the API's not_found to projections.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%w: %w", projections.ErrNotFound, err)
	}
	return err
}

// LsCommand lists executions from the read model.
type LsCommand struct{ env *Env }

var lsSpec = cmdSpec{
	Name: "ls",
	Args: "[--owner ENTITY[/ID]] [--lifecycle L] [--attention A] [--limit N] [--json]",
	Summary: `List agent executions, most recently active first: id, owner, agent,
lifecycle, attention, activity (while one runs on its own, what its latest
activity update says it does: executing a tool, editing), when it started
and when it last changed. Executions that need a person (attention awaiting-operator or blocked) are
marked with "!". The list comes from the read model, brought up to the end of
the log first; when a daemon runs for the data directory (and holds it
locked), from the daemon's. Filters combine.`,
	Example: "agentjournal ls\nagentjournal ls --attention awaiting-operator\nagentjournal ls --owner Task/t-42 --lifecycle running --json",
}

// Run implements Command.
func (c *LsCommand) Run(ctx context.Context, args []string) error {
	fs := lsSpec.newFlagSet()
	owner := fs.String("owner", "", "only executions of `ENTITY[/ID]` (e.g. Task or Task/t-42)")
	lifecycle := fs.String("lifecycle", "", "only executions in lifecycle `L` ("+joinEnum(eventstore.Lifecycles)+")")
	attention := fs.String("attention", "", "only executions with attention `A` ("+joinEnum(eventstore.Attentions)+")")
	limit := fs.Int("limit", 0, "at most `N` executions (0 = all)")
	asJSON := fs.Bool("json", false, "print one summary JSON object per line")
	if err := lsSpec.parseNone(fs, args, "ls takes only flags"); err != nil {
		return err
	}
	f := projections.Filter{Lifecycle: eventstore.Lifecycle(*lifecycle), Attention: eventstore.Attention(*attention), Limit: *limit}
	if *owner != "" {
		entity, id, _ := strings.Cut(*owner, "/")
		f.OwnerEntity, f.OwnerID = eventstore.OwnerEntity(entity), id
	}
	return c.env.withViews(ctx, func(views viewReader) error {
		list, err := views.List(ctx, f)
		if errors.Is(err, projections.ErrInvalidFilter) {
			return lsSpec.usageErr(fs, "%v", err)
		}
		if err != nil {
			return err
		}
		w := c.env.Stdout
		if *asJSON {
			for _, s := range list {
				if err := writeJSONSafe(w, s); err != nil {
					return err
				}
			}
			return nil
		}
		if len(list) == 0 {
			start := "run"
			if _, ok := views.(daemonViews); ok {
				start = "launch"
			}
			fmt.Fprintf(w, "No executions match. Run one with: %s %s -- <command>\n", c.env.hintPrefix(), start)
			return nil
		}
		fmt.Fprintf(w, "  %-27s  %-20s  %-12s  %-10s  %-17s  %-13s  %-19s  %s\n", "EXECUTION", "OWNER", "AGENT", "LIFECYCLE", "ATTENTION", "ACTIVITY", "STARTED", "LAST CHANGE")
		for _, s := range list {
			mark := " "
			if s.Attention == eventstore.AttentionAwaitingOperator || s.Attention == eventstore.AttentionBlocked {
				mark = "!"
			}
			writeLine(w, "%s %-27s  %-20s  %-12s  %-10s  %-17s  %-13s  %-19s  %s", mark, s.ID,
				textclip.Runes(string(s.OwnerEntity)+"/"+s.OwnerID, 20), textclip.Runes(s.AgentID, 12), s.Lifecycle, s.Attention,
				execution.CurrentActivity(s.Lifecycle, s.Attention, s.Activity, s.LatestActivity), s.CreatedAt.Local().Format("2006-01-02 15:04:05"), ago(s.UpdatedAt))
		}
		return nil
	})
}

func joinEnum[T ~string](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}

// ago says how long ago t was, coarsely.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

// showOutputLines is how many lines of plain output show prints.
const showOutputLines = 10

// ShowCommand prints one execution from the read model.
type ShowCommand struct{ env *Env }

var showSpec = cmdSpec{
	Name: "show",
	Args: "ID [--transcript] [--json]",
	Summary: `Show one agent execution as the read model holds it: lifecycle,
attention (for a blocked agent, what blocks it and what it needs), activity
(as ls says it), the open input request with its choices, numbered, the
tokens, latest activity, protocol posture, journal metadata, and its ten newest timeline
items, and the last lines of its plain output (see logs): for a failed
execution, right under its lifecycle. With --json, print the whole state.
When a daemon runs for the data directory, show asks it.

--transcript ends it with the execution's whole transcript
(docs/transcript.md): the prompt, the agent's messages, one line per tool
call with its outcome, plans, questions and answers, turn ends and the end.
It is not shown by default: an agent's answers can run to hundreds of lines,
which would push the state off the screen; tail and run print the same
lines as an execution goes.`,
	Example: "agentjournal show ae-0123456789abcdef01234567\nagentjournal show ae-0123456789abcdef01234567 --transcript",
}

// Run implements Command.
func (c *ShowCommand) Run(ctx context.Context, args []string) error {
	fs := showSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print the state as JSON")
	withTranscript := fs.Bool("transcript", false, "end with the execution's whole transcript")
	id, err := showSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if *withTranscript && *asJSON {
		return showSpec.usageErr(fs, "--transcript and --json: give one of them (the API's GET /v1/executions/{id}/transcript has the transcript as JSON)")
	}
	return c.env.withViews(ctx, func(views viewReader) error {
		st, err := views.Execution(ctx, id)
		if errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("no agent execution %q (list them with: %s ls)", id, c.env.hintPrefix())
		}
		if err != nil {
			return err
		}
		items, _, err := views.Timeline(ctx, id, projections.TimelineQuery{Limit: 10})
		if err != nil {
			return err
		}
		if *asJSON {
			st.Timeline = items
			out, err := json.MarshalIndent(st, "", "  ")
			if err != nil {
				return err
			}
			_, err = c.env.Stdout.Write(append(jsonSafe(out), '\n'))
			return err
		}
		// printState shows the timeline oldest first.
		for i := len(items) - 1; i >= 0; i-- {
			st.Timeline = append(st.Timeline, items[i])
		}
		output, err := c.env.lastOutput(ctx, views, id, showOutputLines)
		if err != nil {
			return err
		}
		if err := printState(c.env.Stdout, st, output...); err != nil || !*withTranscript {
			return err
		}
		entries, err := views.Transcript(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(c.env.Stdout, "transcript:")
		return transcript.Render(c.env.Stdout, entries, transcript.Options{Color: c.env.colorOutput()})
	})
}

// TimelineCommand pages an execution's timeline.
type TimelineCommand struct{ env *Env }

var timelineSpec = cmdSpec{
	Name: "timeline",
	Args: "ID [--before CURSOR] [--limit N] [--all] [--json]",
	Summary: `Print the timeline of an agent execution, newest first, one page at a
time: messages, agent signals (progress, status, questions with their request
and choices, blocked with what it needs, claims, failures), tool calls (what
each ran, how it ended, how long it took, the end of its output), decisions,
state changes, checkpoints, snapshots and interruptions. Decisions that change
nothing (record-only, emit-message) are left out unless --all is given. The
cursor of an item is its journal sequence; --before CURSOR shows the page of
items older than it, and the last line says which cursor gives the next page.
When a daemon runs for the data directory, timeline asks it.`,
	Example: "agentjournal timeline ae-0123456789abcdef01234567\nagentjournal timeline ae-0123456789abcdef01234567 --before 120 --limit 20",
}

// Run implements Command.
func (c *TimelineCommand) Run(ctx context.Context, args []string) error {
	fs := timelineSpec.newFlagSet()
	before := fs.Uint64("before", 0, "show items older than `CURSOR` (a journal sequence; 0 = from the newest)")
	limit := fs.Int("limit", projections.DefaultTimelineLimit, fmt.Sprintf("at most `N` items (1 to %d)", projections.MaxTimelineLimit))
	all := fs.Bool("all", false, "include the decisions that change nothing (record-only, emit-message)")
	asJSON := fs.Bool("json", false, `print {"items":[…],"next":CURSOR}`)
	id, err := timelineSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > projections.MaxTimelineLimit {
		return timelineSpec.usageErr(fs, "--limit %d is out of range (want 1 to %d)", *limit, projections.MaxTimelineLimit)
	}
	return c.env.withViews(ctx, func(views viewReader) error {
		items, next, err := views.Timeline(ctx, id, projections.TimelineQuery{Before: *before, Limit: *limit, All: *all})
		if errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("no agent execution %q (list them with: %s ls)", id, c.env.hintPrefix())
		}
		if err != nil {
			return err
		}
		w := c.env.Stdout
		if *asJSON {
			out, err := json.Marshal(struct {
				Items any    `json:"items"`
				Next  uint64 `json:"next"`
			}{items, next})
			if err != nil {
				return err
			}
			_, err = w.Write(append(jsonSafe(out), '\n'))
			return err
		}
		for _, it := range items {
			writeLine(w, "%6d  %-24s  %-12s  %s", it.Sequence, it.At.Format(timeLayout), it.Kind, itemText(it))
		}
		if next != 0 {
			more := ""
			if *all {
				more = " --all"
			}
			writeLine(w, "older items: %s timeline %s --before %d%s", c.env.hintPrefix(), id, next, more)
		}
		return nil
	})
}

// itemText is a timeline item's text with what its kind carries beside it:
// a question's request and numbered choices, what would unblock a blocked
// agent, the last line of a tool call's output.
func itemText(it execution.TimelineItem) string {
	text := clip(it.Text)
	if t := it.Tool; t != nil {
		if last := lastLine(t.Output); last != "" && !strings.Contains(t.Error, last) {
			text += " — " + clip(last)
		}
		return text
	}
	if it.Kind == execution.ItemNeedsInput && it.RequestID != "" {
		text += " [" + clip(it.RequestID) + "]"
	}
	parts := []string{text}
	if it.Kind == execution.ItemBlocked && it.Reason != "" && it.Reason != it.Text {
		parts = append(parts, "reason: "+clip(it.Reason))
	}
	if it.Needs != "" {
		parts = append(parts, "needs: "+clip(it.Needs))
	}
	if len(it.Choices) > 0 {
		choices := make([]string, len(it.Choices))
		for i, c := range it.Choices {
			choices[i] = fmt.Sprintf("%d. %s", i+1, clip(c))
		}
		parts = append(parts, "choices: "+strings.Join(choices, " | "))
	}
	return strings.Join(parts, " — ")
}

// RebuildCommand rebuilds the read models from the log.
type RebuildCommand struct{ env *Env }

var rebuildSpec = cmdSpec{
	Name: "rebuild",
	Args: "",
	Summary: `Build a fresh projection file from offset 1 of the log beside the live one,
check it, and swap it in, then the search index the same way. Use it after
projection code changed, or to start from a clean file. A progress bar shows
records/s and the time left. Readers of the live file keep working while the
new one is built. When a daemon runs for the data directory, the daemon
rebuilds and keeps serving meanwhile; interrupting the command cancels the
rebuild and leaves the live file as it was.`,
	Example: "agentjournal rebuild",
}

// Run implements Command.
func (c *RebuildCommand) Run(ctx context.Context, args []string) error {
	fs := rebuildSpec.newFlagSet()
	if err := rebuildSpec.parseNone(fs, args, "rebuild takes no arguments"); err != nil {
		return err
	}
	cl, err := c.env.daemon(ctx)
	switch {
	case err == nil:
		// The daemon holds the data directory and serves from the file: it
		// rebuilds while it keeps serving.
		defer cl.Close()
		return c.viaDaemon(ctx, cl)
	case !errors.Is(err, errNoDaemon):
		return err
	}
	return c.env.withStore(ctx, func(s eventstore.Store) error {
		src, ok := s.(projections.Source)
		if !ok {
			return errors.New("this store cannot feed projections")
		}
		cfg := projections.DefaultConfig(c.env.layout().Projections())
		live, _, err := projections.OpenOrRebuild(ctx, cfg, src, nil)
		if err != nil {
			return fmt.Errorf("open the read models: %w", err)
		}
		defer live.Close()
		start := time.Now()
		bar := newProgress(c.env.Stderr, "rebuild")
		var total uint64
		err = projections.Rebuild(ctx, src, live, func(done, all uint64) {
			total = all
			bar.update(done, all)
		})
		bar.finish()
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		if err := rebuildSearch(ctx, c.env, src); err != nil {
			return err
		}
		list, err := live.List(projections.Filter{})
		if err != nil {
			return err
		}
		el := time.Since(start)
		fmt.Fprintf(c.env.Stdout, "Rebuilt %s from %d records: %d executions in %s (%.0f records/s).\n",
			cfg.Path, total, len(list), el.Round(time.Millisecond), float64(total)/max(el.Seconds(), 1e-9))
		return nil
	})
}

// viaDaemon asks the running daemon to rebuild, following its progress.
func (c *RebuildCommand) viaDaemon(ctx context.Context, cl *client.Client) error {
	start := time.Now()
	bar := newProgress(c.env.Stderr, "rebuild")
	last, err := cl.Rebuild(ctx, func(l client.RebuildProgress) { bar.update(l.Done, l.Total) })
	bar.finish()
	if err != nil {
		return fmt.Errorf("rebuild (by the daemon at %s): %w", cl.URL(), err)
	}
	el := time.Since(start)
	fmt.Fprintf(c.env.Stdout, "The daemon rebuilt %s from %d records: %d executions in %s (%.0f records/s).\n",
		c.env.layout().Projections(), last.Total, *last.Executions, el.Round(time.Millisecond), float64(last.Total)/max(el.Seconds(), 1e-9))
	return nil
}

// progress wraps a progress bar on stderr that shows rate and time left.
type progress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
	set bool
}

func newProgress(w io.Writer, what string) *progress {
	return &progress{w: w, bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("records"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		// The bar redraws on every update. Its own spinner ticker reads
		// the bar's state without the bar's lock (a data race in
		// progressbar 3.19.1), so it is turned off.
		progressbar.OptionSetSpinnerChangeInterval(0),
	)}
}

func (p *progress) update(done, total uint64) {
	if !p.set && total > 0 {
		p.bar.ChangeMax64(int64(total))
		p.set = true
	}
	p.bar.Set64(int64(done))
}

func (p *progress) finish() { p.bar.Finish() }

// lastLine is the last line of a tool call's output that is not blank: a
// command says last how it ended.
func lastLine(output string) string {
	lines := strings.Split(strings.TrimRight(output, " \t\r\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
