package api

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
)

// Metric names are scraped by dashboards: never rename one.
const (
	metricRequests    = "agentjournal_http_requests_total"
	metricDuration    = "agentjournal_http_request_duration_seconds"
	metricLag         = "agentjournal_projection_lag_records"
	metricExecutions  = "agentjournal_executions"
	metricSubscribers = "agentjournal_sse_subscribers"
)

// durationBuckets are the upper bounds, in seconds, of the request
// duration histogram.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics counts requests by route pattern (a closed set: unmatched paths
// share one label) and status code.
type metrics struct {
	mu        sync.Mutex
	requests  map[requestKey]uint64
	durations map[string]*histogram
}

type requestKey struct {
	route string
	code  int
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

func newMetrics() *metrics {
	return &metrics{requests: map[requestKey]uint64{}, durations: map[string]*histogram{}}
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{route, code}]++
	h := m.durations[route]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(durationBuckets))}
		m.durations[route] = h
	}
	sec := d.Seconds()
	if i, _ := slices.BinarySearch(durationBuckets, sec); i < len(durationBuckets) {
		h.counts[i]++
	}
	h.count++
	h.sum += sec
}

// write writes the request metrics in the Prometheus text format.
func (m *metrics) write(w *bufio.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		if c := strings.Compare(a.route, b.route); c != 0 {
			return c
		}
		return a.code - b.code
	})
	header(w, metricRequests, "counter", "HTTP requests served, by route pattern and status code.")
	for _, k := range keys {
		fmt.Fprintf(w, "%s{route=%s,code=\"%d\"} %d\n", metricRequests, label(k.route), k.code, m.requests[k])
	}
	routes := make([]string, 0, len(m.durations))
	for r := range m.durations {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	header(w, metricDuration, "histogram", "HTTP request durations, by route pattern; event streams count until they end.")
	for _, r := range routes {
		h := m.durations[r]
		var cum uint64
		for i, le := range durationBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "%s_bucket{route=%s,le=\"%s\"} %d\n", metricDuration, label(r), strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(w, "%s_bucket{route=%s,le=\"+Inf\"} %d\n", metricDuration, label(r), h.count)
		fmt.Fprintf(w, "%s_sum{route=%s} %s\n", metricDuration, label(r), strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(w, "%s_count{route=%s} %d\n", metricDuration, label(r), h.count)
	}
}

func header(w *bufio.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// label quotes a label value as the text format wants it.
func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

// serveMetrics: GET /metrics, the Prometheus text format.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	lag, err := s.cfg.Views.Lag(r.Context(), s.cfg.Store)
	if err != nil {
		return err
	}
	counts := make([]int, len(eventstore.Lifecycles))
	for i, l := range eventstore.Lifecycles {
		list, err := s.cfg.Views.List(projections.Filter{Lifecycle: l})
		if err != nil {
			return err
		}
		counts[i] = len(list)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	s.metrics.write(bw)
	header(bw, metricLag, "gauge", "Log records the projection has not applied yet.")
	fmt.Fprintf(bw, "%s %d\n", metricLag, lag.Records)
	header(bw, metricExecutions, "gauge", "Executions in the projection, by lifecycle.")
	for i, l := range eventstore.Lifecycles {
		fmt.Fprintf(bw, "%s{lifecycle=%s} %d\n", metricExecutions, label(string(l)), counts[i])
	}
	header(bw, metricSubscribers, "gauge", "Open live event streams.")
	fmt.Fprintf(bw, "%s %d\n", metricSubscribers, s.streams.Load())
	return bw.Flush()
}

// DiskSpace is what the daemon last measured of the disk that holds its log
// (Config.DiskSpace).
type DiskSpace struct {
	// Dir is the data directory.
	Dir string
	// Free is the space left on the disk, in bytes.
	Free uint64
	// Reserve is the free space the log keeps: it takes writes only while
	// more than this is free.
	Reserve uint64
	// Full reports that the log refuses writes.
	Full bool
}

// PolicyShare is a daemon's share of the policy's partitions, as
// Config.PolicyShare gives it and /healthz shows it.
type PolicyShare = wire.PolicyShare

// healthz: GET /healthz. Without a token it says only whether the daemon
// serves: 200 with its one-word status, or 503 with no reason. The details
// (the data directory, the log's offsets, the disk, why it fails) go only
// to the API token: a process that reaches the port, such as an agent, must
// not learn where the token file lies. A wrong token, or a scoped one, is
// refused as on any other route rather than answered the short way.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	detailed := r.Header.Get("Authorization") != ""
	if detailed {
		if _, err := s.authenticate(r, fullToken); err != nil {
			return err
		}
	}
	h, err := s.health(r)
	switch {
	case err != nil && !detailed:
		return unavailable("the daemon cannot serve now (GET /healthz with the API token says why)")
	case err != nil:
		return err
	case !detailed:
		writeJSON(w, http.StatusOK, wire.HealthStatus{Status: h.Status})
		return nil
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

// health is what GET /healthz tells the API token; an error when the log or
// the projection cannot be read.
func (s *Server) health(r *http.Request) (wire.Health, error) {
	if s.cfg.LogReachable != nil {
		if err := s.cfg.LogReachable(); err != nil {
			return wire.Health{}, unavailable("%v", err)
		}
	}
	lag, err := s.cfg.Views.Lag(r.Context(), s.cfg.Store)
	if err != nil {
		s.log.Warn("health check", logKeyErr, err)
		return wire.Health{}, unavailable("the log or the projection cannot be read")
	}
	h := wire.Health{Status: "ok", Checkpoint: lag.Checkpoint, LastOffset: lag.LastOffset, Lag: lag.Records}
	if s.cfg.DiskSpace != nil {
		if d, ok := s.cfg.DiskSpace(); ok {
			h.Storage = &wire.Storage{DataDir: d.Dir, FreeBytes: d.Free, ReserveBytes: d.Reserve, Full: d.Full}
			if d.Full {
				h.Status = "disk_full"
			}
		}
	}
	if s.cfg.PolicyShare != nil {
		p := s.cfg.PolicyShare()
		p.Partitions = orEmpty(p.Partitions)
		h.Policy = &p
	}
	// Damage outlasts a full disk, which passes once space is freed.
	if h.Damaged = s.damaged(); len(h.Damaged) > 0 {
		h.Status = "damaged"
	}
	return h, nil
}
