package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// These tests run daemons as real processes: several daemons on one log,
// policy failover when the active daemon is killed, and a cluster of three
// daemons that loses a node.

var (
	daemonBinOnce sync.Once
	daemonBinPath string
	daemonBinErr  error
)

// agentjournalBinary builds the agentjournal command once per test process
// and returns its path.
func agentjournalBinary(t *testing.T) string {
	t.Helper()
	daemonBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentjournal-bin-")
		if err != nil {
			daemonBinErr = err
			return
		}
		daemonBinPath = filepath.Join(dir, "agentjournal")
		cmd := exec.Command("go", "build", "-o", daemonBinPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			daemonBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if daemonBinErr != nil {
		t.Fatalf("build agentjournal: %v", daemonBinErr)
	}
	return daemonBinPath
}

// Bounds of the waits below. They are generous because a policy failover
// waits out the dead subscriber's pinned TTL and a cluster elects new
// leaders; none of them is a timing assertion.
const (
	procStartWait    = 60 * time.Second
	procDecisionWait = 90 * time.Second
	procConvergeWait = 30 * time.Second
)

// daemonProc is an agentjournal daemon running as a child process.
type daemonProc struct {
	t    *testing.T
	name string
	dir  string
	args []string // everything after the binary
	log  string   // the daemon's stderr

	cmd    *exec.Cmd
	exited chan struct{}

	url, token, natsURL string
}

// newDaemon prepares a daemon on dir, stopped when the test ends: global
// flags go before serve, serve flags after it. launch runs it.
func newDaemon(t *testing.T, name, dir string, global []string, serve ...string) *daemonProc {
	t.Helper()
	args := append([]string{"--data", dir}, global...)
	args = append(args, "serve", "--listen", "127.0.0.1:0")
	if !slices.ContainsFunc(serve, func(a string) bool { return strings.HasPrefix(a, "--on-stop") }) {
		// The agents a test ran end with it, unless it is about leaving them.
		args = append(args, "--on-stop=stop")
	}
	args = append(args, serve...)
	d := &daemonProc{t: t, name: name, dir: dir, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	fixtures.KillSupervised(t, dir)
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			if data, err := os.ReadFile(d.log); err == nil {
				t.Logf("daemon %s log:\n%s", d.name, lastLines(string(data), 60))
			}
		}
	})
	return d
}

// startDaemon starts a daemon and waits until it serves.
func startDaemon(t *testing.T, name, dir string, global []string, serve ...string) *daemonProc {
	t.Helper()
	d := newDaemon(t, name, dir, global, serve...)
	d.launch()
	d.waitReady()
	return d
}

// launch starts the process; waitReady waits for it to serve.
func (d *daemonProc) launch() {
	d.t.Helper()
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- start %s\n", strings.Join(d.args, " "))
	cmd := exec.Command(agentjournalBinary(d.t), d.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "AGENTJOURNAL_DATA=")
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start daemon %s: %v", d.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
}

