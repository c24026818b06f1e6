package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
)

// These tests kill real daemon processes under load and check what the
// survivors, or the restarted daemon, answer meanwhile: every launch either
// runs or fails saying so, a record read right after it is acknowledged is
// found, and every observation gets exactly one decision. How long the
// policy paused is measured and logged, not asserted: it is a figure for
// docs/architecture.md, and a loaded machine would make any bound flaky.

// apiClient talks to a daemon at a fixed address; goroutines use it while
// the daemonProc is being restarted.
type apiClient struct {
	name, url, token string
}

func (d *daemonProc) client() apiClient { return apiClient{name: d.name, url: d.url, token: d.token} }

func (c apiClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return c.doWith(daemonHTTP, ctx, method, path, body)
}

func (c apiClient) doWith(hc *http.Client, ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// launchHTTP waits for a launch as long as it takes: what it answers is
// under test, not how fast.
var launchHTTP = &http.Client{Timeout: 3 * time.Minute}

// errNotTrue is an answer that is not the truth about the log: a client
// error for a well-formed request, a record said missing that was
// acknowledged, or another record where it should be.
var errNotTrue = errors.New("untrue answer")

// observeUntil records an observation and waits for its decision, sending
// it again with the same id while the daemon cannot answer (down, 5xx, or
// 504 while the policy fails over), until ctx ends. With noLate, a 504
// that says the observation is recorded is an untrue answer instead: its
// decision is only late.
func (c apiClient) observeUntil(ctx context.Context, execID, obsID string, noLate bool) (decidedObservation, error) {
	body := map[string]any{"observationId": obsID, "source": "daemon", "confidence": "high", "signal": progressSignal(obsID)}
	for {
		code, out, err := c.do(ctx, "POST", "/v1/executions/"+execID+"/observations", body)
		switch {
		case err == nil && code == http.StatusGatewayTimeout && noLate && bytes.Contains(out, []byte(" is recorded ")):
			return decidedObservation{}, fmt.Errorf("%w: observation %s answered %d %s, while a daemon that decides runs", errNotTrue, obsID, code, out)
		case err == nil && code == http.StatusOK:
			var ack decidedObservation
			if err := json.Unmarshal(out, &ack); err != nil || ack.Decision.DecisionID == "" || ack.Sequence == 0 {
				return ack, fmt.Errorf("%w: observation %s answered %s (%v), want its sequence and decision", errNotTrue, obsID, out, err)
			}
			return ack, nil
		case err == nil && code < 500:
			return decidedObservation{}, fmt.Errorf("%w: observation %s: %d %s", errNotTrue, obsID, code, out)
		}
		select {
		case <-ctx.Done():
			return decidedObservation{}, fmt.Errorf("observation %s not decided: %w (last answer %d %v %s)", obsID, ctx.Err(), code, err, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readBack reads the record at seq through the daemon and checks that it is
// the acknowledged observation. While the log cannot answer (503, 504) it
// asks again; every other answer is final.
func (c apiClient) readBack(ctx context.Context, execID, obsID string, seq uint64) error {
	for {
		code, out, err := c.do(ctx, "GET", fmt.Sprintf("/v1/executions/%s/records?fromSeq=%d&limit=1", execID, seq), nil)
		if err == nil && code == http.StatusOK {
			var page struct {
				Records []seenRecord `json:"records"`
			}
			if err := json.Unmarshal(out, &page); err != nil {
				return err
			}
			if len(page.Records) == 0 || page.Records[0].ObservationID != obsID || page.Records[0].Sequence != seq {
				return fmt.Errorf("%w: read right after its ack, sequence %d of %s holds %+v, want observation %s", errNotTrue, seq, execID, page.Records, obsID)
			}
			return nil
		}
		if err == nil && code != http.StatusServiceUnavailable && code != http.StatusGatewayTimeout {
			return fmt.Errorf("%w: read of acknowledged observation %s at sequence %d: %d %s", errNotTrue, obsID, seq, code, out)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("read of acknowledged observation %s: %w (last answer %d %v %s)", obsID, ctx.Err(), code, err, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decided is one observation acknowledged with its decision.
type decided struct {
	obsID      string
	sent, took time.Time
}

// poster records observations on one execution, one after another, until
// stopped, and remembers when each was sent and decided.
type poster struct {
	c        apiClient
	execID   string
	prefix   string
	readBack bool
	// noLate counts a 504 answer as untrue (observeUntil).
	noLate bool

	mu   sync.Mutex
	done []decided
	errs []error
}

func (p *poster) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		obsID := fmt.Sprintf("%s-%d", p.prefix, i)
		sent := time.Now()
		ack, err := p.c.observeUntil(ctx, p.execID, obsID, p.noLate)
		if err == nil && p.readBack {
			err = p.c.readBack(ctx, p.execID, obsID, ack.Sequence)
		}
		p.mu.Lock()
		if err == nil {
			p.done = append(p.done, decided{obsID: obsID, sent: sent, took: time.Now()})
		} else if ctx.Err() == nil || errors.Is(err, errNotTrue) {
			p.errs = append(p.errs, err)
		}
		p.mu.Unlock()
	}
}

// since returns how many observations sent at or after t were decided, and
// when the first of them was.
func (p *poster) since(t time.Time) (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, first := 0, time.Time{}
	for _, d := range p.done {
		if d.sent.Before(t) {
			continue
		}
		n++
		if first.IsZero() || d.took.Before(first) {
			first = d.took
		}
	}
	return n, first
}

// load runs posters until stop is called.
type load struct {
	posters []*poster
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startLoad(posters ...*poster) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{posters: posters, cancel: cancel}
	for _, p := range posters {
		l.wg.Go(func() { p.run(ctx) })
	}
	return l
}

func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// waitDecided waits until every poster had n observations sent at or after
// t decided, failing the test after within, and returns how long after t
// the first of them was decided.
func (l *load) waitDecided(t *testing.T, at time.Time, n int, within time.Duration, what string) time.Duration {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, first := true, time.Time{}
		var counts []int
		for _, p := range l.posters {
			got, f := p.since(at)
			counts = append(counts, got)
			ok = ok && got >= n
			if !f.IsZero() && (first.IsZero() || f.Before(first)) {
				first = f
			}
		}
		if ok {
			return first.Sub(at)
		}
		if time.Now().After(deadline) {
			l.stop()
			for _, p := range l.posters {
				for _, err := range p.errs {
					t.Errorf("%s: %v", p.prefix, err)
				}
			}
			t.Fatalf("%s: observations decided per poster %v, want %d each within %s", what, counts, n, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check fails the test for every untrue answer a poster met.
func (l *load) check(t *testing.T) {
	t.Helper()
	for _, p := range l.posters {
		for _, err := range p.errs {
			t.Errorf("%s: %v", p.prefix, err)
		}
	}
}

// launcher launches agents through one daemon until stopped, and keeps the
// answers that were not 201.
type launcher struct {
	c apiClient

	mu       sync.Mutex
	launched []string
	failed   []string
	slowest  time.Duration
}

func (l *launcher) run(ctx context.Context, agent string) {
	for i := 0; ctx.Err() == nil; i++ {
		body := map[string]any{"ownerEntity": "Task", "ownerId": fmt.Sprintf("launch-%d", i), "agent": "generic",
			"command": []string{agent, "wait"}}
		began := time.Now()
		code, out, err := l.c.doWith(launchHTTP, context.WithoutCancel(ctx), "POST", "/v1/executions", body)
		l.mu.Lock()
		l.slowest = max(l.slowest, time.Since(began))
		switch {
		case err != nil:
			l.failed = append(l.failed, err.Error())
		case code == http.StatusCreated:
			l.launched = append(l.launched, string(out))
		default:
			l.failed = append(l.failed, fmt.Sprintf("%d %s", code, out))
		}
		l.mu.Unlock()
		time.Sleep(150 * time.Millisecond)
	}
}

// firstDecisionAfter returns how long after at the policy wrote its first
// decision on an observation p sent at or after at, by the decision's own
// time: the answer to the observation may come later, as the API polls for
// the decision.
func firstDecisionAfter(t *testing.T, d *daemonProc, p *poster, at time.Time) time.Duration {
	t.Helper()
	sentAfter := map[string]bool{}
	p.mu.Lock()
	for _, x := range p.done {
		if !x.sent.Before(at) {
			sentAfter[x.obsID] = true
		}
	}
	p.mu.Unlock()
	var first time.Time
	for _, r := range d.records(t, p.execID) {
		if r.Type == "decision.recorded" && sentAfter[r.ObservationID] && (first.IsZero() || r.OccurredAt.Before(first)) {
			first = r.OccurredAt
		}
	}
	if first.IsZero() {
		t.Fatalf("no decision on the observations sent after %s", at)
	}
	return first.Sub(at)
}

// TestClusterLeaderChange kills the node that leads the journal stream of a
// three-node cluster while agents are launched through one survivor and
// observations are recorded, and read back at once, through the other;
// then restarts it, three times. Every launch answers the truth (it runs,
// or it failed and the execution is not left starting), every acknowledged
// observation reads back where it was acknowledged, and every observation
// has exactly one decision. The decision pause after each kill is logged.
func TestClusterLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of daemons as processes")
	}
	t.Parallel()
	nodes := startCluster(t, "aj-leader-change")
	agent := fixtures.AgentBinary(t)
	var execs []string
	var pauses []time.Duration
	var launchFailures []string
	const trials = 3
	for trial := range trials {
		victim := streamLeader(t, nodes)
		via, other := nodes[(victim+1)%3], nodes[(victim+2)%3]
		id := via.launchAgent(t, fmt.Sprintf("t-leader-%d", trial), "wait")
		execs = append(execs, id)
		p := &poster{c: via.client(), execID: id, prefix: fmt.Sprintf("o%d", trial), readBack: true}
		l := startLoad(p)
		ln := &launcher{c: other.client()}
		lctx, lcancel := context.WithCancel(context.Background())
		var lwg sync.WaitGroup
		lwg.Go(func() { ln.run(lctx, agent) })

		l.waitDecided(t, time.Now(), 3, procDecisionWait, "before the kill")
		killed := time.Now()
		nodes[victim].kill()
		answered := l.waitDecided(t, killed, 5, 60*time.Second, fmt.Sprintf("trial %d, after killing %s", trial, nodes[victim].name))
		pause := firstDecisionAfter(t, via, p, killed)
		pauses = append(pauses, pause)
		t.Logf("trial %d: killed the stream leader %s; the first decision on an observation sent after it was written %s later (answered through %s %s later)",
			trial, nodes[victim].name, pause.Round(10*time.Millisecond), via.name, answered.Round(10*time.Millisecond))
		lcancel()
		lwg.Wait()
		l.stop()
		l.check(t)
		launchFailures = append(launchFailures, ln.failed...)
		t.Logf("trial %d: %d launches through %s answered 201, %d did not %v; the slowest took %s",
			trial, len(ln.launched), other.name, len(ln.failed), ln.failed, ln.slowest.Round(10*time.Millisecond))
		nodes[victim].restart()
	}
	t.Logf("decision pause after losing the stream leader, %d trials: %v", trials, pauses)
	for _, f := range launchFailures {
		// A launch may fail while the cluster elects, but only saying
		// the log did not answer, never that something written is not.
		if !strings.HasPrefix(f, "503 ") && !strings.HasPrefix(f, "504 ") {
			t.Errorf("a launch during the leader change answered %s, want 201, or 503/504 while the log does not answer", f)
		}
	}
	// No launch leaves an execution starting: once the read models have
	// caught up, each is running or has ended.
	for _, n := range nodes {
		pollUntil(t, procConvergeWait, "node "+n.name+" holds no execution left starting", func() (bool, string) {
			var list struct {
				Executions []struct {
					ID        string `json:"id"`
					Lifecycle string `json:"lifecycle"`
				} `json:"executions"`
			}
			n.get(t, "/v1/executions?lifecycle=starting", &list)
			if len(list.Executions) == 0 {
				return true, ""
			}
			return false, fmt.Sprintf("%d starting, first %s", len(list.Executions), list.Executions[0].ID)
		})
	}
	for _, id := range execs {
		pollUntil(t, procConvergeWait, "every observation of "+id+" has one decision", func() (bool, string) {
			p := decisionProblems(nodes[0].records(t, id))
			return len(p) == 0, strings.Join(p, "; ")
		})
	}
}

// TestPolicyTakeoverAfterKill kills a daemon on its own embedded log with
// SIGKILL while observations are posted to it, and starts it again on the
// same data directory, three times. Observations posted after each restart
// are decided (within a bound far above the takeover), and every
// observation has exactly one decision. The stall after each restart is
// logged.
func TestPolicyTakeoverAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a daemon as a process")
	}
	t.Parallel()
	// A fixed address, so that the posters reach the daemon again after
	// each restart.
	listen := fmt.Sprintf("127.0.0.1:%d", fixtures.FreePorts(t, 1)[0])
	d := startDaemon(t, "solo", t.TempDir(), nil, "--listen", listen)
	var execs []string
	for i := range 2 {
		execs = append(execs, d.launchAgent(t, fmt.Sprintf("t-solo-%d", i), "wait"))
	}
	var stalls []time.Duration
	const trials = 3
	for trial := range trials {
		var posters []*poster
		for i, id := range execs {
			for k := range 2 {
				posters = append(posters, &poster{c: d.client(), execID: id, prefix: fmt.Sprintf("o%d-%d-%d", trial, i, k)})
			}
		}
		l := startLoad(posters...)
		l.waitDecided(t, time.Now(), 3, procDecisionWait, "before the kill")
		d.kill()
		d.restart()
		ready := time.Now()
		stall := l.waitDecided(t, ready, 3, 60*time.Second, fmt.Sprintf("trial %d, after the restart", trial))
		stalls = append(stalls, stall)
		t.Logf("trial %d: the restarted daemon decided again %s after it served", trial, stall.Round(10*time.Millisecond))
		l.stop()
		l.check(t)
	}
	t.Logf("policy stall after kill -9 and restart, %d trials: %v", trials, stalls)
	for _, id := range execs {
		pollUntil(t, procConvergeWait, "every observation of "+id+" has one decision", func() (bool, string) {
			p := decisionProblems(d.records(t, id))
			return len(p) == 0, strings.Join(p, "; ")
		})
	}
}
