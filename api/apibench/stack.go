package apibench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/policy"
	"github.com/agentjournal/agentjournal/projections"
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

// stack is the daemon in process: the parts cmd/agentjournal's serve wires,
// on a scratch directory, with the API on a loopback listener.
type stack struct {
	dir    string
	bus    *bus.Bus
	store  *eventstore.JetStreamStore
	views  *projections.DB
	rt     *runtime.Runtime
	srv    *api.Server
	url    string
	token  string
	client *http.Client
	// agents are the journals of the launched agents.
	agents []eventstore.Reference

	// wg waits for the projector and the policy subscriber; errs holds
	// what they returned.
	wg    sync.WaitGroup
	errMu sync.Mutex
	errs  []error

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

	bcfg := bus.DefaultConfig()
	bcfg.DataDir = filepath.Join(s.dir, "data")
	if s.bus, err = bus.Open(ctx, bcfg); err != nil {
		return s, err
	}
	s.onClose(s.bus.Close)
	if s.store, err = eventstore.OpenJetStream(ctx, s.bus.JetStream(), eventstore.JetStreamConfig{Stream: s.bus.StreamName()}); err != nil {
		return s, err
	}
	s.onClose(s.store.Close)
	if s.views, err = projections.Open(projections.DefaultConfig(filepath.Join(s.dir, "projections.db"))); err != nil {
		return s, err
	}
	s.onClose(s.views.Close)

	// The projector and the policy run until Close, whatever ctx does:
	// like the daemon's, they are stopped in order.
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.onClose(func() error {
		cancel()
		s.wg.Wait()
		s.errMu.Lock()
		defer s.errMu.Unlock()
		return errors.Join(s.errs...)
	})
	s.wg.Go(func() { s.keep("projector", s.views.Project(work, s.store)) })
	decisions := &api.Decisions{}
	pol := policy.NewSubscriber(s.store, policy.SubscriberConfig{Decided: decisions.Deliver})
	s.wg.Go(func() { s.keep("policy subscriber", pol.Run(work)) })

	s.rt = runtime.New(runtime.Config{Store: s.store, StopGrace: stopGrace})
	s.stopTimeout = cmp.Or(cfg.stopTimeout, stopTimeout)
	s.onClose(s.stopRuntime)

	secret := make([]byte, api.MinSecretSize)
	rand.Read(secret)
	s.token = randomHex(32)
	acfg := api.DefaultConfig()
	acfg.Store, acfg.Runtime, acfg.Views, acfg.Decisions = s.store, s.rt, s.views, decisions
	acfg.Token, acfg.Secret = s.token, secret
	// A policy consumer that loses its pull on a loaded machine (missed
	// heartbeats) is set up again, and deciding stalled for about its
	// pinned TTL (10s) after that in tests here: long enough for
	// recordObservation to answer 504 at the default DecisionWait. Waiting
	// longer keeps such a stall in the figures as latency instead of
	// failing the run.
	acfg.DecisionWait = decisionWait
	if s.srv, err = api.New(acfg); err != nil {
		return s, err
	}
	s.onClose(s.srv.Close)
	if err := s.srv.Start(work); err != nil {
		return s, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return s, err
	}
	s.url = "http://" + ln.Addr().String()
	hs := &http.Server{Handler: s.srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.onClose(func() error {
		// Event streams never go idle: close them before Shutdown waits.
		err := s.srv.Close()
		sctx, done := context.WithTimeout(context.Background(), shutdownTimeout)
		defer done()
		err = errors.Join(err, hs.Shutdown(sctx))
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	})

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
	_, _, err = timeEach(ctx, cfg.Agents, launchers, func(ctx context.Context, _, i int) (err error) {
		s.agents[i], err = s.launch(ctx, fmt.Sprintf("%sagent-%d", ownerPrefix, i), cfg.Agent)
		return err
	})
	return s, err
}

func (s *stack) onClose(fn func() error) { s.closes = append(s.closes, fn) }

// keep records the error a background part of the stack stopped with.
func (s *stack) keep(part string, err error) {
	if err == nil {
		return
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.errs = append(s.errs, fmt.Errorf("%s: %w", part, err))
}

// Close stops the API, the agents, the projector and the policy, closes
// the projection, the store and the server, and removes the directory. It
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

// stopRuntime stops the agents, a few at a time and each within a deadline
// of its own, and closes the runtime.
//
// A stop records the run's interruption, naming what was in flight, for
// which the runtime reads the agent's whole journal (hundreds of records
// once the measurements are done), then appends it and the final state.
// Runtime.Close stops its executions one after another under one deadline
// for all: on a loaded machine the 200 stops took half a minute or more
// against 7s, and every stop after the deadline failed on its own, one
// line each. With a deadline of its own, a stop fails only when its own
// agent does not end.
func (s *stack) stopRuntime() error {
	var mu sync.Mutex
	var failed []error
	// A stop that fails is counted, not returned: the others go on.
	_, _, _ = timeEach(context.Background(), len(s.agents), stoppers, func(_ context.Context, _, i int) error {
		if err := s.stopAgent(s.agents[i]); err != nil {
			mu.Lock()
			defer mu.Unlock()
			failed = append(failed, err)
		}
		return nil
	})
	var err error
	if len(failed) > 0 {
		err = fmt.Errorf("stop %d of %d agents: %w", len(failed), len(s.agents), distinct(failed))
	}
	// An agent that did not stop in time was killed: the runtime waits
	// for its end.
	ctx, cancel := context.WithTimeout(context.Background(), s.stopTimeout)
	defer cancel()
	if cerr := s.rt.Close(ctx); cerr != nil {
		if joined, ok := cerr.(interface{ Unwrap() []error }); ok {
			cerr = distinct(joined.Unwrap())
		}
		err = errors.Join(err, fmt.Errorf("close the runtime: %w", cerr))
	}
	return err
}

// stopAgent stops one agent within stopTimeout. One whose launch failed,
// or that has ended, needs nothing.
func (s *stack) stopAgent(ref eventstore.Reference) error {
	if ref.AgentExecutionID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.stopTimeout)
	defer cancel()
	if err := s.rt.Stop(ctx, ref.AgentExecutionID); err != nil && !errors.Is(err, runtime.ErrNotRunning) {
		return err
	}
	return nil
}

// distinct joins errs, each message once, and, when they are not all the
// same, with how many times each came: agents that could not stop in time
// all fail with the deadline, which is one line to read, not one per agent.
func distinct(errs []error) error {
	var firsts []error
	count := map[string]int{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		if count[err.Error()]++; count[err.Error()] == 1 {
			firsts = append(firsts, err)
		}
	}
	out := make([]error, len(firsts))
	for i, err := range firsts {
		out[i] = err
		if n := count[err.Error()]; n > 1 && len(firsts) > 1 {
			out[i] = fmt.Errorf("%w (%d times)", err, n)
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

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
