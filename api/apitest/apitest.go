package apitest

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/policy"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/terminal"
)

// Token is the API token of every stack Start builds.
const Token = "test-token-0123456789abcdef0123456789abcdef"

// Stack is a running daemon stack; t's cleanup stops it.
type Stack struct {
	// Bus is the log's NATS, for tests that write around the store.
	Bus     *bus.Bus
	Store   *eventstore.JetStreamStore
	Views   *projections.DB
	Runtime *runtime.Runtime
	Server  *api.Server
	HTTP    *httptest.Server
	// Agent is the fixture agent binary.
	Agent string

	// project starts the projector and returns what stops it.
	project       func() (stop func())
	stopProjector func()
}

// PauseProjector stops the projector until resume is called, for tests of
// what answers and reads do while the read models are behind the log.
func (s *Stack) PauseProjector() (resume func()) {
	s.stopProjector()
	return func() { s.stopProjector = s.project() }
}

// Options change what Start builds.
type Options struct {
	// NoPolicy leaves the policy subscriber out, for tests that watch
	// observations wait for a decision that does not come.
	NoPolicy bool
	// Configure edits the API configuration before the server starts.
	Configure []func(*api.Config)
	// MaxRunning is the runtime's limit of running agents before queued
	// launches wait; the runtime's default when 0.
	MaxRunning int
}

// Start builds and starts the stack, and stops it when t ends.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	b := fixtures.StartNATS(t)
	store, err := eventstore.OpenJetStream(context.Background(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	views, err := projections.Open(projections.Config{Path: filepath.Join(t.TempDir(), "projections.db")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s := &Stack{Bus: b, Store: store, Views: views, Agent: fixtures.AgentBinary(t)}
	s.project = func() (stop func()) {
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			if err := views.Project(pctx, store); err != nil && pctx.Err() == nil {
				t.Errorf("projector: %v", err)
			}
		})
		return func() { pcancel(); <-done }
	}
	s.stopProjector = s.project()
	var decisions *api.Decisions
	if !opts.NoPolicy {
		decisions = &api.Decisions{}
		sub := policy.NewSubscriber(store, policy.SubscriberConfig{Decided: decisions.Deliver})
		wg.Go(func() { sub.Run(ctx) })
	}

	terms := terminal.NewRegistry(nil)
	data := t.TempDir()
	recordings, output := filepath.Join(data, "terminal-recordings"), filepath.Join(data, "agent-output")
	s.Runtime = runtime.New(runtime.Config{
		Store: store, StopGrace: time.Second, Terminals: terms, RecordingDir: recordings, OutputDir: output,
		Processed: views.ProcessedID,
		QueueDir:  filepath.Join(data, "queue"), MaxRunning: opts.MaxRunning,
		LaunchEnv: func(ref eventstore.Reference) []string {
			return []string{"AGENTJOURNAL_TOKEN=" + s.Server.ScopedToken(ref.AgentExecutionID)}
		},
	})
	cfg := api.DefaultConfig()
	cfg.Store, cfg.Runtime, cfg.Terminals, cfg.Views, cfg.RecordingDir, cfg.OutputDir = store, s.Runtime, terms, views, recordings, output
	cfg.Token, cfg.Secret = Token, bytes.Repeat([]byte{7}, api.MinSecretSize)
	cfg.Decisions = decisions
	for _, configure := range opts.Configure {
		configure(&cfg)
	}
	if s.Server, err = api.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.Server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.HTTP = httptest.NewServer(s.Server.Handler())
	t.Cleanup(func() {
		if err := s.Server.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		s.HTTP.Close()
		s.Runtime.Close(context.Background())
		terms.Close()
		cancel()
		wg.Wait()
		views.Close()
	})
	return s
}
