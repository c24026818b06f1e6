package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestLaunchWaitsForASlowHealthCheck: a daemon whose process is alive but
// whose health check answers only after a few seconds, as one on a cluster
// electing a leader does, still takes a launch, and the command says what
// it waited for.
func TestLaunchWaitsForASlowHealthCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	served, _, _ := startServe(t, dir)
	agent := fixtures.AgentBinary(t)

	// The daemon is reached through a proxy that holds its health checks
	// back for twice the first wait, and serves everything else at once.
	target, err := url.Parse(served)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var held atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			held.Add(1)
			select {
			case <-time.After(2 * healthTimeout):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	layout := daemon.Layout{Dir: dir}
	info, err := layout.ReadInfo()
	if err != nil {
		t.Fatal(err)
	}
	info.URL = slow.URL
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.DaemonInfo(), data, 0o600); err != nil {
		t.Fatal(err)
	}

	args := []string{"launch", "--owner", "Task/t-slow", "--", agent, "wait"}
	r := run(t, dir, args...)
	id := strings.TrimSpace(r.succeeded(t, args))
	if !strings.HasPrefix(id, "ae-") {
		t.Fatalf("launch printed %q, want the execution id", r.stdout)
	}
	if held.Load() == 0 {
		t.Fatal("the launch asked for no health check, want one held back by the proxy")
	}
	if !strings.Contains(r.stderr, "has not answered its health check within "+healthTimeout.String()) || !strings.Contains(r.stderr, "waiting up to "+healthPatience.String()) {
		t.Errorf("stderr %q, want it to say the command waits for the daemon's health check, and how long", r.stderr)
	}
	if st := showState(t, dir, id); st.OwnerID != "t-slow" {
		t.Errorf("show %s after the launch: owner %s/%s, want Task/t-slow", id, st.OwnerEntity, st.OwnerID)
	}
}
