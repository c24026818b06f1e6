package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api/web"
	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/integrity"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/search"
	"github.com/agentjournal/agentjournal/terminal"
)

const (
	// DefaultMaxBody bounds a request body when Config.MaxBody is 0.
	DefaultMaxBody = 2 << 20
	// DefaultDecisionWait is how long recordObservation waits for the
	// policy's decision when Config.DecisionWait is 0.
	DefaultDecisionWait = 10 * time.Second
	// MinSecretSize is the shortest Config.Secret accepted.
	MinSecretSize = 32
	// DefaultStreamWriteTimeout bounds each write to an event stream when
	// Config.StreamWriteTimeout is 0.
	DefaultStreamWriteTimeout = 10 * time.Second

	// heartbeatInterval is how often an idle event stream gets a comment
	// line, so proxies and clients see that it is alive.
	heartbeatInterval = 15 * time.Second
	// subscriberBuffer bounds the events queued for one stream.
	subscriberBuffer = 1024
	// followBatch is the most log entries the publisher takes at once.
	followBatch = 256
	// retryDelay is how long the publisher waits before following the log
	// again after it stopped.
	retryDelay = time.Second
	// mutationTimeout bounds a launch, message or stop once it has begun:
	// it completes even when the client goes away.
	mutationTimeout = 30 * time.Second
)

// Log attribute keys.
const (
	logKeyErr       = "err"
	logKeyRoute     = "route"
	logKeyExecution = "execution"
	logKeyOffset    = "offset"
	logKeyStatus    = "status"
	logKeyClient    = "client"
	logKeyLimit     = "limit"
	logKeyTold      = "told"
)

// Store is what the API reads from the journal store.
type Store interface {
	projections.Source
	// ReadJournal yields a journal's records from sequence fromSeq.
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	// ReadLog yields every journal's records in log order from fromOffset.
	ReadLog(ctx context.Context, fromOffset uint64) iter.Seq2[eventstore.Entry, error]
	// Lookup finds a journal by its AgentExecution id.
	Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error)
	// Journals lists every journal with the records the log holds for it.
	Journals(ctx context.Context) ([]eventstore.Reference, error)
}

var _ Store = (*eventstore.JetStreamStore)(nil)

// Config configures a Server. Store, Runtime, Views, Token and Secret are
// required; every other zero value means its default.
type Config struct {
	Store Store
	// Decisions, when set, is handed every decision a policy subscriber
	// in this process carries out (give its Deliver to
	// policy.SubscriberConfig.Decided): requests waiting for a decision
	// then get it at once. Without it, or for a decision made by another
	// process, they read the journal now and then.
	Decisions *Decisions
	Runtime   *runtime.Runtime
	// Terminals is the registry of the runtime's terminal lanes; without
	// it the terminal routes answer that there is no lane.
	Terminals *terminal.Registry
	Views     *projections.DB
	// Search is the full-text index GET /v1/search reads and the rebuild
	// rebuilds; without it that route answers that there is none.
	Search *search.Index
	// RecordingDir is the directory the runtime writes terminal recordings
	// to (runtime.Config.RecordingDir), read by GET
	// /v1/executions/{id}/terminal/recording. Empty means the daemon keeps
	// no recordings: that route answers that there is none.
	RecordingDir string
	// OutputDir is the directory the runtime keeps plain agent output in
	// (runtime.Config.OutputDir), read by GET /v1/executions/{id}/output.
	// Empty means the daemon keeps none: that route answers that there is
	// none.
	OutputDir string
	// Token is the API token, accepted on every route.
	Token string
	// Secret signs execution-scoped tokens; at least MinSecretSize bytes.
	Secret []byte
	// ScopedTokenGrace is how long a scoped token outlives its execution's
	// end (tokens.go); DefaultScopedTokenGrace when 0.
	ScopedTokenGrace time.Duration
	// MCP, when set, is mounted at /mcp. Requests reach it with the API
	// token or any valid scoped token; it checks scoped tokens itself with
	// Server.CheckScopedToken.
	MCP http.Handler
	// LogReachable, when set, says whether the log can take a write now
	// (nil) or why not; a write request is then answered 503 at once with
	// that reason, instead of waiting for the log until it times out. A
	// daemon joined to another's NATS sets it to its connection's state.
	LogReachable func() error
	// Damage holds the journals found damaged (integrity): writes to them
	// are refused with code damaged and /healthz names them. The daemon
	// fills it before anything writes (daemon.Open); nil holds nothing.
	Damage *integrity.Guard
	// DiskSpace, when set, returns the last measurement of the disk that
	// holds the log, and false when there is none; /healthz shows it and a
	// disk_full answer quotes it.
	DiskSpace func() (DiskSpace, bool)
	// PolicyShare, when set, returns the partitions this daemon's policy
	// decides on when the daemons of its log share them; /healthz shows
	// it.
	PolicyShare func() PolicyShare
	// Fleet, when set, is this daemon's membership of the fleet of hosts
	// sharing its log: commands for an execution another host runs are
	// forwarded there (route.go), and GET /v1/hosts lists the hosts.
	Fleet Fleet
	// Logger receives server errors. Nil discards them.
	Logger *slog.Logger
	// MaxBody bounds a request body; DefaultMaxBody when 0.
	MaxBody int64
	// MaxImportBody bounds the journal file of an import (POST
	// /v1/journals); DefaultMaxImportBody when 0.
	MaxImportBody int64
	// DecisionWait is how long recordObservation waits for the policy's
	// decision, and how long a read waits for the projection to catch up
	// with an execution it does not hold yet; DefaultDecisionWait when 0.
	DecisionWait time.Duration
	// StreamWriteTimeout bounds each write to an event stream: a client
	// that takes no data for that long (its connection's buffers stay
	// full) is disconnected, and resumes with Last-Event-ID.
	// DefaultStreamWriteTimeout when 0.
	StreamWriteTimeout time.Duration
}

