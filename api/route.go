package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/fleet"
)

// Fleet is the daemon's membership of the fleet of hosts that share its
// log (fleet.Fleet): commands for an execution that another host runs are
// forwarded to that host, and GET /v1/hosts lists them.
type Fleet interface {
	Name() string
	Member(name string) (fleet.Member, bool)
	Members() []fleet.Member
	Forward(ctx context.Context, host string, r *http.Request, body []byte) (*fleet.Answer, error)
	// Room says why this host takes no new work now, or nil.
	Room() error
	// Acquire takes a slot of agent's fleet-wide limit for execution id
	// (an error wrapping fleet.ErrLimit when none is free); Release gives
	// it back.
	Acquire(ctx context.Context, agent, id string) error
	Release(ctx context.Context, agent, id string) error
}

// hostBound are the routes that act on an execution's process or read what
// only its host keeps (its output and terminal): given to a daemon that
// does not run the execution, they are forwarded to the one that does,
// and the caller gets that host's answer. The terminal's attach is a
// stream and is not forwarded: it is asked of the host itself; an agent's
// observations go to the daemon that launched it, whose address it was
// given.
var hostBound = map[string]bool{
	"POST /v1/executions/{id}/stop":              true,
	"POST /v1/executions/{id}/messages":          true,
	"POST /v1/executions/{id}/terminal":          true,
	"GET /v1/executions/{id}/terminal":           true,
	"POST /v1/executions/{id}/terminal/input":    true,
	"GET /v1/executions/{id}/terminal/recording": true,
	"GET /v1/executions/{id}/output":             true,
	"POST /v1/executions/{id}/checkpoints":       true,
	"POST /v1/executions/{id}/commands":          true,
}

// routedKey marks a request that another host forwarded here: it is served
// here, whatever the read models say of its execution's host, so that no
// request goes round.
type routedKey struct{}

func routed(ctx context.Context) bool { return ctx.Value(routedKey{}) != nil }

// RoutedHandler serves the requests other hosts of the fleet forward to
// this one (fleet.Config.Handler). They were authenticated by the daemon
// that took them; the fleet's subjects are trusted as the log is (package
// fleet), and they reach only the routes a daemon forwards (hostBound).
func (s *Server) RoutedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A launch placed here by another host (placement.go) comes this way
		// too.
		if _, pattern := s.mux.Handler(r); !hostBound[pattern] && pattern != "POST /v1/executions" {
			s.writeError(w, r, forbidden("%s %s is not a route the hosts of a fleet forward to each other", clip(r.Method, maxFieldLen), clip(r.URL.Path, maxFieldLen)))
			return
		}
		s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routedKey{}, true)))
	})
}

// route forwards r to the host that runs its execution when that is
// another host, and reports whether it did (and answered w). An execution
// this daemon runs, or whose host is unknown or this one, is served here.
func (s *Server) route(w http.ResponseWriter, r *http.Request) (bool, error) {
	if s.cfg.Fleet == nil || routed(r.Context()) {
		return false, nil
	}
	id := r.PathValue("id")
	if s.cfg.Runtime.IsRunning(id) {
		return false, nil
	}
	host, final, err := s.hostOf(r.Context(), id)
	if err != nil || host == "" || host == s.cfg.Fleet.Name() {
		return false, err
	}
	m, known := s.cfg.Fleet.Member(host)
	switch {
	case known && m.State == fleet.Live:
	case final:
		// What ended on a host that is gone is read here, as the log
		// has it.
		return false, nil
	case !known:
		return true, unavailable("execution %s runs on host %s, which this daemon (host %s) has never heard from; nothing was recorded: send the command where it runs, or retry once that host is back",
			id, host, s.cfg.Fleet.Name())
	default:
		return true, unavailable("execution %s runs on host %s, which %s %s ago (its lease is %s); nothing was recorded: retry once it is back",
			id, host, map[fleet.State]string{fleet.Lost: "was last heard from", fleet.Left: "left the fleet"}[m.State],
			time.Since(m.Heard).Round(time.Second), m.Lease())
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		return true, err
	}
	ctx := r.Context()
	if r.Method != http.MethodGet {
		// As here: a command that has begun completes on its host even
		// when the caller goes away.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), mutationTimeout+5*time.Second)
		defer cancel()
	}
	return true, s.relay(ctx, w, r, host, body, "execution "+id+" runs on host "+host)
}

// relay forwards r, with body, to host and writes its answer to w; what
// names the request in errors.
func (s *Server) relay(ctx context.Context, w http.ResponseWriter, r *http.Request, host string, body []byte, what string) error {
	a, err := s.cfg.Fleet.Forward(ctx, host, r, body)
	if errors.Is(err, fleet.ErrNotTaken) {
		return unavailable("%s, which takes no requests now (it stopped or lost its connection to the log); nothing was recorded: retry once it is back", what)
	}
	if errors.Is(err, fleet.ErrUnreachable) {
		return unavailable("%s: %v; it may or may not have taken the command: retry it with the same messageId or Idempotency-Key, which the host tells apart", what, err)
	}
	if err != nil {
		return &apiError{status: http.StatusBadGateway, code: wire.CodeHostError, message: fmt.Sprintf("%s: %v", what, err)}
	}
	for k, vs := range a.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
	return nil
}

// hostOf is the host that runs or ran execution id, from the read models,
// and whether the execution has ended; "" when none is named. An
// execution the read models do not show running yet is looked for again
// once they have caught up with the log: it may have just started.
func (s *Server) hostOf(ctx context.Context, id string) (string, bool, error) {
	st, err := s.cfg.Views.Execution(id)
	if err == nil && (st.Host != "" || st.Lifecycle.Final()) {
		return st.Host, st.Lifecycle.Final(), nil
	}
	if err := s.catchUp(ctx); err != nil {
		return "", false, err
	}
	if st, err = s.cfg.Views.Execution(id); err != nil {
		// Not known: the route's own handler says so.
		return "", false, nil
	}
	return st.Host, st.Lifecycle.Final(), nil
}
