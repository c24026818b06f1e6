package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
)

// Three hosts on a NATS of their own take 50 queued launches while hosts are
// killed (SIGKILL) and started again at random points: mid-start, idle,
// holding the queue. Every run ends, none waits forever, and none is ever
// started twice.
func TestFleetNeverStartsARunTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes")
	}
	nats := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	secret := filepath.Join(t.TempDir(), "nats-secret")
	if err := os.WriteFile(secret, []byte(fixtures.NATSSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	global := []string{"--nats-url", nats.ClientURL(), "--nats-secret-file", secret}
	var hosts []*daemonProc
	for i := range 3 {
		name := fmt.Sprint("h", i)
		hosts = append(hosts, startDaemon(t, name, t.TempDir(), global, "--host-name", name, "--lease", "1s", "--max-running", "4", "--on-stop=leave"))
	}
	alive := map[*daemonProc]bool{hosts[0]: true, hosts[1]: true, hosts[2]: true}
	rng := rand.New(rand.NewPCG(7, 29))
	pick := func() *daemonProc {
		for {
			if d := hosts[rng.IntN(len(hosts))]; alive[d] {
				return d
			}
		}
	}
	agent := fixtures.AgentBinary(t)
	const runs = 50
	kills := 0
	for i := range runs {
		seed := fmt.Sprint("chaos-", i)
		body := map[string]any{"ownerEntity": "Task", "ownerId": "t-chaos", "seed": seed, "agent": "generic",
			"command": []string{agent, "sleep:300ms", "say:done", "exit:0"},
			"dispatchContext": map[string]any{"originSurface": "desktop", "originProductId": "test", "dispatchMode": "queued",
				"initiatedAt": time.Now().UTC().Format(time.RFC3339)}}
		for attempt := 0; ; attempt++ {
			d := pick()
			code, out, err := d.do("POST", "/v1/executions", body)
			if err == nil && (code == http.StatusCreated || code == http.StatusConflict && strings.Contains(string(out), "already exists")) {
				break
			}
			if attempt > 20 {
				t.Fatalf("launch %d: %d %v %s", i, code, err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Now and then a host dies, and one that died comes back.
		switch {
		case i%7 == 3 && len(alive) > 1 && kills < 6:
			var up []*daemonProc
			for _, d := range hosts {
				if alive[d] {
					up = append(up, d)
				}
			}
			d := up[rng.IntN(len(up))]
			d.kill()
			delete(alive, d)
			kills++
		case i%7 == 6:
			for _, d := range hosts {
				if !alive[d] {
					d.restart()
					alive[d] = true
					break
				}
			}
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
	}
	for _, d := range hosts {
		if !alive[d] {
			d.restart()
			alive[d] = true
		}
	}
	// Every run ends; none is started twice.
	obs := hosts[0]
	var list struct {
		Executions []struct {
			ID        string `json:"id"`
			Lifecycle string `json:"lifecycle"`
		} `json:"executions"`
	}
	pollUntil(t, 3*time.Minute, "every queued run ends", func() (bool, string) {
		obs.get(t, "/v1/executions?owner=Task/t-chaos&limit=500", &list)
		if len(list.Executions) != runs {
			return false, fmt.Sprintf("%d executions, want %d", len(list.Executions), runs)
		}
		var open []string
		for _, e := range list.Executions {
			if e.Lifecycle == "starting" || e.Lifecycle == "running" {
				open = append(open, e.ID+" "+e.Lifecycle)
			}
		}
		return len(open) == 0, fmt.Sprintf("not ended: %v", open)
	})
	ended := map[string]int{}
	for _, e := range list.Executions {
		ended[e.Lifecycle]++
		starts := 0
		for _, r := range obs.records(t, e.ID) {
			if r.Type == "state.changed" && strings.HasPrefix(r.Reason, "process ") {
				starts++
			}
		}
		if starts > 1 {
			t.Errorf("%s was started %d times", e.ID, starts)
		}
	}
	t.Logf("%d hosts killed; the runs ended: %v", kills, ended)
	if ended["completed"] == 0 {
		t.Fatalf("no run completed: %v", ended)
	}
}
