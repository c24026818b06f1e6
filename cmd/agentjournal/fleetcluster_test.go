package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fleet"
)

// These tests run the fleet's placement, fleet-wide limits and queue on
// three daemon processes that are also the three nodes of one NATS cluster:
// the buckets the fleet keeps beside the stream are replicated as the
// stream is, so that the fleet outlives any one node.

// fleetCluster is three daemon processes, hosts h0, h1 and h2 of one fleet
// and nodes of one cluster, each running at most one agent, with a lease
// of 1s. h0 and h1 carry the label role=runner, and each a zone of its own
// (zone=a, b, c); serve is added to every node's flags.
type fleetCluster struct {
	nodes   []*daemonProc
	clients []*client.Client
	agent   string // the fixture agent's binary
}

func startFleetCluster(t *testing.T, name string, serve ...string) *fleetCluster {
	t.Helper()
	nodes := startClusterOf(t, name, func(i int) []string {
		args := []string{"--host-name", fmt.Sprint("h", i), "--label", "zone=" + string(rune('a'+i)),
			"--lease", "1s", "--max-running", "1"}
		if i < 2 {
			args = append(args, "--label", "role=runner")
		}
		return append(args, serve...)
	})
	fc := &fleetCluster{nodes: nodes, agent: fixtures.AgentBinary(t)}
	for _, n := range nodes {
		c := client.New(n.url, n.token)
		t.Cleanup(func() { c.Close() })
		fc.clients = append(fc.clients, c)
	}
	// Every host hears every other before a launch is placed.
	for i := range nodes {
		fc.waitHosts(t, i, "three live hosts", func(h client.Host) bool { return h.State == "live" })
	}
	return fc
}

// waitHosts waits until node i sees all three hosts as ok says.
func (fc *fleetCluster) waitHosts(t *testing.T, i int, what string, ok func(client.Host) bool) {
	t.Helper()
	pollUntil(t, procConvergeWait, fmt.Sprintf("h%d sees %s", i, what), func() (bool, string) {
		hs, err := fc.clients[i].Hosts(t.Context())
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, h := range hs.Hosts {
			if ok(h) {
				n++
			}
		}
		return n == 3, fmt.Sprintf("%+v", hs.Hosts)
	})
}

// idle waits until every host sees every host running nothing and the
// fleet-wide slots of generic given back, so that what follows is placed
// on the hosts' room as it is.
func (fc *fleetCluster) idle(t *testing.T) {
	t.Helper()
	for i := range fc.nodes {
		fc.waitHosts(t, i, "every host idle", func(h client.Host) bool { return h.State == "live" && h.Running == 0 })
	}
	pollUntil(t, procConvergeWait, "every slot of generic given back", func() (bool, string) {
		held, err := slotHolders(t, fc.nodes[0], "generic")
		return err == nil && len(held) == 0, fmt.Sprintf("held by %v (%v)", held, err)
	})
}

// launch starts the fixture agent with steps through node i, placed as p
// (nil for anywhere); queued makes it wait in the fleet's queue.
func (fc *fleetCluster) launch(t *testing.T, i int, owner string, p *client.Placement, queued bool, steps ...string) (client.Launched, error) {
	t.Helper()
	req := client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: owner, Agent: "generic",
		Command: append([]string{fc.agent}, steps...), Placement: p}
	if queued {
		req.DispatchContext = &eventstore.DispatchContext{OriginSurface: eventstore.OriginDesktop, OriginProductID: "test",
			DispatchMode: eventstore.DispatchQueued, InitiatedAt: time.Now().UTC().Format(time.RFC3339)}
	}
	return fc.clients[i].Launch(t.Context(), req)
}

// mustLaunch is launch for a launch that must be taken; it returns the
// execution id and the host the answer says runs it.
func (fc *fleetCluster) mustLaunch(t *testing.T, i int, owner string, p *client.Placement, queued bool, steps ...string) (id, host string) {
	t.Helper()
	l, err := fc.launch(t, i, owner, p, queued, steps...)
	if err != nil {
		t.Fatalf("launch %s through h%d, placed %+v: %v", owner, i, p, err)
	}
	return l.Reference.AgentExecutionID, l.State.Host
}

