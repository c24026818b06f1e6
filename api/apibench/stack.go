package apibench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/errtally"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/runtime"
)

const (
	// ownerPrefix starts the owner id of every execution and journal of a
	// run. Each has an owner of its own, as each task has its own agent:
	// the live events read an owner's executions for every batch, so
	// putting them all under one owner would measure that listing instead.
	ownerPrefix = "apibench-"
	// stopGrace is how long a stopped agent gets before SIGKILL.
	stopGrace = 2 * time.Second
	// stopTimeout bounds the stop of one agent, and then closing the
	// runtime: a stop that comes to SIGKILL takes two grace periods.
	stopTimeout = 2*stopGrace + 3*time.Second
	// requestTimeout bounds one request of the benchmark, so that a stuck
	// server fails the run instead of hanging it.
	requestTimeout = time.Minute
	// quietPeriod is how long the log must not grow before a measurement
	// starts: the policy has then decided on everything before it.
	quietPeriod = 250 * time.Millisecond
	// settleTimeout bounds the wait for the log to go quiet.
	settleTimeout = 2 * time.Minute
	// shutdownTimeout bounds the HTTP server's shutdown.
	shutdownTimeout = 10 * time.Second
	// decisionWait is how long recordObservation waits for the policy's
	// decision.
	decisionWait = 45 * time.Second
	// launchers is how many agents are launched at once.
	launchers = 8
	// stoppers is how many agents are stopped at once. The stops share
	// the machine: on a loaded one, eight at a time each took up to 5s of
	// their 7s, the others' reads and appends included.
	stoppers = 4
)

// stack is the daemon in process, opened as serve opens it (package
// daemon), on a scratch directory, with the API on a loopback listener.
type stack struct {
	dir    string
	d      *daemon.Daemon
	store  *eventstore.JetStreamStore
	views  *projections.DB
	url    string
	token  string
	client *http.Client
	// agents are the journals of the launched agents.
	agents []eventstore.Reference

	// closes run in reverse order on Close.
	closes []func() error
	closed bool
	// stopTimeout bounds the stop of one agent, and then closing the
	// runtime.
	stopTimeout time.Duration
}

// startStack starts the stack in a fresh subdirectory of cfg.Dir and
// launches cfg.Agents agents through the API.
func startStack(ctx context.Context, cfg Config) (_ *stack, err error) {
	s := &stack{}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("apibench: start the stack: %w", err), s.Close())
		}
	}()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return s, err
	}
	if s.dir, err = os.MkdirTemp(cfg.Dir, "apibench-"); err != nil {
		return s, err
	}
	dir := s.dir
	s.onClose(func() error { return os.RemoveAll(dir) })

	dcfg := daemon.DefaultConfig(s.dir)
	dcfg.Listen, dcfg.StopGrace, dcfg.ShutdownTimeout = "127.0.0.1:0", stopGrace, shutdownTimeout
	// The figures are the API's: the search index's indexing would
	// compete with it for the CPU.
	dcfg.NoSearch = true
	// A policy consumer that loses its pull on a loaded machine (missed
	// heartbeats) is set up again, and deciding stalled for about its
	// pinned TTL (10s) after that in tests here: long enough for
	// recordObservation to answer 504 at the default DecisionWait. Waiting
	// longer keeps such a stall in the figures as latency instead of
	// failing the run.
	dcfg.ConfigureAPI = func(c *api.Config) { c.DecisionWait = decisionWait }
	if s.d, err = daemon.Open(ctx, dcfg); err != nil {
		return s, err
	}
	s.onClose(func() error {
		stop, cancel := context.WithTimeout(context.Background(), s.d.CloseTimeout())
		defer cancel()
		return s.d.Close(stop)
	})
	s.store, s.views, s.url, s.token = s.d.Store(), s.d.Views(), s.d.URL(), s.d.Token()
	// The agents are stopped before the daemon closes (closes run last
	// first), each within a deadline of its own.
	s.stopTimeout = cmp.Or(cfg.stopTimeout, stopTimeout)
	s.onClose(s.stopAgents)

	conns := cfg.Clients + cfg.Subscribers
	transport := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	s.client = &http.Client{Transport: transport}
	s.onClose(func() error { transport.CloseIdleConnections(); return nil })

	s.agents = make([]eventstore.Reference, cfg.Agents)
	_, err = benchkit.TimeEach(ctx, cfg.Agents, launchers, func(ctx context.Context, _, i int) (err error) {
		s.agents[i], err = s.launch(ctx, fmt.Sprintf("%sagent-%d", ownerPrefix, i), cfg.Agent)
		return err
	})
	return s, err
}

