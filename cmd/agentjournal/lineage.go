package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/lineage"
)

// LineageCommand answers the lineage queries of one execution, or finds
// where a record was first written.
type LineageCommand struct {
	env *Env
}

var lineageSpec = cmdSpec{
	Name: "lineage",
	Args: "ID [--history] [--at TIME] [--json] | --event EVENTID [ID]",
	Summary: `Show where the agent execution ID stands among its forks and resumes: its
ancestry (the chain of forks and resumes up, nearest first, with the parent
record each fork branches after), the whole fork tree from its topmost
ancestor with ID marked *, its tool calls paired with their results, and the
snapshots of its working directory taken at or before --at (default now).
With --history, also its records in order with their event ids, a fork's
inherited prefix first and marked "inherited". With --json, print what GET
/v1/executions/{id}/lineage answers.

With --event EVENTID, print the execution whose journal holds that record
(where it was first written; a fork only inherits it). Given ID too, only
ID's lineage is searched, which is faster than every journal.`,
	Example: "agentjournal lineage ae-0123456789abcdef01234567 --history\n" +
		"agentjournal lineage --event sha256:3f1c…",
}

// lineageReport is the lineage as the API answers it.
type lineageReport struct {
	*lineage.Lineage
	History   []lineage.HistoryItem  `json:"history"`
	ToolCalls []lineage.ToolCallPair `json:"toolCalls"`
	Snapshots struct {
		Resource string             `json:"resource"`
		At       time.Time          `json:"at"`
		Items    []lineage.Snapshot `json:"items"`
	} `json:"snapshots"`
}

// Run implements Command.
func (c *LineageCommand) Run(ctx context.Context, args []string) error {
	fs := lineageSpec.newFlagSet()
	history := fs.Bool("history", false, "also print the run's records in order, with their event ids")
	atFlag := fs.String("at", "", "the `TIME` (RFC 3339) of the snapshots shown (default now)")
	event := fs.String("event", "", "print where the record with this `EVENTID` was first written")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := lineageSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if *event != "" {
		if len(pos) > 1 {
			return lineageSpec.usageErr(fs, "too many arguments %q (want at most one ID to search within)", pos)
		}
		if err := lineage.CheckEventID(*event); err != nil {
			return lineageSpec.usageErr(fs, "--event: %s", termSafe(strings.TrimPrefix(err.Error(), "lineage: ")))
		}
		return c.origin(ctx, *event, strings.Join(pos, ""), *asJSON)
	}
	id, err := oneID(lineageSpec, fs, pos)
	if err != nil {
		return err
	}
	at := time.Now().UTC()
	if *atFlag != "" {
		if at, err = time.Parse(time.RFC3339Nano, *atFlag); err != nil {
			return lineageSpec.usageErr(fs, "--at %q (want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z)", termSafe(*atFlag))
		}
	}
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		rep, err := lineageOf(ctx, s, id, at)
		if err != nil {
			return lineageErr(err, c.env)
		}
		if *asJSON {
			data, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return err
			}
			_, err = c.env.Stdout.Write(jsonSafe(append(data, '\n')))
			return err
		}
		return printLineage(c.env.Stdout, rep, *history)
	})
}

// lineageOf answers the queries the API's lineage route answers, from s.
func lineageOf(ctx context.Context, s eventstore.Store, id string, at time.Time) (*lineageReport, error) {
	idx, err := lineage.ScanIndex(ctx, s)
	if err != nil {
		return nil, err
	}
	fam, err := lineage.Family(ctx, s, idx, id)
	if err != nil {
		return nil, err
	}
	h, err := lineage.History(ctx, s, id)
	if err != nil {
		return nil, err
	}
	g, err := lineage.Build(ctx, s, append([]string{fam.Root}, fam.Tree.Descendants()...)...)
	if err != nil {
		return nil, err
	}
	rep := &lineageReport{Lineage: fam, History: h.Items, ToolCalls: h.ToolCalls}
	rep.Snapshots.At, rep.Snapshots.Items = at, []lineage.Snapshot{}
	if n, ok := g.Node(lineage.RunNodeID(id)); ok && n.Attrs["workingDirectory"] != "" {
		rep.Snapshots.Resource = n.Attrs["workingDirectory"]
		rep.Snapshots.Items = g.SnapshotsOf(rep.Snapshots.Resource, at)
	}
	return rep, nil
}

