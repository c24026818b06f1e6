package hostbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/runtime"
)

// ownerPrefix starts the owner id of every execution of a run.
const ownerPrefix = "hostbench-"

// inTurns calls local and forwarded n times each, one at a time, in pairs
// whose order is swapped every pair: the second of a pair meets whatever
// the first left behind (its records still being projected, an agent
// ending), and each path is second as often as the other. It returns each
// call's duration, by path.
func inTurns(n int, local, forwarded func(i int) (time.Duration, error)) (loc, fwd []time.Duration, err error) {
	loc, fwd = make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	call := func(isLocal bool, i int) error {
		if isLocal {
			d, err := local(i)
			loc = append(loc, d)
			return err
		}
		d, err := forwarded(i)
		fwd = append(fwd, d)
		return err
	}
	for i := range n {
		localFirst := i%2 == 0
		if err := call(localFirst, i); err != nil {
			return nil, nil, err
		}
		if err := call(!localFirst, i); err != nil {
			return nil, nil, err
		}
	}
	return loc, fwd, nil
}

// measureMessages launches cfg.Agent on alpha and sends it cfg.Messages
// prompts through alpha and as many through beta, in turns, then stops it.
func measureMessages(ctx context.Context, h *hosts, cfg Config) (_ []benchkit.Result, err error) {
	id, err := h.launch(ctx, ownerPrefix+"messages", hostAlpha, cfg.Agent)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.stop(id)) }()
	// beta forwards a message only once its read model says where the
	// execution runs.
	err = poll(ctx, "beta to see "+id+" on alpha", func(ctx context.Context) (bool, error) {
		ex, err := h.cb.Execution(ctx, id)
		return err == nil && ex.Host == hostAlpha, err
	})
	if err != nil {
		return nil, fmt.Errorf("hostbench: %w", err)
	}
	send := func(c *client.Client, via string) func(int) (time.Duration, error) {
		return func(i int) (time.Duration, error) {
			ctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			text, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("m-%s-%d", via, i)})
			start := time.Now()
			ack, err := c.SendMessage(ctx, id, client.Message{Type: "prompt", Payload: text})
			d := time.Since(start)
			if err == nil && ack.Delivery != eventstore.DeliveryDelivered {
				err = fmt.Errorf("delivery %q (want %q)", ack.Delivery, eventstore.DeliveryDelivered)
			}
			if err != nil {
				return 0, fmt.Errorf("hostbench: message %d through %s: %w", i, via, err)
			}
			return d, nil
		}
	}
	local, routed := send(h.ca, hostAlpha), send(h.cb, hostBeta)
	// One of each first: the first request of a path opens its connections.
	if _, _, err := inTurns(1, local, routed); err != nil {
		return nil, err
	}
	loc, fwd, err := inTurns(cfg.Messages, local, routed)
	if err != nil {
		return nil, err
	}
	return []benchkit.Result{
		serial(nameMessageLocal, "messages/s", loc, "",
			"a prompt to the agent through alpha, the host that runs it (POST /v1/executions/{id}/messages), from the request to the answer that it was delivered; "+
				"one at a time, in turns with message/routed; the rate is the messages over the time spent in them"),
		serial(nameMessageRouted, "messages/s", fwd, nameMessageLocal,
			"the same prompt through beta, which forwards it to alpha over NATS (request and reply) and answers with alpha's acknowledgement; "+
				"target: a p99 at most 2x message/local's"),
	}, nil
}

// measureLaunches places cfg.Launches launches of cfg.LaunchAgent on alpha
// and as many on beta, all through alpha, in turns.
func measureLaunches(ctx context.Context, h *hosts, cfg Config) ([]benchkit.Result, error) {
	place := func(host string) func(int) (time.Duration, error) {
		return func(i int) (time.Duration, error) {
			start := time.Now()
			_, err := h.launch(ctx, fmt.Sprintf("%slaunch-%s-%d", ownerPrefix, host, i), host, cfg.LaunchAgent)
			return time.Since(start), err
		}
	}
	local, remote := place(hostAlpha), place(hostBeta)
	if _, _, err := inTurns(1, local, remote); err != nil {
		return nil, err
	}
	start := time.Now()
	loc, fwd, err := inTurns(cfg.Launches, local, remote)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	n := len(loc) + len(fwd)
	return []benchkit.Result{
		serial(nameLaunchLocal, "launches/s", loc, "",
			"a launch through alpha placed on alpha (POST /v1/executions, placement host alpha), from the request to its answer, which comes once the agent runs; "+
				"one at a time, in turns with launch/remote; the rate is the launches over the time spent in them"),
		serial(nameLaunchRemote, "launches/s", fwd, nameLaunchLocal,
			"the same launch through alpha placed on beta: alpha forwards it with its environment over NATS and answers with beta's answer once the agent runs there; "+
				"target: forwarding adds under 50 ms to launch/local's p50"),
		{Name: nameLaunchPlaced, Count: n, Elapsed: elapsed, Rate: benchkit.Rate(n, elapsed), RateUnit: "launches/s",
			Method: "every launch of launch/local and launch/remote over the time from the first's request to the last's answer"},
	}, nil
}

// launch launches command for the task owner through alpha, placed on
// host, and returns its execution's id once the answer says it runs there.
func (h *hosts) launch(ctx context.Context, owner, host string, command []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	l, err := h.ca.Launch(ctx, client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: owner,
		Agent: "generic", Command: command, Placement: &client.Placement{Host: host}})
	if err == nil && l.State.Host != host {
		err = fmt.Errorf("it runs on %q (want %q, where it was placed)", l.State.Host, host)
	}
	if err != nil {
		return "", fmt.Errorf("hostbench: launch %q on %s: %w", command, host, err)
	}
	return l.Reference.AgentExecutionID, nil
}

// stop stops the agent of execution id on alpha, within stopTimeout, so
// that it holds none of alpha's room while the launches are measured.
func (h *hosts) stop(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := h.alpha.Runtime().Stop(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotRunning) {
		return fmt.Errorf("hostbench: stop %s: %w", id, err)
	}
	return nil
}
