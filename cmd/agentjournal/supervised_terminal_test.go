package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// terminalView is what these tests read of an execution's terminal.
type terminalView struct {
	TerminalID string `json:"terminalId"`
	Available  bool   `json:"available"`
	Snapshot   *struct {
		Recent string `json:"recent"`
		Dead   bool   `json:"dead"`
	} `json:"snapshot"`
}

func (d *daemonProc) terminal(t *testing.T, id string) terminalView {
	t.Helper()
	var v terminalView
	d.get(t, "/v1/executions/"+id+"/terminal", &v)
	return v
}

// agentPID reads the pid of a supervised agent from its supervisor's
// state directory.
func agentPID(t *testing.T, dataDir, id string) int {
	t.Helper()
	esc, err := eventstore.EscapeID(id)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dataDir, "supervised", esc, "pids.json"))
	if err != nil {
		t.Fatalf("execution %s has no supervisor: %v", id, err)
	}
	var pids struct {
		Agent int `json:"agent"`
	}
	if err := json.Unmarshal(data, &pids); err != nil || pids.Agent <= 0 {
		t.Fatalf("pids.json of %s: %s (%v), want the agent's pid", id, data, err)
	}
	return pids.Agent
}

// TestTerminalLanesOutliveTheirDaemon: agents on terminal lanes keep
// running while their daemon stops with SIGTERM, and nothing records an
// interruption; the next daemon attaches to them: their terminals come
// back under the same ids with their screens, typing into one reaches the
// agent, whose answer is displayed and journaled, output printed while no
// daemon ran is journaled once, and stopping one ends it.
func TestTerminalLanesOutliveTheirDaemon(t *testing.T) {
	t.Parallel()
	const markers = 20
	dir := t.TempDir()
	d := startDaemon(t, "termsup", dir, nil, "--on-stop=leave")
	const posture = "structured-interactive"
	typed := d.launchAgentAs(t, posture, "t-term-typed", "say:started", "echo:1",
		"signal:"+`{"type":"status","payload":{"summary":"after the echo"}}`)
	printing := d.launchAgentAs(t, posture, "t-term-markers", "say:started", "sleep:1s", fmt.Sprintf("markers:%d:100ms", markers), "sleep:120s")
	stopped := d.launchAgentAs(t, posture, "t-term-stopped", "say:started", "sleep:120s")
	ids := []string{typed, printing, stopped}
	termIDs := map[string]string{}
	for _, id := range ids {
		pollUntil(t, procConvergeWait, id+"'s terminal shows it started", func() (bool, string) {
			v := d.terminal(t, id)
			termIDs[id] = v.TerminalID
			return v.Available && v.Snapshot != nil && strings.Contains(v.Snapshot.Recent, "started"), fmt.Sprintf("%+v", v)
		})
	}
	pids := map[string]int{}
	for _, id := range ids {
		pids[id] = agentPID(t, dir, id)
	}

	d.stop()
	for _, id := range ids {
		if !processAlive(pids[id]) {
			t.Fatalf("the agent of %s (pid %d) died with its daemon, want it running", id, pids[id])
		}
	}
	d.restart()

	for _, id := range ids {
		v := d.terminal(t, id)
		if v.TerminalID != termIDs[id] || !v.Available || v.Snapshot == nil || !strings.Contains(v.Snapshot.Recent, "started") {
			t.Errorf("terminal of %s after the restart: %+v, want %s available, its screen showing \"started\"", id, v, termIDs[id])
		}
	}
	code, body, err := d.do("POST", "/v1/executions/"+typed+"/terminal/input", map[string]any{"data": "hello again\r"})
	if err != nil || code != http.StatusOK {
		t.Fatalf("type into the attached terminal: %d %v %s", code, err, body)
	}
	pollUntil(t, procConvergeWait, "the typed agent's answer displayed and its status journaled", func() (bool, string) {
		v := d.terminal(t, typed)
		var statuses int
		for _, r := range d.records(t, typed) {
			if r.Type == "observation.recorded" {
				statuses++
			}
		}
		shown := v.Snapshot != nil && strings.Contains(v.Snapshot.Recent, "echo: hello again")
		return shown && statuses == 1, fmt.Sprintf("answer shown %v, %d observations", shown, statuses)
	})
	pollUntil(t, procConvergeWait, "the typed agent completed", func() (bool, string) {
		st := d.state(t, typed)
		return st.Lifecycle == "completed", st.Lifecycle
	})

	observed := func() map[string]int {
		seen := map[string]int{}
		for _, r := range d.records(t, printing) {
			if r.Type == "observation.recorded" {
				seen[r.ObservationID]++
			}
		}
		return seen
	}
	pollUntil(t, procConvergeWait, "every marker journaled", func() (bool, string) {
		n := len(observed())
		return n >= markers, fmt.Sprintf("%d observations", n)
	})
	for o, n := range observed() {
		if n != 1 {
			t.Errorf("observation %s of %s journaled %d times, want once", o, printing, n)
		}
	}
	if n := len(observed()); n != markers {
		t.Errorf("%d distinct observations of %s, want its %d markers", n, printing, markers)
	}

	code, body, err = d.do("POST", "/v1/executions/"+stopped+"/stop", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("stop %s: %d %v %s", stopped, code, err, body)
	}
	pollUntil(t, procConvergeWait, "the stopped agent ended", func() (bool, string) {
		st := d.state(t, stopped)
		return st.Lifecycle != "running" && !processAlive(pids[stopped]), fmt.Sprintf("%s, process alive %v", st.Lifecycle, processAlive(pids[stopped]))
	})
	if v := d.terminal(t, stopped); v.Available {
		t.Errorf("terminal of the stopped %s: %+v, want it no longer available", stopped, v)
	}
	if !processAlive(pids[printing]) {
		t.Errorf("the agent of %s died, want it running until its test ends", printing)
	}

	for _, id := range ids {
		var attaches int
		for _, r := range d.records(t, id) {
			if r.Type == "interruption.recorded" && id != stopped || strings.Contains(r.Reason, "shutdown") || strings.Contains(r.Reason, "system_restart") {
				t.Errorf("%s: %s %q, want no interruption by the daemon's stop", id, r.Type, r.Reason)
			}
			if r.Type == "state.changed" && strings.HasPrefix(r.Reason, "attached") {
				attaches++
			}
		}
		if attaches != 1 {
			t.Errorf("%s: %d attach records, want one, after the restart", id, attaches)
		}
	}
}
