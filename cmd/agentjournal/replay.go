package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// ReplayCommand folds a journal into the execution's state as of a sequence.
type ReplayCommand struct {
	env *Env
}

var replaySpec = cmdSpec{
	Name: "replay",
	Args: "ID [--to-seq N] [--json]",
	Summary: `Rebuild the state of the agent execution ID from its journal alone, as of
journal sequence N (default: the whole journal), and print it with the records
that were applied. Replay is deterministic: the same records always give the
same state, whatever the process, terminal or projection files hold. The state
shows lifecycle, attention, activity, the open input request, the processed
message and observation ids, the latest activity and telemetry, the journal
metadata and the timeline. With --json, print {"state":…,"records":[…]}.`,
	Example: "agentjournal replay ae-0123456789abcdef01234567\n" +
		"agentjournal replay ae-0123456789abcdef01234567 --to-seq 12 --json",
}

// Run implements Command.
func (c *ReplayCommand) Run(ctx context.Context, args []string) error {
	fs := replaySpec.newFlagSet()
	toSeq := fs.Uint64("to-seq", 0, "replay up to and including journal sequence `N` (0 = all)")
	asJSON := fs.Bool("json", false, `print {"state":…,"records":[…]} as JSON`)
	id, err := replaySpec.parseID(fs, args)
	if err != nil {
		return err
	}
	return c.env.withJournal(ctx, id, func(s eventstore.Store, ref eventstore.Reference) error {
		var entries []eventstore.Entry
		for e, err := range s.ReadJournal(ctx, ref, 1) {
			if err != nil {
				return err
			}
			if *toSeq > 0 && e.Record.RecordBase().Sequence > *toSeq {
				break
			}
			entries = append(entries, e)
		}
		if *toSeq > ref.LastSequence && ref.LastSequence > 0 {
			return replaySpec.usageErr(fs, "--to-seq %d is past the end of the journal (its last sequence is %d)", *toSeq, ref.LastSequence)
		}
		records := make([]eventstore.Record, len(entries))
		for i, e := range entries {
			records[i] = e.Record
		}
		// A fork's state holds its parent's prefix, read through its link.
		upTo := uint64(math.MaxUint64)
		if *toSeq > 0 {
			upTo = *toSeq
		}
		st, err := execution.ReplayLineageTo(ctx, s, ref, upTo)
		if err != nil {
			return fmt.Errorf("replay %s: %w", id, err)
		}
		if *asJSON {
			return writeReplayJSON(c.env.Stdout, st, records)
		}
		if err := printJournal(c.env.Stdout, func(yield func(eventstore.Entry, error) bool) {
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
		}, false); err != nil {
			return err
		}
		fmt.Fprintln(c.env.Stdout)
		return printState(c.env.Stdout, st)
	})
}

func writeReplayJSON(w io.Writer, st *execution.State, records []eventstore.Record) error {
	raw := make([]json.RawMessage, len(records))
	for i, r := range records {
		data, err := eventstore.Encode(r)
		if err != nil {
			return err
		}
		raw[i] = data
	}
	out, err := json.MarshalIndent(struct {
		State   *execution.State  `json:"state"`
		Records []json.RawMessage `json:"records"`
	}{st, raw}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonSafe(out), '\n'))
	return err
}

// printState writes the human view of an execution's state, with the last
// lines of its plain output when given: a failed execution's right under
// its lifecycle, where the reason it failed is most often.
func printState(w io.Writer, st *execution.State, output ...outputlog.Entry) error {
	var b strings.Builder
	line := func(k, format string, args ...any) {
		writeLine(&b, "%-18s "+format, append([]any{k + ":"}, args...)...)
	}
	line("execution", "%s (%s/%s, agent %s)", st.ID, st.OwnerEntity, st.OwnerID, st.AgentID)
	lc := string(st.Lifecycle)
	if st.LifecycleReason != "" {
		lc += " (" + st.LifecycleReason + ")"
	}
	line("lifecycle", "%s", lc)
	printOutput := func(title string) {
		fmt.Fprintf(&b, "%s (last %d lines):\n", title, len(output))
		for _, e := range output {
			writeLine(&b, "  %-6s %s", e.Stream, e.Line)
		}
	}
	failed := st.Lifecycle == eventstore.LifecycleFailed && len(output) > 0
	if failed {
		printOutput("  output")
	}
	line("attention", "%s", st.Attention)
	if bl := st.Blocked; bl != nil {
		line("blocked by", "%s", quote(bl.Reason))
		if bl.Needs != "" {
			line("needs", "%s", quote(bl.Needs))
		}
	}
	line("activity", "%s", st.CurrentActivity())
	if id := st.CurrentInputRequestID; id != "" {
		req := st.LastInputRequest
		if req.RequestID != id {
			req = execution.InputRequest{}
		}
		what := ""
		if req.Kind == string(eventstore.InputPermission) && req.Tool != nil {
			what = " (permission to run " + clip(req.Tool.Name) + ")"
		}
		line("input request", "%s %s%s", id, quote(st.CurrentInputQuestion), what)
		for i, c := range req.Choices {
			writeLine(&b, "  %d. %s", i+1, clip(c))
		}
	}
	line("posture", "%s, terminal attached: %v", st.Posture, st.TerminalAttached)
	if d := st.ProtocolDescriptor; d.SessionShape != "" {
		line("session shape", "%s", d.SessionShape)
	}
	if !st.Usage.IsZero() {
		line("tokens", "%s", eventstore.TokenCounts(st.Usage.InputTokens, st.Usage.OutputTokens, st.Usage.TotalTokens))
	}
	if len(st.Plan) > 0 {
		fmt.Fprintf(&b, "plan (%d items):\n", len(st.Plan))
		for _, it := range st.Plan {
			writeLine(&b, "  [%s] %s", it.Status, clip(it.Text))
		}
	}
	line("journal", "%s, %d records, last sequence %d", st.Journal.JournalID, st.Journal.RecordCount, st.Journal.LastSequence)
	line("processed", "%d messages, %d observations, %d decisions", len(st.ProcessedMessages), len(st.ProcessedObservations), len(st.Decisions))
	if l := st.Latest; l.Sequence > 0 {
		var parts []string
		if l.Activity != "" {
			parts = append(parts, string(l.Activity))
		}
		if l.Progress != nil && l.Progress.Summary != "" {
			parts = append(parts, quote(l.Progress.Summary))
		}
		if l.CurrentTarget != nil {
			parts = append(parts, "target="+string(l.CurrentTarget.Kind)+":"+l.CurrentTarget.Path+l.CurrentTarget.Label)
		}
		// The tokens are said once, on their own line: the latest
		// update's count can be older than the usage folded since.
		if c := l.ToolCall; c != nil {
			call := "last call=" + c.Name + ":" + string(c.Status)
			if c.Error != "" {
				call += " " + quote(c.Error)
			}
			parts = append(parts, call)
		}
		line("latest activity", "%s (seq %d)", strings.Join(parts, " "), l.Sequence)
	}
	line("created", "%s", st.CreatedAt.Format(timeLayout))
	line("updated", "%s", st.UpdatedAt.Format(timeLayout))
	if st.EndedAt != nil {
		line("ended", "%s", st.EndedAt.Format(timeLayout))
	}
	fmt.Fprintf(&b, "timeline (%d items):\n", len(st.Timeline))
	for _, it := range st.Timeline {
		writeLine(&b, "  %4d  %-12s %s", it.Sequence, it.Kind, itemText(it))
	}
	if !failed && len(output) > 0 {
		printOutput("output")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
