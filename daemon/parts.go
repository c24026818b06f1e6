package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/mcp"
	"github.com/agentjournal/agentjournal/eventstore"
)

// Restart delays of keepRunning: doubling from the first to the last, and
// back to the first once a run has lasted restartReset.
const (
	restartFirst = 500 * time.Millisecond
	restartLast  = 30 * time.Second
	restartReset = time.Minute
)

// loop is a part of the daemon that runs in the background until stopped:
// the projector, the search indexer, the policy subscriber.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startLoop runs part on a goroutine of its own, as keepRunning does,
// until the loop is stopped.
func (d *Daemon) startLoop(name string, part func(context.Context) error) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		keepRunning(ctx, d.logger, name, part)
	}()
	return l
}

// stop cancels the loop and waits for it to return; every part returns
// once its context ends.
func (l *loop) stop() {
	l.cancel()
	<-l.done
}

// keepRunning runs part until ctx ends, starting it again after each error:
// a projector or policy subscriber that stopped on a failure of the log (a
// leader change, a full disk, a lost connection) would otherwise leave the
// daemon serving stale read models, or deciding nothing, until restarted.
// Both resume from where they stopped.
func keepRunning(ctx context.Context, log *slog.Logger, name string, part func(context.Context) error) {
	delay := restartFirst
	for {
		began := time.Now()
		err := part(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) >= restartReset {
			delay = restartFirst
		}
		if err == nil {
			err = errors.New("stopped without an error")
		}
		log.Error(name+" stopped; starting it again", "err", err, "in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, restartLast)
	}
}

// gate counts the requests in flight through a handler, so that Close
// waits for them whoever serves the handler, and refuses new ones once
// closing.
type gate struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed once closing with none in flight
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.n++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 && g.closing {
		close(g.idle)
	}
}

// close refuses new requests and waits for those in flight, or for ctx.
func (g *gate) close(ctx context.Context) error {
	g.mu.Lock()
	if !g.closing {
		g.closing = true
		g.idle = make(chan struct{})
		if g.n == 0 {
			close(g.idle)
		}
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wrap returns next counted by the gate; a request that comes once the
// gate is closing is answered 503 in the API's error shape.
func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.enter() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unavailable", "message": "the daemon is stopping"}})
			return
		}
		defer g.leave()
		next.ServeHTTP(w, r)
	})
}

// lateServer lets parts built before the API server (the runtime's launch
// environment, the MCP handler) reach it once it exists.
type lateServer struct {
	mu  sync.RWMutex
	srv *api.Server
}

var (
	_ mcp.Recorder   = (*lateServer)(nil)
	_ mcp.Authorizer = (*lateServer)(nil)
)

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

// ServeHTTP serves the requests other hosts of the fleet forward here,
// once the server is built (api.Server.RoutedHandler).
func (l *lateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := l.get()
	if s == nil {
		http.Error(w, `{"error":{"code":"unavailable","message":"this host is still starting; retry"}}`, http.StatusServiceUnavailable)
		return
	}
	s.RoutedHandler().ServeHTTP(w, r)
}

// ScopedToken implements the runtime's launch environment's need.
func (l *lateServer) ScopedToken(id string) string {
	if s := l.get(); s != nil {
		return s.ScopedToken(id)
	}
	return ""
}

// CheckScopedToken implements mcp.Authorizer.
func (l *lateServer) CheckScopedToken(token string) (string, bool) {
	if s := l.get(); s != nil {
		return s.CheckScopedToken(token)
	}
	return "", false
}

// RecordObservation implements mcp.Recorder.
func (l *lateServer) RecordObservation(ctx context.Context, id string, o *eventstore.Observation) (mcp.Decision, error) {
	s := l.get()
	if s == nil {
		return mcp.Decision{}, errors.New("the daemon is starting")
	}
	return s.RecordObservation(ctx, id, o)
}
