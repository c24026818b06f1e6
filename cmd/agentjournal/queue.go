package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

// QueueCommand lists the running daemon's queue.
type QueueCommand struct{ env *Env }

var queueSpec = cmdSpec{
	Name: "queue",
	Args: "[--json]",
	Summary: `List the launches waiting in the running daemon's queue, the one that starts
next first: those launched with --dispatch-mode queued or scheduled that have
not started. Each is journaled already, lifecycle starting; it starts once
fewer agents than the daemon's --max-running are live and, when scheduled,
its time has come. stop ID cancels one: it ends cancelled and never starts.

Each line shows the position, the execution id, the agent, the dispatch mode,
the origin (surface/product) and when it was queued, or the time it is
scheduled for. With --json, print the daemon's answer: the queued runs, the
limit (maxRunning) and the executions live now (running).`,
	Example: "agentjournal queue\nagentjournal queue --json",
}

// Run implements Command.
func (c *QueueCommand) Run(ctx context.Context, args []string) error {
	fs := queueSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	if err := queueSpec.parseNone(fs, args, "queue takes only flags"); err != nil {
		return err
	}
	ask := func(cl *client.Client) (client.Queue, error) {
		q, err := cl.Queue(ctx)
		if err != nil {
			return q, fmt.Errorf("queue: %w", err)
		}
		return q, nil
	}
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, q client.Queue) error {
		writeLine(w, "running %d (limit %d), waiting %d", q.Running, q.MaxRunning, len(q.Queued))
		for _, r := range q.Queued {
			d := r.DispatchContext
			when := "queued " + r.QueuedAt.Local().Format(time.DateTime)
			if d.DispatchMode == eventstore.DispatchScheduled {
				when = "scheduled for " + d.Scheduled().Local().Format(time.DateTime)
			}
			writeLine(w, "%3d  %s  %s  %s  %s  %s", r.Position, r.AgentExecutionID, r.Agent, d.DispatchMode,
				strings.Join([]string{string(d.OriginSurface), d.OriginProductID}, "/"), when)
		}
		return nil
	})
}
