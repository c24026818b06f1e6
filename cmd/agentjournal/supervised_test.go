package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
)

// TestAgentOutlivesItsDaemon: an agent keeps running while its daemon is
// killed with SIGKILL, and then while the next one stops cleanly; each
// daemon started after attaches to it, journals what it printed meanwhile,
// delivers messages to it and records its end. Every marker it printed is
// in the journal exactly once, and the execution ends completed, never
// terminated.
func TestAgentOutlivesItsDaemon(t *testing.T) {
	t.Parallel()
	const markers = 60
	d := startDaemon(t, "sup", t.TempDir(), nil, "--on-stop=leave")
	id := d.launchAgent(t, "t-sup", fmt.Sprintf("markers:%d:50ms", markers), "echo:1", "signal:"+`{"type":"status","payload":{"summary":"after the echo"}}`)
	observed := func() []string {
		var ids []string
		for _, r := range d.records(t, id) {
			if r.Type == "observation.recorded" {
				ids = append(ids, r.ObservationID)
			}
		}
		return ids
	}
	pollUntil(t, procConvergeWait, "the first markers journaled", func() (bool, string) {
		n := len(observed())
		return n >= 5, fmt.Sprintf("%d observations", n)
	})

	// A crash: the agent prints on with no daemon to read it.
	d.kill()
	time.Sleep(time.Second)
	d.restart()
	pollUntil(t, procConvergeWait, "markers after the crash journaled", func() (bool, string) {
		n := len(observed())
		return n >= markers/2, fmt.Sprintf("%d observations", n)
	})

	// A clean stop, as for an upgrade, leaves it running too.
	d.stop()
	d.restart()
	pollUntil(t, procConvergeWait, "every marker journaled", func() (bool, string) {
		n := len(observed())
		return n >= markers, fmt.Sprintf("%d observations", n)
	})
	code, body, err := d.do("POST", "/v1/executions/"+id+"/messages", map[string]any{"messageId": "m-late", "type": "prompt", "payload": map[string]any{"text": "hello"}})
	if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"delivered"`) {
		t.Fatalf("message to the attached agent: %d %v %s, want it delivered", code, err, body)
	}
	pollUntil(t, procConvergeWait, "the execution ended", func() (bool, string) {
		st := d.state(t, id)
		return st.Lifecycle == "completed" || st.Lifecycle == "terminated" || st.Lifecycle == "failed", st.Lifecycle
	})

	ids := observed()
	seen := map[string]int{}
	for _, o := range ids {
		seen[o]++
	}
	for o, n := range seen {
		if n != 1 {
			t.Errorf("observation %s journaled %d times", o, n)
		}
	}
	// The markers, then the status printed after the echo.
	if len(seen) != markers+1 {
		t.Errorf("%d distinct observations, want %d markers and the status after the echo: %v", len(seen), markers+1, ids)
	}
	var ends, attaches []string
	for _, r := range d.records(t, id) {
		if r.Type != "state.changed" {
			continue
		}
		if strings.HasPrefix(r.Reason, "attached") {
			attaches = append(attaches, r.Reason)
		}
		if strings.Contains(r.Reason, "exit status") || strings.Contains(r.Reason, "system_restart") {
			ends = append(ends, r.Reason)
		}
	}
	if st := d.state(t, id); st.Lifecycle != "completed" || !slices.Equal(ends, []string{"exit status 0"}) {
		t.Errorf("execution ended %s with %q, want completed by exit status 0 only", st.Lifecycle, ends)
	}
	if len(attaches) != 2 {
		t.Errorf("attach records %q, want one per restart", attaches)
	}
	// The policy decides on its own time; a restart may hold it up to its
	// takeover after a kill.
	pollUntil(t, procDecisionWait, "one decision on every observation", func() (bool, string) {
		problems := decisionProblems(d.records(t, id))
		return len(problems) == 0, strings.Join(problems, "; ")
	})
}

// TestTimeLimitOutlivesItsDaemon: an agent's time limit counts from its
// launch across a restart of its daemon: the daemon that attaches to it
// enforces what is left, and at once when the limit passed while no daemon
// ran.
func TestTimeLimitOutlivesItsDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "limit", t.TempDir(), nil, "--on-stop=leave")
	body := map[string]any{"ownerEntity": "Task", "ownerId": "t-limit", "agent": "generic", "timeout": "3s",
		"command": []string{fixtures.AgentBinary(t), "say:started", "sleep:120s"}}
	code, out, err := d.do("POST", "/v1/executions", body)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("launch: %d %v %s", code, err, out)
	}
	var l struct {
		Reference struct {
			AgentExecutionID string `json:"agentExecutionId"`
		} `json:"reference"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	d.stop()
	// The limit passes while no daemon runs the agent.
	time.Sleep(4 * time.Second)
	d.restart()
	pollUntil(t, procConvergeWait, "the execution ended by its time limit", func() (bool, string) {
		st := d.state(t, id)
		return st.Lifecycle == "cancelled" || st.Lifecycle == "terminated", st.Lifecycle
	})
	var interruptions []string
	for _, r := range d.records(t, id) {
		if r.Type == "interruption.recorded" {
			interruptions = append(interruptions, r.Reason)
		}
	}
	if !slices.Equal(interruptions, []string{"timeout"}) {
		t.Errorf("interruptions %q, want one, timeout", interruptions)
	}
}