// DefaultConfig returns a Config with every default spelled out; the
// required fields are left to the caller.
func DefaultConfig() Config {
	return Config{MaxBody: DefaultMaxBody, MaxImportBody: DefaultMaxImportBody, DecisionWait: DefaultDecisionWait, StreamWriteTimeout: DefaultStreamWriteTimeout,
		ScopedTokenGrace: DefaultScopedTokenGrace}
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("api: no Store (want the journal store)"))
	}
	if c.Runtime == nil {
		errs = append(errs, errors.New("api: no Runtime (want the execution runtime)"))
	}
	if c.Views == nil {
		errs = append(errs, errors.New("api: no Views (want the projection DB)"))
	}
	if c.Token == "" {
		errs = append(errs, errors.New("api: no Token (want the API token, e.g. from LoadOrCreateToken)"))
	}
	if len(c.Secret) < MinSecretSize {
		errs = append(errs, fmt.Errorf("api: Secret is %d bytes (want at least %d random bytes)", len(c.Secret), MinSecretSize))
	}
	if c.MaxBody < 0 {
		errs = append(errs, fmt.Errorf("api: MaxBody %d is negative (want a size in bytes, or 0 for %d)", c.MaxBody, DefaultMaxBody))
	}
	if c.MaxImportBody < 0 {
		errs = append(errs, fmt.Errorf("api: MaxImportBody %d is negative (want a size in bytes, or 0 for %d)", c.MaxImportBody, DefaultMaxImportBody))
	}
	if c.DecisionWait < 0 {
		errs = append(errs, fmt.Errorf("api: DecisionWait %s is negative (want a duration, or 0 for %s)", c.DecisionWait, DefaultDecisionWait))
	}
	if c.StreamWriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("api: StreamWriteTimeout %s is negative (want a duration, or 0 for %s)", c.StreamWriteTimeout, DefaultStreamWriteTimeout))
	}
	if c.ScopedTokenGrace < 0 {
		errs = append(errs, fmt.Errorf("api: ScopedTokenGrace %s is negative (want a duration, or 0 for %s)", c.ScopedTokenGrace, DefaultScopedTokenGrace))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxImportBody == 0 {
		c.MaxImportBody = DefaultMaxImportBody
	}
	if c.DecisionWait == 0 {
		c.DecisionWait = DefaultDecisionWait
	}
	if c.StreamWriteTimeout == 0 {
		c.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if c.ScopedTokenGrace == 0 {
		c.ScopedTokenGrace = DefaultScopedTokenGrace
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server serves the API. Handler may be used as soon as New returns; live
// events flow once Start has been called.
type Server struct {
	cfg      Config
	log      *slog.Logger
	mux      *http.ServeMux
	access   map[string]access // by route pattern
	tokenSum [sha256.Size]byte
	broker   *broker
	metrics  *metrics
	// decisions wakes the requests waiting for a decision carried out
	// here: Config.Decisions, or one of the server's own.
	decisions *Decisions

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	closing chan struct{} // closed by Close: event streams end
	wg      sync.WaitGroup
	streams atomic.Int64 // event streams open, attached to the broker or not
	// told is the offset of the last record an answer has told a client of
	// without waiting for the projection to apply it (tell): reads of the
	// read models wait for it first (readable).
	told atomic.Uint64
	// stalledAt is one more than the checkpoint at which a wait for told
	// ran out (readable), zero when none did.
	stalledAt atomic.Uint64
}

// New returns a server over cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		mux:       http.NewServeMux(),
		access:    map[string]access{},
		tokenSum:  sha256.Sum256([]byte(cfg.Token)),
		broker:    newBroker(subscriberBuffer),
		decisions: cfg.Decisions,
		metrics:   newMetrics(),
		closing:   make(chan struct{}),
	}
	if s.decisions == nil {
		s.decisions = &Decisions{}
	}
	s.routes()
	return s, nil
}

// access says which tokens a route accepts.
type access int

const (
	// fullToken routes need the API token.
	fullToken access = iota
	// ownExecution routes also take a token scoped to the execution named
	// by the {id} path segment.
	ownExecution
	// anyScope routes also take any valid scoped token (the MCP handler
	// checks which execution it names).
	anyScope
	// public routes need no token.
	public
	// streamToken routes need the API token, and also take it in the
	// access_token query parameter: a browser's EventSource cannot send
	// headers. Only the event stream is such a route.
	streamToken
)

func (s *Server) routes() {
	s.handle("GET /healthz", public, s.healthz)
	s.handle("GET /metrics", fullToken, s.serveMetrics)
	s.handle("GET /v1/openapi.yaml", public, s.openAPI)

	s.handle("GET /v1/executions", fullToken, s.listExecutions)
	s.handle("POST /v1/executions", fullToken, s.launch)
	s.handle("GET /v1/executions/{id}", fullToken, s.readExecution)
	s.handle("GET /v1/queue", fullToken, s.queue)
	s.handle("GET /v1/agents", fullToken, s.listAgents)
	s.handle("GET /v1/hosts", fullToken, s.listHosts)
	s.handle("POST /v1/executions/{id}/stop", fullToken, s.stop)
	s.handle("POST /v1/executions/{id}/token", fullToken, s.mintToken)
	s.handle("POST /v1/executions/{id}/messages", fullToken, s.sendMessage)
	s.handle("POST /v1/executions/{id}/fork", fullToken, s.fork)
	s.handle("POST /v1/executions/{id}/resume", fullToken, s.resume)
	s.handle("POST /v1/executions/{id}/observations", ownExecution, s.recordObservation)

	s.handle("POST /v1/executions/{id}/terminal", fullToken, s.openTerminal)
	s.handle("POST /v1/executions/{id}/terminal/attach", fullToken, s.attachTerminal)
	s.handle("GET /v1/executions/{id}/terminal", fullToken, s.readTerminal)
	s.handle("POST /v1/executions/{id}/terminal/input", fullToken, s.terminalInput)
	s.handle("GET /v1/executions/{id}/terminal/recording", fullToken, s.terminalRecording)

	s.handle("GET /v1/executions/{id}/output", fullToken, s.output)
	s.handle("GET /v1/executions/{id}/timeline", fullToken, s.timeline)
	s.handle("GET /v1/executions/{id}/records", fullToken, s.records)
	s.handle("GET /v1/executions/{id}/replay", fullToken, s.replay)
	s.handle("GET /v1/executions/{id}/lineage", fullToken, s.executionLineage)
	s.handle("GET /v1/executions/{id}/narrative", fullToken, s.executionNarrative)
	s.handle("GET /v1/executions/{id}/transcript", fullToken, s.executionTranscript)
	s.handle("GET /v1/executions/{id}/todos", fullToken, s.executionTodos)
	s.handle("GET /v1/executions/{id}/approvals", fullToken, s.executionApprovals)
	s.handle("GET /v1/executions/{id}/run", fullToken, s.executionRun)
	s.handle("GET /v1/executions/{id}/checkpoints", fullToken, s.executionCheckpoints)
	s.handle("POST /v1/executions/{id}/checkpoints", fullToken, s.createCheckpoint)
	s.handle("GET /v1/executions/{id}/commands", fullToken, s.listCommands)
	s.handle("POST /v1/executions/{id}/commands", fullToken, s.runCommand)
	s.handle("GET /v1/sessions", fullToken, s.listSessions)
	s.handle("GET /v1/sessions/{sessionId}", fullToken, s.readSession)
	s.handle("GET /v1/sessions/{sessionId}/narrative", fullToken, s.sessionNarrative)
	s.handle("GET /v1/graph", fullToken, s.graph)
	s.handle("GET /v1/events/{eventId}/origin", fullToken, s.eventOrigin)
	s.handle("GET /v1/log", fullToken, s.readLog)
	s.handle("GET /v1/journals", fullToken, s.listJournals)
	s.handle("POST /v1/journals", fullToken, s.importJournal)
	s.handle("GET /v1/journals/{id}", fullToken, s.readJournal)
	s.handle("GET /v1/journals/{id}/entries", fullToken, s.journalEntries)
	s.handle("POST /v1/projections/rebuild", fullToken, s.rebuild)
	s.handle("GET /v1/search", fullToken, s.search)
	s.handle("GET /v1/events", streamToken, s.events)

	// The operator console: its page and assets are public; the page asks
	// for the API token and sends it with every call.
	console := web.Handler()
	for _, p := range []string{"GET /{$}", "GET " + web.AssetPrefix} {
		s.access[p] = public
		s.mux.Handle(p, console)
	}

	if s.cfg.MCP != nil {
		// MCP is the agents' signal channel: a call names no execution,
		// the token does. The operator's token names none, so it is told
		// which token MCP takes instead of a bare refusal.
		mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, scoped := scopedExecution(r.Context()); !scoped {
				s.writeError(w, r, forbidden("MCP takes a token scoped to one execution, which the daemon gives each agent it launches "+
					"in AGENTJOURNAL_TOKEN (with AGENTJOURNAL_MCP_URL); the API token is the operator's and names no execution to signal"))
				return
			}
			s.cfg.MCP.ServeHTTP(w, r)
		})
		for _, p := range []string{"/mcp", "/mcp/"} {
			s.access[p] = anyScope
			s.mux.Handle(p, mcp)
		}
	}
}