func printLineage(w io.Writer, rep *lineageReport, history bool) error {
	lines := []string{fmt.Sprintf("execution %s", rep.ExecutionID), "ancestors:"}
	if len(rep.Ancestors) == 0 {
		lines = append(lines, "  (none: it is neither a fork nor a resume)")
	}
	for _, a := range rep.Ancestors {
		if a.Relation == lineage.RelationFork {
			lines = append(lines, fmt.Sprintf("  %s  fork after sequence %d (%s)", a.ExecutionID, a.Sequence, a.EventID))
		} else {
			lines = append(lines, fmt.Sprintf("  %s  resumed", a.ExecutionID))
		}
	}
	lines = append(lines, "tree (* marks "+rep.ExecutionID+"):")
	var walk func(n *lineage.TreeNode, depth int)
	walk = func(n *lineage.TreeNode, depth int) {
		s := strings.Repeat("  ", depth+1) + n.ExecutionID
		switch n.Relation {
		case lineage.RelationFork:
			s += fmt.Sprintf("  fork after %d", n.Sequence)
		case lineage.RelationResume:
			s += "  resume"
		}
		if n.Current {
			s += "  *"
		}
		lines = append(lines, s)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(rep.Tree, 0)
	lines = append(lines, "tool calls:")
	if len(rep.ToolCalls) == 0 {
		lines = append(lines, "  (none)")
	}
	ref := func(r *lineage.EventRef) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%s/%d", r.ExecutionID, r.Sequence)
	}
	for _, t := range rep.ToolCalls {
		s := fmt.Sprintf("  %s  %s  %s  call %s  result %s", t.CallID, t.Tool, t.Status, ref(t.Call), ref(t.Result))
		if t.Inherited {
			s += "  inherited"
		}
		lines = append(lines, s)
	}
	if rep.Snapshots.Resource != "" {
		lines = append(lines, fmt.Sprintf("snapshots of %s at %s:", rep.Snapshots.Resource, rep.Snapshots.At.Format(timeLayout)))
		if len(rep.Snapshots.Items) == 0 {
			lines = append(lines, "  (none)")
		}
		for _, sn := range rep.Snapshots.Items {
			lines = append(lines, fmt.Sprintf("  %s  %s  by %s", sn.At.Format(timeLayout), sn.Ref, sn.ExecutionID))
		}
	}
	if history {
		lines = append(lines, "history:")
		for _, it := range rep.History {
			s := fmt.Sprintf("  %s/%d  %-21s  %s", it.ExecutionID, it.Sequence, it.Record, it.EventID)
			if it.Inherited {
				s += "  inherited"
			}
			lines = append(lines, s)
		}
	}
	for _, l := range lines {
		if err := writeLine(w, "%s", l); err != nil {
			return err
		}
	}
	return nil
}

func (c *LineageCommand) origin(ctx context.Context, eventID, within string, asJSON bool) error {
	return c.env.withJournals(ctx, func(s eventstore.Store) error {
		o, err := lineage.FindOrigin(ctx, s, eventID, within)
		if err != nil {
			return lineageErr(err, c.env)
		}
		if asJSON {
			data, err := json.MarshalIndent(o, "", "  ")
			if err != nil {
				return err
			}
			_, err = c.env.Stdout.Write(jsonSafe(append(data, '\n')))
			return err
		}
		return writeLine(c.env.Stdout, "%s  first written in %s at sequence %d (%s, %s)", o.EventID, o.ExecutionID, o.Sequence, o.Record, o.At.Format(timeLayout))
	})
}