func (s *stack) onClose(fn func() error) { s.closes = append(s.closes, fn) }

// Close closes the daemon (the API, the agents, the policy, the projector,
// the projection, the store and the server) and removes the directory. It
// is safe to call twice.
func (s *stack) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for i := len(s.closes) - 1; i >= 0; i-- {
		errs = append(errs, s.closes[i]())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apibench: stop the stack: %w", err)
	}
	return nil
}

// stopAgents stops the agents, a few at a time and each within a deadline
// of its own, before the daemon closes its runtime.
//
// A stop records the run's interruption, naming what was in flight, for
// which the runtime reads the agent's whole journal (hundreds of records
// once the measurements are done), then appends it and the final state.
// Runtime.Close would stop them too, but within what is left of the
// daemon's close deadline after the API's shutdown, shared by all: on a
// loaded machine the 200 stops took half a minute or more. With a
// deadline of its own, a stop fails only when its own agent does not end,
// and the report says how many agents did not, apart from the daemon.
func (s *stack) stopAgents() error {
	var mu sync.Mutex
	var failed []error
	// A stop that fails is counted, not returned: the others go on.
	_, _ = benchkit.TimeEach(context.Background(), len(s.agents), stoppers, func(_ context.Context, _, i int) error {
		if err := s.stopAgent(s.agents[i]); err != nil {
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, err)
		}
		return nil
	})
	if len(failed) > 0 {
		return fmt.Errorf("stop %d of %d agents: %w", len(failed), len(s.agents), distinct(failed))
	}
	return nil
}

// stopAgent stops one agent within stopTimeout. One whose launch failed,
// or that has ended, needs nothing.
func (s *stack) stopAgent(ref eventstore.Reference) error {
	if ref.AgentExecutionID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.stopTimeout)
	defer cancel()
	if err := s.d.Runtime().Stop(ctx, ref.AgentExecutionID); err != nil && !errors.Is(err, runtime.ErrNotRunning) {
		return err
	}
	return nil
}

// distinct joins errs, each message once, and, when they are not all the
// same, with how many times each came: agents that could not stop in time
// all fail with the deadline, which is one line to read, not one per agent.
func distinct(errs []error) error {
	counts := errtally.Tally(errs)
	out := make([]error, len(counts))
	for i, c := range counts {
		out[i] = c.Err
		if c.N > 1 && len(counts) > 1 {
			out[i] = fmt.Errorf("%w (%d times)", c.Err, c.N)
		}
	}
	return errors.Join(out...)
}

// launched is the part of the launch answer the benchmark reads.
type launched struct {
	Reference eventstore.Reference `json:"reference"`
	State     struct {
		Live struct {
			Running bool `json:"running"`
		} `json:"live"`
	} `json:"state"`
}

// launch starts one agent for a task through the API and returns its
// journal.
func (s *stack) launch(ctx context.Context, task string, command []string) (eventstore.Reference, error) {
	body, err := json.Marshal(map[string]any{
		"ownerEntity": eventstore.OwnerTask, "ownerId": task, "agent": "generic", "command": command,
	})
	if err != nil {
		return eventstore.Reference{}, err
	}
	var l launched
	if err := s.post(ctx, "/v1/executions", body, http.StatusCreated, &l); err != nil {
		return l.Reference, fmt.Errorf("launch %q: %w", command, err)
	}
	if !l.State.Live.Running {
		return l.Reference, fmt.Errorf("launch %q: execution %s is not running (want an agent that stays alive reading its input)",
			command, l.Reference.AgentExecutionID)
	}
	return l.Reference, nil
}

// post sends body to path with the API token, checks the status and
// decodes the answer into out.
func (s *stack) post(ctx context.Context, path string, body []byte, want int, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: read the answer: %w", path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("POST %s: status %d, want %d: %s", path, resp.StatusCode, want, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decode the answer %q: %w", path, data, err)
	}
	return nil
}

// settle waits until the log has not grown for quietPeriod and the
// projection holds all of it, so that a measurement does not meet the
// policy or the projector still working through the one before.
func (s *stack) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	prev, first := uint64(0), true
	for {
		last, err := s.store.LastOffset(ctx)
		if err == nil {
			err = s.views.WaitFor(ctx, last)
		}
		if err != nil {
			return fmt.Errorf("apibench: wait for the log to go quiet: %w", err)
		}
		if !first && last == prev {
			return nil
		}
		prev, first = last, false
		t := time.NewTimer(quietPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("apibench: wait for the log to go quiet: %w", ctx.Err())
		case <-t.C:
		}
	}
}