// handle registers a route whose handler returns its error for the one
// error writer to answer.
func (s *Server) handle(pattern string, acc access, h func(http.ResponseWriter, *http.Request) error) {
	s.access[pattern] = acc
	hasID := strings.Contains(pattern, "{id}")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		// An id the journal cannot hold (too long, say) names no
		// execution: it is answered here, as an unknown one, before it
		// reaches the runtime, the store, an answer or the log.
		if hasID {
			if _, err := eventstore.EscapeID(r.PathValue("id")); err != nil {
				s.writeError(w, r, notFound("no execution %q: %v", clip(r.PathValue("id"), maxFieldLen), err))
				return
			}
		}
		if id, scoped := scopedExecution(r.Context()); scoped && acc == ownExecution && r.PathValue("id") != id {
			s.writeError(w, r, forbidden("this token is scoped to execution %s and cannot act on %s", id, r.PathValue("id")))
			return
		}
		if hostBound[pattern] {
			if done, err := s.route(w, r); done || err != nil {
				if err != nil {
					s.writeError(w, r, err)
				}
				return
			}
		}
		if r.Method != http.MethodGet && hasID {
			if err := s.refuseDamaged(r.PathValue("id")); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if r.Method != http.MethodGet && s.cfg.LogReachable != nil {
			if err := s.logReachable(r.Context()); err != nil {
				s.writeError(w, r, unavailable("the log cannot take writes now: %v; this daemon reconnects by itself, retry then (reads are served meanwhile)", err))
				return
			}
		}
		if !ownPace[pattern] {
			s.readable(r.Context())
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, s.lostLog(r, err))
		}
	})
}

