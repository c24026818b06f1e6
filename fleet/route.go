package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Header names of a forwarded request and its answer. The HTTP headers of
// both travel as they are beside them, but for the credentials.
const (
	headerMethod  = "Agentjournal-Method"
	headerURI     = "Agentjournal-Uri"
	headerTimeout = "Agentjournal-Timeout-Ms"
	headerStatus  = "Agentjournal-Status"
	// headerFailure carries why the host could not answer at all.
	headerFailure = "Agentjournal-Failure"
	// HostHeader names the host that answered, on every forwarded answer.
	HostHeader = "Agentjournal-Host"
)

// DefaultForwardTimeout bounds a forwarded request whose context has no
// deadline.
const DefaultForwardTimeout = time.Minute

// Answer is a host's answer to a forwarded request, as its API wrote it.
type Answer struct {
	Host   string
	Status int
	Header http.Header
	Body   []byte
}

var (
	// ErrUnreachable is wrapped by Forward's error when the host did not
	// answer: no daemon listens for it, or it did not answer in time.
	ErrUnreachable = errors.New("the host does not answer")
	// ErrNotTaken is wrapped with ErrUnreachable when no daemon listens
	// for the host: the request reached nobody, so nothing was done.
	ErrNotTaken = errors.New("no daemon takes requests for the host")
)

// Forward sends an API request to host and returns its answer. body is the
// request's body, read by the caller (a forwarded request is bounded by
// the NATS message size, as the API bounds its bodies).
func (f *Fleet) Forward(ctx context.Context, host string, r *http.Request, body []byte) (*Answer, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultForwardTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	m := nats.NewMsg(Subject(f.cfg.Stream, host))
	for k, vs := range r.Header {
		if k == "Authorization" || k == "Cookie" {
			continue
		}
		m.Header[k] = vs
	}
	m.Header.Set(headerMethod, r.Method)
	m.Header.Set(headerURI, r.URL.RequestURI())
	m.Header.Set(headerTimeout, strconv.FormatInt(time.Until(deadline).Milliseconds(), 10))
	m.Data = body
	resp, err := f.cfg.Conn.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %w %s", ErrUnreachable, ErrNotTaken, host)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return nil, fmt.Errorf("%w: host %s did not answer within %s", ErrUnreachable, host, time.Until(deadline).Round(time.Millisecond))
	case errors.Is(err, nats.ErrMaxPayload):
		return nil, fmt.Errorf("the request is larger than the log's NATS carries (%d bytes) and cannot reach host %s", f.cfg.Conn.MaxPayload(), host)
	case err != nil:
		return nil, fmt.Errorf("forward to host %s: %w", host, err)
	}
	if why := resp.Header.Get(headerFailure); why != "" {
		return nil, fmt.Errorf("host %s could not answer: %s", host, why)
	}
	status, err := strconv.Atoi(resp.Header.Get(headerStatus))
	if err != nil {
		return nil, fmt.Errorf("host %s answered without a status (%q)", host, resp.Header.Get(headerStatus))
	}
	a := &Answer{Host: host, Status: status, Header: http.Header{}, Body: resp.Data}
	for k, vs := range resp.Header {
		if k != headerStatus {
			a.Header[k] = vs
		}
	}
	a.Header.Set(HostHeader, host)
	return a, nil
}

// answer serves a forwarded request through the Handler, in a goroutine
// of its own: a request may wait (a stop's grace), and the others must not
// wait behind it.
func (f *Fleet) answer(m *nats.Msg) {
	select {
	case f.serve <- struct{}{}:
	default:
		f.fail(m, fmt.Sprintf("host %s is answering %d forwarded requests already; retry", f.cfg.Name, cap(f.serve)))
		return
	}
	f.wg.Go(func() {
		defer func() { <-f.serve }()
		f.serveOne(m)
	})
}

func (f *Fleet) fail(m *nats.Msg, why string) {
	r := nats.NewMsg(m.Reply)
	r.Header.Set(headerFailure, why)
	if err := m.RespondMsg(r); err != nil {
		f.cfg.Logger.Warn("fleet: answer to a forwarded request not sent", "err", err)
	}
}

func (f *Fleet) serveOne(m *nats.Msg) {
	timeout := DefaultForwardTimeout
	if ms, err := strconv.ParseInt(m.Header.Get(headerTimeout), 10, 64); err == nil && ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, m.Header.Get(headerMethod), m.Header.Get(headerURI), bytes.NewReader(m.Data))
	if err != nil {
		f.fail(m, fmt.Sprintf("the forwarded request does not read: %v", err))
		return
	}
	for k, vs := range m.Header {
		switch k {
		case headerMethod, headerURI, headerTimeout:
		default:
			req.Header[k] = vs
		}
	}
	req.ContentLength = int64(len(m.Data))
	rec := &recorder{header: http.Header{}}
	f.cfg.Handler.ServeHTTP(rec, req)
	out := nats.NewMsg(m.Reply)
	for k, vs := range rec.header {
		out.Header[k] = vs
	}
	out.Header.Set(headerStatus, strconv.Itoa(rec.status()))
	out.Data = rec.body.Bytes()
	if max := f.cfg.Conn.MaxPayload(); int64(len(out.Data))+4096 > max {
		f.fail(m, fmt.Sprintf("its answer (%d bytes) is larger than the log's NATS carries (%d bytes); ask it directly", len(out.Data), max))
		return
	}
	if err := m.RespondMsg(out); err != nil {
		f.cfg.Logger.Warn("fleet: answer to a forwarded request not sent", "uri", req.URL.RequestURI(), "err", err)
	}
}

// recorder is the ResponseWriter a forwarded request is served into.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// envSubject is where the host name gives the environments of the runs it
// accepted to the host that starts them.
func envSubject(stream, name string) string {
	return "agentjournal.fleet." + stream + ".host." + name + ".env"
}

// envAnswer is the answer on envSubject.
type envAnswer struct {
	Env   []string `json:"env,omitempty"`
	Error string   `json:"error,omitempty"`
}

// EnvOf asks host, which accepted the queued run id, for its environment.
// It travels over the log's NATS as a forwarded launch does, and is kept
// nowhere on the way.
func (f *Fleet) EnvOf(ctx context.Context, host, id string) ([]string, error) {
	resp, err := f.cfg.Conn.RequestWithContext(ctx, envSubject(f.cfg.Stream, host), []byte(id))
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %w %s", ErrUnreachable, ErrNotTaken, host)
	case err != nil:
		return nil, fmt.Errorf("%w: host %s: %v", ErrUnreachable, host, err)
	}
	var a envAnswer
	if err := json.Unmarshal(resp.Data, &a); err != nil {
		return nil, fmt.Errorf("host %s answered with no environment: %v", host, err)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("host %s: %s", host, a.Error)
	}
	return a.Env, nil
}

func (f *Fleet) answerEnv(m *nats.Msg) {
	var a envAnswer
	env, err := f.cfg.Env(string(m.Data))
	if err != nil {
		a.Error = err.Error()
	}
	a.Env = env
	b, _ := json.Marshal(a)
	if err := m.Respond(b); err != nil {
		f.cfg.Logger.Warn("fleet: environment of a queued run not sent", "err", err)
	}
}