// waitReady waits until the running process wrote its daemon.json. A
// daemon killed before leaves its daemon.json behind, so only the file
// naming this process counts.
func (d *daemonProc) waitReady() {
	d.t.Helper()
	deadline := time.Now().Add(procStartWait)
	for {
		if data, err := os.ReadFile(daemon.Layout{Dir: d.dir}.DaemonInfo()); err == nil {
			var info daemon.Info
			if json.Unmarshal(data, &info) == nil && info.PID == d.cmd.Process.Pid {
				tok, err := os.ReadFile(info.TokenFile)
				if err != nil {
					d.t.Fatal(err)
				}
				d.url, d.token, d.natsURL = info.URL, strings.TrimSpace(string(tok)), info.NATSURL
				return
			}
		}
		select {
		case <-d.exited:
			d.t.Fatalf("daemon %s exited before it served: %s", d.name, d.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("daemon %s did not serve within %s", d.name, procStartWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restart starts the daemon again on the same data directory.
func (d *daemonProc) restart() {
	d.t.Helper()
	d.launch()
	d.waitReady()
}

// kill ends the daemon with SIGKILL, as a crash would.
func (d *daemonProc) kill() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// stop ends the daemon with SIGTERM, and SIGKILL if it does not exit in time.
func (d *daemonProc) stop() {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.exited
	}
}

var daemonHTTP = &http.Client{Timeout: 30 * time.Second}

// do sends a request to the daemon's API and returns the status and body.
func (d *daemonProc) do(method, path string, body any) (int, []byte, error) {
	return d.client().do(context.Background(), method, path, body)
}

// get reads path and decodes the JSON answer into out.
func (d *daemonProc) get(t *testing.T, path string, out any) {
	t.Helper()
	code, body, err := d.do("GET", path, nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("daemon %s: GET %s: %d %v %s", d.name, path, code, err, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("daemon %s: GET %s: %v", d.name, path, err)
	}
}

// launchAgent starts the fixture agent with steps through the daemon's API
// and returns the execution id.
func (d *daemonProc) launchAgent(t *testing.T, ownerID string, steps ...string) string {
	t.Helper()
	return d.launchAgentAs(t, "", ownerID, steps...)
}

// launchAgentAs is launchAgent with a posture: a terminal lane for
// structured-interactive or native-terminal-escape-hatch; "" is the default.
func (d *daemonProc) launchAgentAs(t *testing.T, posture, ownerID string, steps ...string) string {
	t.Helper()
	body := map[string]any{"ownerEntity": "Task", "ownerId": ownerID, "agent": "generic",
		"command": append([]string{fixtures.AgentBinary(t)}, steps...)}
	if posture != "" {
		body["posture"] = posture
	}
	code, out, err := d.do("POST", "/v1/executions", body)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("daemon %s: launch: %d %v %s", d.name, code, err, out)
	}
	var l struct {
		Reference struct {
			AgentExecutionID string `json:"agentExecutionId"`
		} `json:"reference"`
	}
	if err := json.Unmarshal(out, &l); err != nil || l.Reference.AgentExecutionID == "" {
		t.Fatalf("daemon %s: launch answered %s (%v), want a reference", d.name, out, err)
	}
	return l.Reference.AgentExecutionID
}

// decidedObservation is the answer to a recorded observation.
type decidedObservation struct {
	ObservationID string `json:"observationId"`
	Sequence      uint64 `json:"sequence"`
	Decision      struct {
		DecisionID string `json:"decisionId"`
		Sequence   uint64 `json:"sequence"`
	} `json:"decision"`
}

// observe records an observation through the daemon's API and returns the
// acknowledgement once the policy decided on it. An observation that is
// recorded but waits for a decision (a policy failing over), or whose append
// met a cluster electing a new leader, is sent again with the same id, which
// appends nothing twice.
func (d *daemonProc) observe(t *testing.T, execID, obsID string, signal map[string]any) decidedObservation {
	t.Helper()
	body := map[string]any{"observationId": obsID, "source": "daemon", "confidence": "high", "signal": signal}
	path := "/v1/executions/" + execID + "/observations"
	deadline := time.Now().Add(procDecisionWait)
	for {
		code, out, err := d.do("POST", path, body)
		if err == nil && code == http.StatusOK {
			var ack decidedObservation
			if err := json.Unmarshal(out, &ack); err != nil {
				t.Fatalf("daemon %s: observation %s: %v", d.name, obsID, err)
			}
			if ack.Decision.DecisionID == "" || ack.Sequence == 0 {
				t.Fatalf("daemon %s: observation %s answered %s, want its sequence and decision", d.name, obsID, out)
			}
			return ack
		}
		if err == nil && code != http.StatusGatewayTimeout && code < 500 {
			t.Fatalf("daemon %s: observation %s: %d %s", d.name, obsID, code, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon %s: observation %s not decided within %s: %d %v %s", d.name, obsID, procDecisionWait, code, err, out)
		}
		t.Logf("daemon %s: observation %s: %d %v, sending it again", d.name, obsID, code, err)
		time.Sleep(200 * time.Millisecond)
	}
}

func progressSignal(summary string) map[string]any {
	return map[string]any{"type": "progress", "payload": map[string]any{"summary": summary}}
}

func statusSignal(summary string) map[string]any {
	return map[string]any{"type": "status", "payload": map[string]any{"summary": summary}}
}

func blockedSignal(reason string) map[string]any {
	return map[string]any{"type": "blocked", "payload": map[string]any{"reason": reason}}
}

// seenRecord is what these tests read of a record.
type seenRecord struct {
	Sequence      uint64    `json:"sequence"`
	Type          string    `json:"type"`
	ObservationID string    `json:"observationId"`
	DecisionID    string    `json:"decisionId"`
	Reason        string    `json:"reason"`
	OccurredAt    time.Time `json:"occurredAt"`
}

// records reads an execution's whole journal through the daemon's API.
func (d *daemonProc) records(t *testing.T, execID string) []seenRecord {
	t.Helper()
	recs, busy := d.tryRecords(t, execID)
	if busy != "" {
		t.Fatal(busy)
	}
	return recs
}

// tryRecords is records for a poll while the cluster recovers from a lost
// node: a 503 or 504 (the log not answering in time yet) is returned as a
// reason to poll again; any other failure ends the test.
func (d *daemonProc) tryRecords(t *testing.T, execID string) (recs []seenRecord, busy string) {
	t.Helper()
	from := uint64(1)
	for {
		path := fmt.Sprintf("/v1/executions/%s/records?fromSeq=%d&limit=1000", execID, from)
		code, body, err := d.do("GET", path, nil)
		switch {
		case err == nil && (code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout):
			return nil, fmt.Sprintf("daemon %s: GET %s: %d %s", d.name, path, code, body)
		case err != nil || code != http.StatusOK:
			t.Fatalf("daemon %s: GET %s: %d %v %s", d.name, path, code, err, body)
		}
		var page struct {
			Records []seenRecord `json:"records"`
			Next    *uint64      `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("daemon %s: GET %s: %v", d.name, path, err)
		}
		recs = append(recs, page.Records...)
		if page.Next == nil {
			return recs, ""
		}
		from = *page.Next
	}
}

// decisionProblems lists the observations of a journal without exactly one
// decision, and the decisions on observations the journal does not hold.
func decisionProblems(recs []seenRecord) []string {
	observed := map[string]bool{}
	decided := map[string]int{}
	for _, r := range recs {
		switch r.Type {
		case "observation.recorded":
			observed[r.ObservationID] = true
		case "decision.recorded":
			if r.ObservationID != "" {
				decided[r.ObservationID]++
			}
		}
	}
	var problems []string
	for id := range observed {
		if n := decided[id]; n != 1 {
			problems = append(problems, fmt.Sprintf("observation %s has %d decisions, want 1", id, n))
		}
	}
	for id := range decided {
		if !observed[id] {
			problems = append(problems, fmt.Sprintf("decision on observation %s, which the journal does not hold", id))
		}
	}
	return problems
}

// checkDecisions fails the test unless every observation in the journal, as
// read through d, has exactly one decision.
func (d *daemonProc) checkDecisions(t *testing.T, execID string) []seenRecord {
	t.Helper()
	recs := d.records(t, execID)
	for _, p := range decisionProblems(recs) {
		t.Errorf("daemon %s, execution %s: %s", d.name, execID, p)
	}
	return recs
}

// sharedState is the part of an execution's read model every daemon on
// one log must agree on.
type sharedState struct {
	Lifecycle             string `json:"lifecycle"`
	Attention             string `json:"attention"`
	Activity              string `json:"activity"`
	CurrentInputRequestID string `json:"currentInputRequestId"`
	Journal               struct {
		RecordCount uint64 `json:"recordCount"`
	} `json:"journal"`
}

func (d *daemonProc) state(t *testing.T, execID string) sharedState {
	t.Helper()
	var st sharedState
	d.get(t, "/v1/executions/"+execID, &st)
	return st
}

// pollUntil polls cond until it holds, and fails the test naming what it
// waited for, and why cond last said no, once within has passed.
func pollUntil(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, within, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastLines(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// askingAgent makes the fixture agent signal progress, a status and a
// question, then wait until its stdin closes: it lives as long as the daemon
// that hosts it, and no longer when that daemon is killed.
func askingAgent(requestID string) []string {
	return []string{
		`signal:{"type":"progress","payload":{"summary":"reading the code"}}`,
		`signal:{"type":"status","payload":{"summary":"planning","phase":"planning"}}`,
		`signal:{"type":"needs_input","payload":{"requestId":"` + requestID + `","question":"which branch?"}}`,
		"wait",
	}
}

func TestDaemonsShareOneLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes")
	}
	dirA := t.TempDir()
	// A fixed port, so that B finds A again after A restarts.
	a := startDaemon(t, "A", dirA, nil, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0]))
	if !strings.HasPrefix(a.natsURL, "nats://127.0.0.1:") {
		t.Fatalf("daemon A's natsUrl = %q, want nats://127.0.0.1:<port>", a.natsURL)
	}
	// A's listener lets in only those with its secret, created 0600.
	secret := daemon.Layout{Dir: dirA}.NATSSecret()
	if info, err := os.Stat(secret); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("A's NATS secret: %v, %v; want a 0600 file", info, err)
	}
	if r := run(t, t.TempDir(), "--nats-url", a.natsURL, "journal", "ls"); r.code == exitOK || !strings.Contains(r.stderr, "Authorization Violation") {
		t.Fatalf("joining A without its secret: exit %d, %s; want it refused", r.code, r.stderr)
	}
	b := startDaemon(t, "B", t.TempDir(), []string{"--nats-url", a.natsURL, "--nats-secret-file", secret})
	daemons := []*daemonProc{a, b}

	var execs []string
	for i, d := range []*daemonProc{a, a, b, b} {
		execs = append(execs, d.launchAgent(t, fmt.Sprintf("t-%d", i), askingAgent(fmt.Sprintf("r-%d", i))...))
	}
	// Observations on every execution through both daemons, whichever
	// daemon hosts the agent.
	for i, id := range execs {
		a.observe(t, id, fmt.Sprintf("o-%d-a1", i), progressSignal("halfway"))
		b.observe(t, id, fmt.Sprintf("o-%d-b1", i), statusSignal("testing"))
		a.observe(t, id, fmt.Sprintf("o-%d-a2", i), blockedSignal("the tests need a database"))
		b.observe(t, id, fmt.Sprintf("o-%d-b2", i), progressSignal("almost done"))
	}

	for i, id := range execs {
		// Wait until the agent's own three signals are decided too.
		pollUntil(t, procConvergeWait, "execution "+id+" holds its 7 observations", func() (bool, string) {
			recs := a.records(t, id)
			n := 0
			for _, r := range recs {
				if r.Type == "observation.recorded" {
					n++
				}
			}
			problems := decisionProblems(recs)
			return n == 7 && len(problems) == 0, fmt.Sprintf("%d observations, want 7; %v", n, problems)
		})
		// The policy may still be appending what follows its last
		// decision, so the two reads agree once it is done.
		pollUntil(t, procConvergeWait, fmt.Sprintf("execution %d reads the same through A and B", i), func() (bool, string) {
			diff := cmp.Diff(a.records(t, id), b.records(t, id))
			return diff == "", "(-A +B):\n" + diff
		})
		a.checkDecisions(t, id)
		b.checkDecisions(t, id)
		pollUntil(t, procConvergeWait, "the read models of A and B agree on "+id, func() (bool, string) {
			sa, sb := a.state(t, id), b.state(t, id)
			n := uint64(len(a.records(t, id)))
			if sa.Journal.RecordCount != n {
				return false, fmt.Sprintf("A's read model holds %d records, the journal %d", sa.Journal.RecordCount, n)
			}
			return sa == sb, cmp.Diff(sa, sb)
		})
	}
	for _, d := range daemons {
		if st := d.state(t, execs[0]); st.Attention == "" || st.Lifecycle == "" {
			t.Errorf("daemon %s: execution state %+v, want a lifecycle and an attention", d.name, st)
		}
	}

	// Restarting A, whose NATS B joined, leaves B's live agents alone: A
	// recovers only the executions it hosted.
	a.stop()
	a.restart()
	for _, id := range execs[2:] {
		for _, r := range a.records(t, id) {
			if r.Type == "state.changed" && r.Reason == "system_restart" {
				t.Fatalf("restarting A marked %s, an agent B runs, terminated (sequence %d)", id, r.Sequence)
			}
		}
		if st := b.state(t, id); st.Lifecycle != "running" {
			t.Fatalf("B's execution %s is %s after A restarted, want running", id, st.Lifecycle)
		}
	}
}

func TestDaemonPolicyFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs daemons as processes and waits out a policy failover")
	}
	// The log lives in a NATS server of its own, so that either daemon can
	// be killed while the other carries on.
	host := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	join := []string{"--nats-url", host.ClientURL(), "--nats-secret-file", natsSecretFile(t)}
	b := startDaemon(t, "B", t.TempDir(), join)
	c := startDaemon(t, "C", t.TempDir(), join)

	onB := b.launchAgent(t, "t-b", askingAgent("r-b")...)
	onC := c.launchAgent(t, "t-c", askingAgent("r-c")...)
	execs := []string{onB, onC}
	posted := map[string][]string{}
	post := func(d *daemonProc, phase string, n int) {
		t.Helper()
		for i := range n {
			for _, id := range execs {
				obsID := fmt.Sprintf("o-%s-%d", phase, i)
				d.observe(t, id, obsID, progressSignal(phase))
				posted[id] = append(posted[id], obsID)
			}
		}
	}

	post(c, "both-up", 2)
	post(b, "both-up-b", 2)

	// Kill B between observations: if B's policy was the active one, C's
	// takes over once B's pin expires; if not, C's carries on.
	b.kill()
	post(c, "b-killed", 3)

	// Bring B back, then kill C: B's policy has to take over now.
	b.restart()
	c.kill()
	post(b, "c-killed", 3)

	for _, id := range execs {
		recs := b.checkDecisions(t, id)
		have := map[string]bool{}
		for _, r := range recs {
			if r.Type == "observation.recorded" {
				have[r.ObservationID] = true
			}
		}
		for _, obsID := range posted[id] {
			if !have[obsID] {
				t.Errorf("execution %s: acknowledged observation %s is not in the journal", id, obsID)
			}
		}
	}
}

func TestClusterDaemonsSurviveANode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	nodes := startCluster(t, "aj-test")

	// Kill the node that leads the stream, and append through another one,
	// so that the kill forces a leader election under the appends.
	victim := streamLeader(t, nodes)
	via := nodes[(victim+1)%3]
	other := nodes[(victim+2)%3]
	t.Logf("appending through %s, killing the stream leader %s", via.name, nodes[victim].name)

	id := via.launchAgent(t, "t-cluster", "wait")
	var acked []decidedObservation
	for i := range 5 {
		acked = append(acked, via.observe(t, id, fmt.Sprintf("o-before-%d", i), progressSignal("before")))
	}
	nodes[victim].kill()
	for i := range 10 {
		acked = append(acked, via.observe(t, id, fmt.Sprintf("o-after-%d", i), progressSignal("after")))
	}

	// Every acknowledged observation, and its decision, is in the journal
	// as read through both surviving nodes. A replica may answer reads a
	// moment behind the leader, hence the wait.
	for _, d := range []*daemonProc{via, other} {
		pollUntil(t, procConvergeWait, "node "+d.name+" holds every acknowledged record", func() (bool, string) {
			recs, busy := d.tryRecords(t, id)
			if busy != "" {
				return false, busy
			}
			bySeq := map[uint64]seenRecord{}
			for _, r := range recs {
				bySeq[r.Sequence] = r
			}
			for _, a := range acked {
				if r := bySeq[a.Sequence]; r.Type != "observation.recorded" || r.ObservationID != a.ObservationID {
					return false, fmt.Sprintf("sequence %d holds %+v, want observation %s", a.Sequence, r, a.ObservationID)
				}
				if r := bySeq[a.Decision.Sequence]; r.Type != "decision.recorded" || r.DecisionID != a.Decision.DecisionID {
					return false, fmt.Sprintf("sequence %d holds %+v, want decision %s", a.Decision.Sequence, r, a.Decision.DecisionID)
				}
			}
			if p := decisionProblems(recs); len(p) > 0 {
				return false, strings.Join(p, "; ")
			}
			return true, ""
		})
	}
}

// The nodes of a cluster share the policy's partitions: each decides on its
// share, observations recorded through any node are answered with their
// decision, and when a node is killed the others take its share over.
func TestClusterDaemonsSharePolicyPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	nodes := startCluster(t, "aj-parts", "--policy-partitions", "6")
	waitShares(t, nodes, 6)
	// The daemons' logs say so too.
	for _, n := range nodes {
		if data, err := os.ReadFile(n.log); err != nil || !strings.Contains(string(data), `msg="policy decides on partitions"`) {
			t.Errorf("node %s's log does not say which partitions it decides on (%v)", n.name, err)
		}
	}

	var execs []string
	for i, n := range nodes {
		execs = append(execs, n.launchAgent(t, fmt.Sprintf("t-part-%d", i), "wait"))
	}
	observeAll := func(via []*daemonProc, phase string) {
		t.Helper()
		for i := range 3 {
			for _, id := range execs {
				via[i%len(via)].observe(t, id, fmt.Sprintf("o-%s-%d", phase, i), progressSignal(phase))
			}
		}
	}
	observeAll(nodes, "all")

	victim := streamLeader(t, nodes)
	nodes[victim].kill()
	survivors := slices.Delete(slices.Clone(nodes), victim, victim+1)
	waitShares(t, survivors, 6)
	observeAll(survivors, "survivors")
	for _, id := range execs {
		survivors[0].checkDecisions(t, id)
	}
}

// waitShares waits until the partitions each node's /healthz says its
// policy decides on are an even share of the partitions, every one decided
// by one node.
func waitShares(t *testing.T, nodes []*daemonProc, partitions int) {
	t.Helper()
	pollUntil(t, procConvergeWait, "the nodes share the partitions", func() (bool, string) {
		owner := map[int]string{}
		for _, n := range nodes {
			code, body, err := n.do("GET", "/healthz", nil)
			if err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("node %s: /healthz %d %v %s", n.name, code, err, body)
			}
			var h client.Health
			if err := json.Unmarshal(body, &h); err != nil {
				t.Fatalf("node %s: /healthz %s: %v", n.name, body, err)
			}
			if h.Policy == nil || h.Policy.Of != partitions || h.Policy.Member == "" {
				return false, fmt.Sprintf("node %s: /healthz says %s, want its policy's share of %d partitions", n.name, body, partitions)
			}
			if len(h.Policy.Partitions) != partitions/len(nodes) {
				return false, fmt.Sprintf("node %s decides on partitions %v", n.name, h.Policy.Partitions)
			}
			for _, p := range h.Policy.Partitions {
				if o, ok := owner[p]; ok {
					return false, fmt.Sprintf("partition %d decided by %s and %s", p, o, n.name)
				}
				owner[p] = n.name
			}
		}
		return len(owner) == partitions, fmt.Sprintf("partitions decided: %v", owner)
	})
}

// startCluster starts three daemons as the nodes of a cluster named name,
// with the journal stream on all three, and waits until each serves.
func startCluster(t *testing.T, name string, serve ...string) []*daemonProc {
	t.Helper()
	return startClusterOf(t, name, func(int) []string { return serve })
}

// startClusterOf is startCluster with serve flags of each node's own:
// node i is given serve(i).
func startClusterOf(t *testing.T, name string, serve func(i int) []string) []*daemonProc {
	t.Helper()
	ports := fixtures.FreePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	// Every node of a cluster is given the same secret, for its routes.
	secret := []string{"--nats-secret-file", natsSecretFile(t)}
	nodes := make([]*daemonProc, 3)
	for i := range nodes {
		args := append([]string{"--cluster-name", name, "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[i]),
			"--routes", strings.Join(routes, ","), "--replicas", "3"}, serve(i)...)
		nodes[i] = newDaemon(t, fmt.Sprintf("node%d", i), t.TempDir(), secret, args...)
	}
	// Once a node is gone, the survivors cannot all stop gracefully: the
	// last one has no majority left to record its agents' end and waits for
	// one. Stopping is not under test here, so the nodes are killed.
	t.Cleanup(func() {
		for _, n := range nodes {
			n.kill()
		}
	})
	// Each node waits for a majority before it serves: start all, then wait.
	for _, n := range nodes {
		n.launch()
	}
	for _, n := range nodes {
		n.waitReady()
	}
	return nodes
}

// streamLeader returns the index of the node that leads the journal stream,
// asking the cluster through the first node's NATS listener.
func streamLeader(t *testing.T, nodes []*daemonProc) int {
	t.Helper()
	return leaderNode(t, nodes, "the journal stream", func(ctx context.Context, js jetstream.JetStream) (*jetstream.ClusterInfo, error) {
		s, err := js.Stream(ctx, bus.DefaultStreamName)
		if err != nil {
			return nil, err
		}
		return s.CachedInfo().Cluster, nil
	})
}

// leaderNode returns the index of the node that leads what, by the cluster
// information cluster reads through the first node's NATS listener.
func leaderNode(t *testing.T, nodes []*daemonProc, what string, cluster func(context.Context, jetstream.JetStream) (*jetstream.ClusterInfo, error)) int {
	t.Helper()
	nc, err := nats.Connect(nodes[0].natsURL, nats.UserInfo(bus.User, fixtures.NATSSecret))
	if err != nil {
		t.Fatalf("connect to %s: %v", nodes[0].natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var leader string
	pollUntil(t, procConvergeWait, what+" has a leader", func() (bool, string) {
		ci, err := cluster(t.Context(), js)
		if err != nil {
			return false, err.Error()
		}
		if ci != nil && ci.Leader != "" {
			leader = ci.Leader
			return true, ""
		}
		return false, "no leader"
	})
	for i, n := range nodes {
		name, err := os.ReadFile(daemon.Layout{Dir: n.dir}.ServerName())
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(name)) == leader {
			return i
		}
	}
	t.Fatalf("the leader of %s, %q, is none of the nodes", what, leader)
	return 0
}

func TestClusterFlagUsageErrors(t *testing.T) {
	const routes = "nats-route://127.0.0.1:6222,nats-route://127.0.0.1:6223"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"name without listen", []string{"serve", "--cluster-name", "aj", "--routes", routes}, "--cluster-name needs --cluster-listen"},
		{"routes without name", []string{"serve", "--routes", routes}, "--routes needs --cluster-name"},
		{"listen without name", []string{"serve", "--cluster-listen", "127.0.0.1:6222"}, "--cluster-listen needs --cluster-name"},
		{"cluster with nats-url", []string{"--nats-url", "nats://127.0.0.1:4222", "serve", "--cluster-name", "aj", "--cluster-listen", "127.0.0.1:6222"},
			"--cluster-name needs the embedded NATS"},
		{"bad name", []string{"serve", "--cluster-name", "a.b", "--cluster-listen", "127.0.0.1:6222"}, `--cluster-name "a.b" contains`},
		{"bad listen", []string{"serve", "--cluster-name", "aj", "--cluster-listen", "6222"}, `--cluster-listen "6222"`},
		{"bad route", []string{"serve", "--cluster-name", "aj", "--cluster-listen", "127.0.0.1:6222", "--routes", "http://127.0.0.1:6223"},
			`--routes: "http://127.0.0.1:6223" is not a route URL (want nats-route://host:port`},
		{"replicas without cluster", []string{"serve", "--replicas", "3"}, "--replicas 3 needs a cluster"},
		{"replicas out of range", []string{"serve", "--cluster-name", "aj", "--cluster-listen", "127.0.0.1:6222", "--replicas", "7"},
			"--replicas 7 is out of range (want 1 to 5)"},
		{"no replicas", []string{"serve", "--replicas", "0"}, "--replicas 0 is out of range"},
		{"one partition", []string{"serve", "--policy-partitions", "1"}, "--policy-partitions 1: want 2 to 1024, or 0"},
		{"too many partitions", []string{"serve", "--policy-partitions", "5000"}, "--policy-partitions 5000: want 2 to 1024"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, t.TempDir(), c.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", r.code, r.stderr, exitUsage, c.want)
			}
		})
	}
}

// TestJoinedDaemonFailsFastWhileItsNATSIsDown: a daemon joined with
// --nats-url answers writes 503 at once while the NATS it joined is down,
// saying so, and takes them again once the server is back.
func TestJoinedDaemonFailsFastWhileItsNATSIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon as a process")
	}
	natsDir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0])
	host := fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })
	b := startDaemon(t, "B", t.TempDir(), []string{"--nats-url", host.ClientURL(), "--nats-secret-file", natsSecretFile(t)})
	id := b.launchAgent(t, "t-down", "wait")
	b.observe(t, id, "o-before", progressSignal("before"))

	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"observationId": "o-down", "source": "daemon", "confidence": "high", "signal": progressSignal("during")}
	code, out, err := b.do("POST", "/v1/executions/"+id+"/observations", body)
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(out), "unreachable") || !strings.Contains(string(out), listen) {
		t.Fatalf("a write while the NATS is down: %d %s %v; want 503 saying the server at %s is unreachable", code, out, err, listen)
	}
	if code, out, err := b.do("GET", "/healthz", nil); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(out), "unreachable") {
		t.Fatalf("healthz while the NATS is down: %d %s %v; want 503", code, out, err)
	}

	fixtures.StartNATSAt(t, natsDir, func(c *bus.Config) { c.Listen = listen })
	b.observe(t, id, "o-after", progressSignal("after"))
	// Stopped while its NATS is up: the agent's end can be recorded.
	b.stop()
}