// ownPace are the routes that do not wait for the read models to hold what
// earlier answers told of (readable): those that read none (the log, the
// runtime, the terminals and tokens answer them, and the log has every
// record an answer told of), the observation route, which is the one that
// tells without waiting, the event stream, which waits for the projection
// record by record itself, and the health and metrics routes, which report
// how far behind it is.
var ownPace = map[string]bool{
	"GET /healthz":                               true,
	"GET /metrics":                               true,
	"GET /v1/openapi.yaml":                       true,
	"POST /v1/executions/{id}/observations":      true,
	"GET /v1/events":                             true,
	"GET /v1/executions/{id}/records":            true,
	"GET /v1/executions/{id}/replay":             true,
	"GET /v1/executions/{id}/lineage":            true,
	"GET /v1/events/{eventId}/origin":            true,
	"GET /v1/log":                                true,
	"GET /v1/journals":                           true,
	"POST /v1/journals":                          true,
	"GET /v1/journals/{id}":                      true,
	"GET /v1/journals/{id}/entries":              true,
	"GET /v1/queue":                              true,
	"GET /v1/agents":                             true,
	"GET /v1/hosts":                              true,
	"POST /v1/executions/{id}/token":             true,
	"POST /v1/executions/{id}/terminal":          true,
	"POST /v1/executions/{id}/terminal/attach":   true,
	"GET /v1/executions/{id}/terminal":           true,
	"POST /v1/executions/{id}/terminal/input":    true,
	"GET /v1/executions/{id}/terminal/recording": true,
}