// stop stops execution id through node i and checks that it ended.
func (fc *fleetCluster) stop(t *testing.T, i int, id string) {
	t.Helper()
	ex, err := fc.clients[i].Stop(t.Context(), id)
	if err != nil || !ex.Lifecycle.Final() {
		t.Fatalf("stop %s through h%d: %s, %v; want it ended", id, i, ex.Lifecycle, err)
	}
}

// waitExecution waits until node i reads execution id as ok says, within
// within, and returns it.
func (fc *fleetCluster) waitExecution(t *testing.T, i int, id, what string, within time.Duration, ok func(client.Execution) bool) client.Execution {
	t.Helper()
	var ex client.Execution
	pollUntil(t, within, fmt.Sprintf("h%d reads %s %s", i, id, what), func() (bool, string) {
		var err error
		ex, err = fc.clients[i].Execution(t.Context(), id)
		if err != nil {
			return false, err.Error()
		}
		return ok(ex), fmt.Sprintf("%s (%s) on %q", ex.Lifecycle, ex.LifecycleReason, ex.Host)
	})
	return ex
}

// waitQueue waits until every node that serves lists the fleet's queue as
// want, in its order.
func (fc *fleetCluster) waitQueue(t *testing.T, want ...string) {
	t.Helper()
	for i, c := range fc.clients {
		select {
		case <-fc.nodes[i].exited:
			continue
		default:
		}
		pollUntil(t, procConvergeWait, fmt.Sprintf("h%d lists the queue %v", i, want), func() (bool, string) {
			q, err := c.Queue(t.Context())
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, r := range q.Queued {
				got = append(got, r.AgentExecutionID)
			}
			return slices.Equal(got, want), fmt.Sprintf("%v", got)
		})
	}
}

// journalTally is what an execution's journal says of where it ran: the
// placements (a change to starting naming a host), the starts (a change to
// running naming one), the interruptions and the ends.
type journalTally struct {
	placed, started, interruptions, ends int
}

func (fc *fleetCluster) tally(t *testing.T, i int, id string) journalTally {
	t.Helper()
	var n journalTally
	for from := uint64(1); from != 0; {
		recs, next, err := fc.clients[i].Records(t.Context(), id, from, 1000)
		if err != nil {
			t.Fatalf("h%d: records of %s: %v", i, id, err)
		}
		for _, r := range recs {
			switch r := r.(type) {
			case *eventstore.Interruption:
				n.interruptions++
			case *eventstore.StateChanged:
				switch {
				case r.Lifecycle.Final():
					n.ends++
				case r.Host != "" && r.Lifecycle == eventstore.LifecycleRunning:
					n.started++
				case r.Host != "":
					n.placed++
				}
			}
		}
		from = next
	}
	return n
}

// slotHolders reads the executions holding a slot of agent's fleet-wide
// limit from the limits bucket, through node d's NATS listener.
func slotHolders(t *testing.T, d *daemonProc, agent string) ([]string, error) {
	t.Helper()
	nc, err := nats.Connect(d.natsURL, nats.UserInfo(bus.User, fixtures.NATSSecret))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(t.Context(), fleet.LimitsBucket(bus.DefaultStreamName))
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(t.Context(), agent)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s struct {
		Holders map[string]string `json:"holders"`
	}
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(s.Holders)), nil
}

