package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/mcp"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/terminal"
)

// The parts both the daemon (serve) and a foreground run serve the HTTP
// API with: the read models it answers from, its token and address, the
// server, and the daemon.json that lets the other commands find it.

// apiShutdownTimeout bounds the wait for the API's requests to finish when
// it stops.
const apiShutdownTimeout = 10 * time.Second

// closers closes what was opened, newest first.
type closers []func() error

func (c *closers) add(fn func() error) { *c = append(*c, fn) }

// close runs every close function once, newest first, and joins their
// errors.
func (c *closers) close() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i]())
	}
	*c = nil
	return errors.Join(errs...)
}

// openViews opens the read models on the data directory, rebuilding them
// from the log when the file cannot be trusted, and keeps projecting the
// log into them; the close registered on onClose stops the projector and
// then closes them.
func openViews(ctx context.Context, env *Env, logger *slog.Logger, store projections.Source, onClose func(func() error)) (*projections.DB, error) {
	pcfg := projections.DefaultConfig(env.projectionPath())
	pcfg.Logger = logger
	views, rebuilt, err := projections.OpenOrRebuild(ctx, pcfg, store, nil)
	if err != nil {
		return nil, fmt.Errorf("open the read models: %w", err)
	}
	onClose(views.Close)
	if rebuilt {
		logger.Warn("the projection file could not be trusted (the message before says why); it was moved aside and rebuilt from the log", "path", pcfg.Path)
	}
	// The projector runs on its own context: it outlives the caller's,
	// which a signal cancels, until the close stops it.
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	// Registered after views.Close so that it runs first.
	onClose(func() error { cancel(); wg.Wait(); return nil })
	wg.Go(func() {
		keepRunning(work, logger, "projector", func(ctx context.Context) error { return views.Project(ctx, store) })
	})
	return views, nil
}

// apiEndpoint is the HTTP API about to be served: its token, the secret
// that signs the agents' scoped tokens, and its listener. Its address is
// known before the runtime is built, so that launched agents get it.
type apiEndpoint struct {
	env       *Env
	logger    *slog.Logger
	tokenFile string
	token     string
	secret    []byte
	ln        net.Listener
	url       string
	// late reaches the server once it exists.
	late lateServer
}

// listenAPI loads the API token from tokenFile (created 0600 when
// missing) and the scoped-token secret from the data directory, and
// listens on listen. The close registered on onClose closes the listener
// if the API never served.
func listenAPI(env *Env, logger *slog.Logger, listen, tokenFile string, onClose func(func() error)) (*apiEndpoint, error) {
	token, err := api.LoadOrCreateToken(tokenFile)
	if err != nil {
		return nil, err
	}
	secretHex, err := api.LoadOrCreateToken(filepath.Join(env.DataDir, "scoped-token.secret"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", listen, err)
	}
	// Once served, the server's shutdown closes it and this finds it
	// closed already.
	onClose(func() error { ln.Close(); return nil })
	return &apiEndpoint{env: env, logger: logger, tokenFile: tokenFile, token: token, secret: []byte(secretHex),
		ln: ln, url: "http://" + ln.Addr().String()}, nil
}

// launchEnv is what a launched agent gets to reach the API and MCP: their
// addresses and a token that can only signal its own execution.
func (e *apiEndpoint) launchEnv(ref eventstore.Reference) []string {
	return []string{"AGENTJOURNAL_URL=" + e.url, "AGENTJOURNAL_MCP_URL=" + e.url + "/mcp",
		"AGENTJOURNAL_TOKEN=" + e.late.ScopedToken(ref.AgentExecutionID)}
}

// config is the API's configuration over the parts it serves, MCP
// included; a caller adds what only it has.
func (e *apiEndpoint) config(store api.Store, rt *runtime.Runtime, terms *terminal.Registry, views *projections.DB) api.Config {
	cfg := api.DefaultConfig()
	cfg.Store, cfg.Runtime, cfg.Terminals, cfg.Views = store, rt, terms, views
	cfg.Token, cfg.Secret, cfg.Logger = e.token, e.secret, e.logger
	cfg.RecordingDir = filepath.Join(e.env.DataDir, "terminal-recordings")
	cfg.OutputDir = e.env.outputDir()
	cfg.MCP = mcp.NewHandler(&e.late, &e.late, e.logger)
	return cfg
}

// serve starts the API server with cfg on the listener, its handler
// wrapped by wrap when set, and writes daemon.json, where the other
// commands find it. The close registered on onClose removes daemon.json,
// then stops the server. The returned channel gets the error that ends
// serving.
func (e *apiEndpoint) serve(work context.Context, cfg api.Config, wrap func(http.Handler) http.Handler, natsURL string, onClose func(func() error)) (<-chan error, error) {
	srv, err := api.New(cfg)
	if err != nil {
		return nil, err
	}
	e.late.set(srv)
	if err := srv.Start(work); err != nil {
		return nil, err
	}
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	onClose(func() error {
		// Event streams never go idle: close them before Shutdown waits.
		err := srv.Close()
		sctx, done := context.WithTimeout(context.Background(), apiShutdownTimeout)
		defer done()
		return errors.Join(err, hs.Shutdown(sctx))
	})
	served := make(chan error, 1)
	go func() { served <- hs.Serve(e.ln) }()

	info := daemonInfo{URL: e.url, PID: os.Getpid(), TokenFile: e.tokenFile, NATSURL: natsURL, Started: time.Now().UTC()}
	infoPath := filepath.Join(e.env.DataDir, daemonFile)
	data, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(infoPath, append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	onClose(func() error { return os.Remove(infoPath) })
	return served, nil
}

// lateServer lets parts built before the API server (the runtime's launch
// environment, the MCP handler) reach it once it exists.
type lateServer struct {
	mu  sync.RWMutex
	srv *api.Server
}

func (l *lateServer) set(s *api.Server) {
	l.mu.Lock()
	l.srv = s
	l.mu.Unlock()
}

func (l *lateServer) get() *api.Server {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.srv
}

func (l *lateServer) ScopedToken(id string) string {
	if s := l.get(); s != nil {
		return s.ScopedToken(id)
	}
	return ""
}

func (l *lateServer) CheckScopedToken(token string) (string, bool) {
	if s := l.get(); s != nil {
		return s.CheckScopedToken(token)
	}
	return "", false
}

func (l *lateServer) RecordObservation(ctx context.Context, id string, o *eventstore.Observation) (mcp.Decision, error) {
	s := l.get()
	if s == nil {
		return mcp.Decision{}, errors.New("the daemon is starting")
	}
	return s.RecordObservation(ctx, id, o)
}
