package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/contract"
)

// SessionsCommand lists the sessions of the running daemon.
type SessionsCommand struct{ env *Env }

// SessionCommand prints one session with its runs.
type SessionCommand struct{ env *Env }

// CheckpointCommand records a checkpoint of an execution.
type CheckpointCommand struct{ env *Env }

var sessionsSpec = cmdSpec{
	Name: "sessions",
	Args: "[--status STATUS] [--limit N] [--json]",
	Summary: `List the sessions the running daemon knows, newest first, in the runtime
contract's AgentSession shape: a session is the runs linked by resume (a
fork starts a new one). Each line shows the session's id, status (active,
paused, waiting-approval, completed, failed or cancelled), whether a resume can
be started, its runs and when it was last updated. --json prints
{"sessions": [...]} as GET /v1/sessions answers; see docs/contract.md.`,
	Example: "agentjournal sessions --status paused",
}

var sessionSpec = cmdSpec{
	Name: "session",
	Args: "ID [--json]",
	Summary: `Print the session ID (its id, or the id of any of its executions) from the
running daemon: its status and resumability, its runs in order with their
status in the runtime contract's vocabulary (queued, running, paused,
waiting-approval, completed, failed, cancelled), its tasks, todos, approvals
and checkpoints. --json prints what GET /v1/sessions/{sessionId} answers.`,
	Example: "agentjournal session ae-0123456789abcdef01234567",
}

var checkpointSpec = cmdSpec{
	Name: "checkpoint",
	Args: "ID [--id NAME] [--title TEXT] [--summary TEXT] [--json]",
	Summary: `Record, in the running daemon, a checkpoint of the agent execution ID as it
is now: a checkpoint.created record holding its status, todo ids, approval
ids, artifacts and the agent CLI's session id (the resume token). The runtime
takes one at each turn end by itself; this one is the operator's. The title
defaults to the run's intent, the summary to where it stands. Giving --id
makes a retry safe: the same id answers the checkpoint recorded first.`,
	Example: "agentjournal checkpoint ae-0123456789abcdef01234567 --title \"before the refactor\"",
}

// Run implements Command.
func (c *SessionsCommand) Run(ctx context.Context, args []string) error {
	fs := sessionsSpec.newFlagSet()
	status := fs.String("status", "", "only sessions with this `STATUS`")
	limit := fs.Int("limit", 0, "at most `N` sessions (0: all)")
	asJSON := fs.Bool("json", false, "print JSON as the API answers")
	pos, err := sessionsSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return sessionsSpec.usageErr(fs, "unexpected arguments %q", pos)
	}
	if *status != "" && !slices.Contains(contract.SessionStatuses, contract.SessionStatus(*status)) {
		return sessionsSpec.usageErr(fs, "--status %q: want one of %s", termSafe(*status), joinStatuses())
	}
	if *limit < 0 {
		return sessionsSpec.usageErr(fs, "--limit %d: want 0 (all) or more", *limit)
	}
	ask := func(cl *client.Client) (wire.Sessions, error) {
		list, err := cl.Sessions(ctx, client.SessionFilter{Status: contract.SessionStatus(*status), Limit: *limit})
		return wire.Sessions{Sessions: list}, err
	}
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, list wire.Sessions) error {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tSTATUS\tRESUMABLE\tAGENT\tRUNS\tUPDATED")
		for _, s := range list.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", termSafe(s.SessionID), s.Status, yesNo(s.Resumable), termSafe(s.AgentID),
				len(s.RunIDs), s.UpdatedAt.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	})
}

func joinStatuses() string {
	var out []string
	for _, s := range contract.SessionStatuses {
		out = append(out, string(s))
	}
	return strings.Join(out, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Run implements Command.
func (c *SessionCommand) Run(ctx context.Context, args []string) error {
	fs := sessionSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print JSON as the API answers")
	id, err := sessionSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	ask := func(cl *client.Client) (*client.Session, error) { return cl.Session(ctx, id) }
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, s *client.Session) error {
		fmt.Fprintf(w, "session %s: %s, resumable %s, user %s, started %s\n", termSafe(s.Session.SessionID), s.Session.Status,
			yesNo(s.Session.Resumable), termSafe(s.Session.UserID), s.Session.StartedAt.UTC().Format(time.RFC3339))
		if s.Session.ParentSessionID != "" {
			fmt.Fprintf(w, "forked from session %s\n", termSafe(s.Session.ParentSessionID))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nRUN\tSTATUS\tAGENT\tTASK\tSTARTED\tNOTE")
		for _, r := range s.Runs {
			var note []string
			if r.Resumes != "" {
				note = append(note, "resumes "+r.Resumes)
			}
			if r.ForkedFrom != "" {
				note = append(note, "forks "+r.ForkedFrom)
			}
			if r.Interruption != "" {
				note = append(note, "interrupted: "+r.Interruption)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(r.RunID), r.Status, termSafe(r.AgentID), termSafe(r.TaskID),
				r.StartedAt.UTC().Format(time.RFC3339), termSafe(strings.Join(note, "; ")))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, t := range s.Tasks {
			fmt.Fprintf(w, "\ntask %s [%s]: %s\n", termSafe(t.TaskID), t.Status, termSafe(t.Title))
		}
		if len(s.Todos) > 0 {
			fmt.Fprintln(w, "\ntodos:")
			for _, t := range s.Todos {
				fmt.Fprintf(w, "  [%s] %s\n", t.Status, termSafe(t.Text))
			}
		}
		if len(s.Approvals) > 0 {
			fmt.Fprintln(w, "\napprovals:")
			for _, a := range s.Approvals {
				fmt.Fprintf(w, "  %s [%s] %s", termSafe(a.ApprovalID), a.Status, termSafe(a.Question))
				if a.Answer != "" {
					fmt.Fprintf(w, " → %s (%s)", termSafe(a.Answer), a.ResolvedBy)
				}
				fmt.Fprintln(w)
			}
		}
		if len(s.Checkpoints) > 0 {
			fmt.Fprintln(w, "\ncheckpoints:")
			for _, cp := range s.Checkpoints {
				fmt.Fprintf(w, "  %s %s of %s at %d [%s]: %s\n", cp.CreatedAt.UTC().Format(time.RFC3339), termSafe(cp.CheckpointID),
					termSafe(cp.RunID), cp.AtSequence, cp.StatusAtCapture, termSafe(cp.StateSummary.Summary))
			}
		}
		return nil
	})
}

// Run implements Command.
func (c *CheckpointCommand) Run(ctx context.Context, args []string) error {
	fs := checkpointSpec.newFlagSet()
	name := fs.String("id", "", "name the checkpoint `NAME` (letters, digits, . _ : -), so a retry is the same checkpoint")
	title := fs.String("title", "", "the checkpoint's title `TEXT` (default: the run's intent)")
	summary := fs.String("summary", "", "the checkpoint's summary `TEXT` (default: where the run stands)")
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	id, err := checkpointSpec.parseID(fs, args)
	if err != nil {
		return err
	}
	ask := func(cl *client.Client) (*contract.AgentCheckpoint, error) {
		cp, err := cl.Checkpoint(ctx, id, client.CheckpointRequest{ID: *name, Title: *title, Summary: *summary})
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", id, err)
		}
		return cp, nil
	}
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, cp *contract.AgentCheckpoint) error {
		_, err := fmt.Fprintf(w, "checkpoint %s of %s at sequence %d: %s (%s)\n", termSafe(cp.CheckpointID), termSafe(cp.RunID),
			cp.AtSequence, cp.StatusAtCapture, termSafe(cp.StateSummary.Summary))
		return err
	})
}
