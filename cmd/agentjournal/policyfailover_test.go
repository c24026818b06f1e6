package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
)

// policyConsumer is the durable consumer the daemons' policy subscribers
// share (policy.SubscriberConfig.Consumer's default).
const policyConsumer = "policy"

// policyLeader returns the index of the node that leads the policy's
// consumer.
func policyLeader(t *testing.T, nodes []*daemonProc) int {
	t.Helper()
	return leaderNode(t, nodes, "the policy consumer", func(ctx context.Context, js jetstream.JetStream) (*jetstream.ClusterInfo, error) {
		c, err := js.Consumer(ctx, bus.DefaultStreamName, policyConsumer)
		if err != nil {
			return nil, err
		}
		return c.CachedInfo().Cluster, nil
	})
}

// TestClusterPolicyLeaderKilled kills the node that leads the policy's
// consumer of a three-node cluster while observations are recorded through
// the other two, four times. The policy fails over, which at times takes
// longer than the API's decision wait (a new consumer leader is elected,
// and the dead node's subscriber loses its pin), and every observation is
// answered with its decision: none is answered 504 saying it is recorded
// but not decided. The decision pause after each kill is logged.
func TestClusterPolicyLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	t.Parallel()
	nodes := startCluster(t, "aj-policy-leader")
	const trials = 4
	var pauses []time.Duration
	for trial := range trials {
		victim := policyLeader(t, nodes)
		survivors := slices.Delete(slices.Clone(nodes), victim, victim+1)
		var posters []*poster
		for i, via := range survivors {
			id := via.launchAgent(t, fmt.Sprintf("t-policy-%d-%d", trial, i), "wait")
			for k, n := range survivors {
				posters = append(posters, &poster{c: n.client(), execID: id, prefix: fmt.Sprintf("o%d-%d-%d", trial, i, k), noLate: true})
			}
		}
		l := startLoad(posters...)
		l.waitDecided(t, time.Now(), 3, procDecisionWait, "before the kill")
		killed := time.Now()
		nodes[victim].kill()
		answered := l.waitDecided(t, killed, 3, procDecisionWait, fmt.Sprintf("trial %d, after killing %s", trial, nodes[victim].name))
		pause := firstDecisionAfter(t, survivors[0], posters[0], killed)
		pauses = append(pauses, pause)
		t.Logf("trial %d: killed %s, which led the policy consumer; the first decision on an observation sent after it was written %s later (answered %s later)",
			trial, nodes[victim].name, pause.Round(10*time.Millisecond), answered.Round(10*time.Millisecond))
		l.stop()
		l.check(t)
		for _, p := range posters {
			pollUntil(t, procConvergeWait, "every observation of "+p.execID+" has one decision", func() (bool, string) {
				probs := decisionProblems(survivors[0].records(t, p.execID))
				return len(probs) == 0, strings.Join(probs, "; ")
			})
		}
		nodes[victim].restart()
	}
	t.Logf("decision pause after losing the policy consumer's leader, %d trials: %v", trials, pauses)
}