// Three hosts, each a node of the cluster, with room for one agent each
// and a fleet-wide limit of two generic agents: launches placed by label
// and by name run on the host asked for; an unplaced launch through a full
// host runs on one with room; of six launches at once through all three,
// two run and four are refused; a queued launch waits, seen alike by every
// host, and starts once where room is made.
func TestClusterFleetPlacesLimitsAndQueues(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	fc := startFleetCluster(t, "aj-fleet", "--limit", "generic=2")

	// Placed by label and by name, through hosts that do not fit.
	byLabel, host := fc.mustLaunch(t, 0, "t-label", &client.Placement{On: map[string]string{"zone": "b"}}, false, "wait")
	if host != "h1" {
		t.Fatalf("placed on zone=b through h0: runs on %q, want h1", host)
	}
	byName, host := fc.mustLaunch(t, 1, "t-name", &client.Placement{Host: "h2"}, false, "wait")
	if host != "h2" {
		t.Fatalf("placed on host h2 through h1: runs on %q, want h2", host)
	}
	// h0, which runs neither, reads where each runs from the journal.
	for id, want := range map[string]string{byLabel: "h1", byName: "h2"} {
		fc.waitExecution(t, 0, id, "running on "+want, procConvergeWait, func(ex client.Execution) bool {
			return ex.Lifecycle == eventstore.LifecycleRunning && ex.Host == want
		})
	}
	fc.stop(t, 0, byLabel)
	fc.stop(t, 0, byName)
	fc.idle(t)

	// h0 full: an unplaced launch through it goes to a host with room.
	busy, host := fc.mustLaunch(t, 0, "t-full", nil, false, "wait")
	if host != "h0" {
		t.Fatalf("an unplaced launch through an idle h0 runs on %q, want h0", host)
	}
	moved, host := fc.mustLaunch(t, 0, "t-moved", nil, false, "wait")
	if host != "h1" && host != "h2" {
		t.Fatalf("an unplaced launch through a full h0 runs on %q, want h1 or h2, which have room", host)
	}
	fc.stop(t, 1, busy)
	fc.stop(t, 2, moved)
	fc.idle(t)

	// Six launches at once, two through each host: the limit holds.
	var mu sync.Mutex
	var ran []string
	refused := 0
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			l, err := fc.launch(t, i%3, fmt.Sprint("t-lim-", i), nil, false, "wait")
			mu.Lock()
			defer mu.Unlock()
			var ae *client.Error
			switch {
			case err == nil:
				ran = append(ran, l.Reference.AgentExecutionID)
			case errors.As(err, &ae) && ae.Status == http.StatusConflict && strings.Contains(ae.Message, "limit (serve --limit generic=2)"):
				refused++
			default:
				t.Errorf("launch %d through h%d: %v; want 201, or 409 naming the limit", i, i%3, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(ran) != 2 || refused != 4 {
		t.Fatalf("%d launches ran (201) and %d were refused (409), want 2 and 4", len(ran), refused)
	}
	if held, err := slotHolders(t, fc.nodes[1], "generic"); err != nil || !slices.Equal(held, slices.Sorted(slices.Values(ran))) {
		t.Fatalf("the slots of generic are held by %v (%v), want the two that ran, %v", held, err, ran)
	}
	for _, id := range ran {
		fc.stop(t, 2, id)
	}
	fc.idle(t)

	// h0 and h1, the runners, full, and the limit reached: a queued launch
	// for a runner waits, in the queue every host lists.
	onH0, _ := fc.mustLaunch(t, 1, "t-h0", &client.Placement{Host: "h0"}, false, "wait")
	onH1, _ := fc.mustLaunch(t, 2, "t-h1", &client.Placement{Host: "h1"}, false, "wait")
	queued, _ := fc.mustLaunch(t, 2, "t-queued", &client.Placement{On: map[string]string{"role": "runner"}}, true, "wait")
	fc.waitQueue(t, queued)
	time.Sleep(time.Second) // five dispatch rounds of each host, in which it must not start: not a timing assertion
	if ex, err := fc.clients[0].Execution(t.Context(), queued); err != nil || ex.Lifecycle != eventstore.LifecycleStarting {
		t.Fatalf("a queued run with no runner free is %s (%v), want starting (waiting)", ex.Lifecycle, err)
	}
	// Room on h1, made through h0: the run starts there, once.
	fc.stop(t, 0, onH1)
	ex := fc.waitExecution(t, 1, queued, "running", procConvergeWait, func(ex client.Execution) bool {
		return ex.Lifecycle == eventstore.LifecycleRunning
	})
	if ex.Host != "h1" {
		t.Fatalf("the queued run started on %q, want h1, where room was made", ex.Host)
	}
	fc.waitQueue(t)
	if n := fc.tally(t, 0, queued); n.placed != 1 || n.started != 1 {
		t.Fatalf("the queued run was placed %d times and started %d times, want once each", n.placed, n.started)
	}
	if held, err := slotHolders(t, fc.nodes[2], "generic"); err != nil || !slices.Equal(held, slices.Sorted(slices.Values([]string{onH0, queued}))) {
		t.Fatalf("the slots of generic are held by %v (%v), want %s and %s", held, err, onH0, queued)
	}
}

// Every host full with queued runs waiting: one host (the stream's leader)
// is killed while its dispatcher is idle, and an agent is stopped on
// another. The queued runs start on the live hosts, each once, and
// complete; the killed host's execution ends host_lost once its lease is
// over, once. Two of three nodes keep the log.
func TestClusterFleetQueueAfterAHostIsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	fc := startFleetCluster(t, "aj-fleetkill")
	victim := streamLeader(t, fc.nodes)
	freed, full := (victim+1)%3, (victim+2)%3
	victimName := fmt.Sprint("h", victim)
	t.Logf("killing %s, the stream's leader; room is made on h%d", victimName, freed)

	busy := make([]string, 3)
	for i := range 3 {
		var host string
		busy[i], host = fc.mustLaunch(t, i, fmt.Sprint("t-busy-", i), &client.Placement{Host: fmt.Sprint("h", i)}, false, "wait")
		if want := fmt.Sprint("h", i); host != want {
			t.Fatalf("placed on %s: runs on %q", want, host)
		}
	}
	// Queued through the hosts that live on, which keep their launches.
	var queued []string
	for i, via := range []int{freed, full, freed} {
		id, _ := fc.mustLaunch(t, via, fmt.Sprint("t-queued-", i), nil, true, "say:queued", "exit:0")
		queued = append(queued, id)
	}
	fc.waitQueue(t, queued...)

	fc.nodes[victim].kill()
	fc.stop(t, full, busy[freed])

	// The queued runs go through the room on h<freed>, one after another.
	for _, id := range queued {
		ex := fc.waitExecution(t, full, id, "completed", procDecisionWait, func(ex client.Execution) bool { return ex.Lifecycle.Final() })
		if ex.Lifecycle != eventstore.LifecycleCompleted || ex.Host == victimName {
			t.Errorf("queued run %s ended %s (%s) on %q, want completed on a live host", id, ex.Lifecycle, ex.LifecycleReason, ex.Host)
		}
		if n := fc.tally(t, freed, id); n.placed != 1 || n.started != 1 || n.ends != 1 {
			t.Errorf("queued run %s: placed %d times, started %d times, ended %d times; want once each", id, n.placed, n.started, n.ends)
		}
	}
	fc.waitQueue(t)

	// The killed host's own execution ends, once, after its lease.
	ex := fc.waitExecution(t, freed, busy[victim], "ended", procConvergeWait, func(ex client.Execution) bool { return ex.Lifecycle.Final() })
	if ex.Lifecycle != eventstore.LifecycleTerminated || ex.LifecycleReason != "host_lost" ||
		ex.Interrupted == nil || !strings.Contains(ex.Interrupted.Detail, "host "+victimName) {
		t.Fatalf("%s's execution ended %s (%s), interrupted %+v; want terminated, host_lost", victimName, ex.Lifecycle, ex.LifecycleReason, ex.Interrupted)
	}
	if n := fc.tally(t, full, busy[victim]); n.interruptions != 1 || n.ends != 1 {
		t.Fatalf("%s's execution: %d interruptions and %d ends journaled, want one each", victimName, n.interruptions, n.ends)
	}
	// The agent on the full host never stopped.
	if ex, err := fc.clients[freed].Execution(t.Context(), busy[full]); err != nil || ex.Lifecycle != eventstore.LifecycleRunning {
		t.Fatalf("h%d's agent is %s (%v), want running", full, ex.Lifecycle, err)
	}
}
