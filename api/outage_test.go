package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestReadsWhileTheJoinedLogIsDown: a daemon joined to another's NATS
// (serve --nats-url) whose read models are behind what an answer told of
// when that NATS goes down serves its reads at once from what the read
// models hold, instead of waiting for a projection that cannot move while
// the log is away; /healthz says the log is unreachable meanwhile. Once
// the NATS is back, reads wait for what was told again and see it.
func TestReadsWhileTheJoinedLogIsDown(t *testing.T) {
	natsDir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0])
	host := fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })

	// Long enough that a read waiting for the projection cannot end
	// while the log is down, which lasts at most half of it.
	const decisionWait = time.Minute
	cfg := daemon.DefaultConfig(t.TempDir())
	cfg.Token, cfg.Secret = apitest.Token, bytes.Repeat([]byte{7}, api.MinSecretSize)
	cfg.NoMCP, cfg.NoSearch, cfg.NoWorkspaces = true, true, true
	cfg.StopGrace = time.Second
	cfg.Bus.URL, cfg.Bus.Secret = host.ClientURL(), fixtures.NATSSecret
	cfg.ConfigureAPI = func(c *api.Config) { c.DecisionWait = decisionWait }
	d, err := daemon.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	// Closed by the test while the NATS is up, so that the agent's end
	// is recorded; the cleanup is for a test that failed before.
	t.Cleanup(func() { d.Close(context.Background()) })
	r := &rig{bus: d.Bus(), store: d.Store(), views: d.Views(), rt: d.Runtime(), srv: d.Server(), http: srv, agent: fixtures.AgentBinary(t)}

	id, ack, resume := r.toldWhilePaused(t, d.PauseProjector, "t-outage", "o-outage")

	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "/healthz says the log is unreachable", func() bool {
		code, _ := r.do(t, "GET", "/healthz", nil, testToken)
		return code == http.StatusServiceUnavailable
	})

	// Reads of the read models, each of which waited for what the
	// answer told of before.
	reads := []string{"/v1/executions/" + id, "/v1/executions/" + id + "/timeline", "/v1/executions"}
	type answer struct {
		path string
		code int
		body []byte
	}
	answers := make(chan answer, len(reads))
	go func() {
		for _, path := range reads {
			code, body := r.do(t, "GET", path, nil, testToken)
			answers <- answer{path, code, body}
		}
	}()
	outage := time.NewTimer(decisionWait / 2)
	defer outage.Stop()
	for range reads {
		select {
		case a := <-answers:
			if a.code != http.StatusOK {
				t.Errorf("GET %s while the log is down: %d %s, want 200 from the read models", a.path, a.code, a.body)
			}
		case <-outage.C:
			t.Fatalf("reads still waited for the projection after %s with the log down; want them served at once from the read models", decisionWait/2)
		}
	}
	if code, body := r.do(t, "GET", "/healthz", nil, testToken); code != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("unreachable")) {
		t.Errorf("/healthz after the reads: %d %s, want 503 saying the log is unreachable", code, body)
	}

	fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })
	resume()
	eventually(t, 30*time.Second, "a read shows the decision once the log is back", func() bool {
		var page struct {
			Items []struct {
				Sequence uint64 `json:"sequence"`
			} `json:"items"`
		}
		// The decision changes nothing: only the whole timeline lists it.
		if code, _ := r.do(t, "GET", "/v1/executions/"+id+"/timeline?all=true", nil, testToken); code != http.StatusOK {
			return false
		}
		r.call(t, "GET", "/v1/executions/"+id+"/timeline?all=true", nil, http.StatusOK, &page)
		for _, it := range page.Items {
			if it.Sequence == ack.Decision.Sequence {
				return true
			}
		}
		return false
	})
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("close the daemon: %v", err)
	}
}
