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
