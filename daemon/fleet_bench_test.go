package daemon_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// BenchmarkCommandRouting sends messages to an agent on alpha through
// alpha itself (the baseline) and through beta, which forwards each to
// alpha, interleaved so that both meet the same machine; it reports each
// one's p50 and p99 and the routed p99 over the local one (target: 2x at
// most).
func BenchmarkCommandRouting(b *testing.B) {
	agent := fixtures.AgentBinary(b)
	alpha, beta := twoHosts(b)
	ca, cb := client.New(alpha.URL(), alpha.Token()), client.New(beta.URL(), beta.Token())
	defer ca.Close()
	defer cb.Close()
	l, err := ca.Launch(b.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-route",
		Agent: "generic", Command: []string{agent, "wait"}})
	if err != nil {
		b.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if ex, err := cb.Execution(b.Context(), id); err == nil && ex.Host == "alpha" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("beta never saw the execution running on alpha")
		}
	}
	send := func(c *client.Client, n int) time.Duration {
		start := time.Now()
		ack, err := c.SendMessage(b.Context(), id, client.Message{Type: "prompt", Payload: json.RawMessage(fmt.Sprintf(`{"text":"m-%d"}`, n))})
		if err != nil || ack.Delivery != eventstore.DeliveryDelivered {
			b.Fatalf("send %d: %+v, %v", n, ack, err)
		}
		return time.Since(start)
	}
	// Warm both paths.
	send(ca, -1)
	send(cb, -2)
	var local, routed []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		local = append(local, send(ca, 2*i))
		routed = append(routed, send(cb, 2*i+1))
	}
	b.StopTimer()
	lp50, lp99 := quantiles(local)
	rp50, rp99 := quantiles(routed)
	b.ReportMetric(float64(lp50.Microseconds())/1000, "local-p50-ms")
	b.ReportMetric(float64(lp99.Microseconds())/1000, "local-p99-ms")
	b.ReportMetric(float64(rp50.Microseconds())/1000, "routed-p50-ms")
	b.ReportMetric(float64(rp99.Microseconds())/1000, "routed-p99-ms")
	b.ReportMetric(float64(rp99)/float64(lp99), "p99-ratio")
}

func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// BenchmarkLaunchPlacement launches a short agent through alpha, placed on
// alpha itself (the baseline) and on beta (forwarded there), interleaved,
// and reports each one's launch-to-running p50 and p99 (the launch answers
// once the agent runs), what forwarding adds at p50 (target: under 50 ms),
// and the placed launches per second.
func BenchmarkLaunchPlacement(b *testing.B) {
	agent := fixtures.AgentBinary(b)
	alpha, _ := twoHosts(b)
	ca := client.New(alpha.URL(), alpha.Token())
	defer ca.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if h, err := ca.Hosts(b.Context()); err == nil && len(h.Hosts) == 2 && h.Hosts[1].State == "live" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("alpha never saw beta")
		}
	}
	launch := func(host string, n int) time.Duration {
		start := time.Now()
		l, err := ca.Launch(b.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: fmt.Sprint("t-place-", n),
			Agent: "generic", Command: []string{agent, "exit:0"}, Placement: &client.Placement{Host: host}})
		if err != nil || l.State.Host != host {
			b.Fatalf("launch %d on %s: runs on %q, %v", n, host, l.State.Host, err)
		}
		return time.Since(start)
	}
	launch("alpha", -1)
	launch("beta", -2)
	var local, remote []time.Duration
	started := time.Now()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		local = append(local, launch("alpha", 2*i))
		remote = append(remote, launch("beta", 2*i+1))
	}
	b.StopTimer()
	elapsed := time.Since(started)
	lp50, lp99 := quantiles(local)
	rp50, rp99 := quantiles(remote)
	b.ReportMetric(float64(lp50.Microseconds())/1000, "local-p50-ms")
	b.ReportMetric(float64(lp99.Microseconds())/1000, "local-p99-ms")
	b.ReportMetric(float64(rp50.Microseconds())/1000, "remote-p50-ms")
	b.ReportMetric(float64(rp99.Microseconds())/1000, "remote-p99-ms")
	b.ReportMetric(float64((rp50-lp50).Microseconds())/1000, "forward-adds-p50-ms")
	b.ReportMetric(float64(len(local)+len(remote))/elapsed.Seconds(), "launches/s")
}