// lostLog words a write that failed because the log went away while it
// ran (the NATS it joined went down after the check before it): the same
// 503 the check gives, instead of a timeout or an internal error.
func (s *Server) lostLog(r *http.Request, err error) error {
	if r.Method == http.MethodGet || s.cfg.LogReachable == nil {
		return err
	}
	if ae := toAPIError(err); ae.status != http.StatusGatewayTimeout && ae.status != http.StatusInternalServerError &&
		ae.status != http.StatusServiceUnavailable {
		return err
	}
	if rerr := s.cfg.LogReachable(); rerr != nil {
		return unavailable("the log cannot take writes now: %v; this daemon reconnects by itself, retry then (reads are served meanwhile)", rerr)
	}
	return err
}

// reconnectGrace is how long a write waits for a log connection that is
// being re-established: a cluster failover takes a moment, a server that
// is down does not come back in it.
const reconnectGrace = 2 * time.Second

// logReachable asks LogReachable, waiting out a short reconnection.
func (s *Server) logReachable(ctx context.Context) error {
	deadline := time.Now().Add(reconnectGrace)
	for {
		err := s.cfg.LogReachable()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	h, pattern := s.mux.Handler(r)
	acc, known := s.access[pattern]
	route := pattern
	if !known {
		route = "unmatched"
	}
	defer func() { s.metrics.observe(route, sw.status(), time.Since(start)) }()

	if acc != public {
		ctx, err := s.authenticate(r, acc)
		if err != nil {
			s.writeError(sw, r, err)
			return
		}
		r = r.WithContext(ctx)
	}
	if pattern == "" {
		s.unmatched(sw, r, h)
		return
	}
	s.mux.ServeHTTP(sw, r)
}

// unmatched answers a request no route takes in the API's error shape: 405
// with the allowed methods when the path exists, 404 otherwise. Redirects
// (a path to clean) are left to the mux.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &probeWriter{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.code {
	case http.StatusMethodNotAllowed:
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: wire.CodeMethodNotAllowed,
			message: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", clip(r.Method, maxFieldLen), clip(r.URL.Path, maxFieldLen), allow)})
	case http.StatusNotFound:
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: wire.CodeNotFound,
			message: fmt.Sprintf("no route %s %s (the API lives under /v1)", clip(r.Method, maxFieldLen), clip(r.URL.Path, maxFieldLen))})
	default:
		s.mux.ServeHTTP(w, r)
	}
}

// Start starts the publisher of live events: it follows the log from the
// projection's checkpoint. It returns at once; Close stops it.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("api: start: the server is closed")
	case s.started:
		return errors.New("api: start: already started")
	}
	cp, err := s.cfg.Views.Checkpoint()
	if err != nil {
		return fmt.Errorf("api: start: read the projection checkpoint: %w", err)
	}
	s.broker.reset(cp)
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.started = true
	s.wg.Go(func() { s.publish(ctx) })
	return nil
}

// Close stops the publisher, ends every event stream and waits for both;
// a stream blocked writing to a client that does not read ends within
// StreamWriteTimeout. Call it before shutting the HTTP server down: event
// streams never go idle on their own. It is safe to call twice.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.broker.close()
	s.wg.Wait()
	return nil
}

// track counts a long-running request (an event stream) that Close waits
// for; false when the server is closed.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// statusWriter remembers the status code for metrics. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush serves handlers that look for http.Flusher rather than use
// http.ResponseController (streaming MCP transports do).
func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// probeWriter captures what the mux would answer to an unmatched request.
type probeWriter struct {
	header http.Header
	code   int
}

func (w *probeWriter) Header() http.Header { return w.header }
func (w *probeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *probeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}
