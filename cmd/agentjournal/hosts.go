package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/client"
)

// HostsCommand lists the hosts of the running daemon's fleet.
type HostsCommand struct{ env *Env }

var hostsSpec = cmdSpec{
	Name: "hosts",
	Args: "[--json]",
	Summary: `List the hosts of the fleet: every daemon on the running daemon's log
(joined with --nats-url, or a node of its cluster) is a host, named by serve
--host-name (by default the machine's name and a hash of its data directory),
and sends a heartbeat the others see.

Each line shows the host's name (* for the one that answered), its state
(live: heard from within its lease; lost: not heard from for longer; left: it
stopped and said so), when it was last heard from, the agents running there
against its limit, the launches waiting in its queue, its free memory, its
labels (serve --label) and the executions it runs. Commands for an
execution (send, answer, stop, cmd, checkpoint, logs, terminal input) given
to any host reach the one that runs it. With --json, print the daemon's
answer.`,
	Example: "agentjournal hosts\nagentjournal hosts --json",
}

// Run implements Command.
func (c *HostsCommand) Run(ctx context.Context, args []string) error {
	fs := hostsSpec.newFlagSet()
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	if err := hostsSpec.parseNone(fs, args, "hosts takes only flags"); err != nil {
		return err
	}
	ask := func(cl *client.Client) (client.Hosts, error) {
		h, err := cl.Hosts(ctx)
		if err != nil {
			return h, fmt.Errorf("hosts: %w", err)
		}
		return h, nil
	}
	return askDaemon(ctx, c.env, *asJSON, ask, func(w io.Writer, h client.Hosts) error {
		for _, host := range h.Hosts {
			self := " "
			if host.Self {
				self = "*"
			}
			writeLine(w, "%s %s  %s  heard %s ago  running %d/%d  queued %d  %s free  %s  %s", self, host.Name, host.State,
				time.Since(host.LastHeard).Round(time.Second), host.Running, host.MaxRunning, host.Queued,
				memoryText(host.MemoryFree), labelsText(host.Labels), strings.Join(host.Executions, " "))
		}
		return nil
	})
}

// memoryText words a byte count for people; "?" when unknown.
func memoryText(b uint64) string {
	if b == 0 {
		return "? memory"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// labelsText lists labels as key=value, sorted; "-" for none.
func labelsText(labels map[string]string) string {
	if len(labels) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}
