package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

// streamWriteTimeout is the StreamWriteTimeout of the stuck-client test:
// long enough that a client that reads is never cut off on a busy machine.
const streamWriteTimeout = time.Second

// TestEventsStuckClient: a client that opens the event stream and never
// reads is disconnected once its connection stops taking data, its stream
// goroutine ends, and a client that reads keeps receiving events.
func TestEventsStuckClient(t *testing.T) {
	var log logLines
	r := newRig(t, func(c *api.Config) {
		c.StreamWriteTimeout = streamWriteTimeout
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})

	reader := r.readAll(t)
	stuck := r.openStuckStream(t)
	eventually(t, 10*time.Second, "both streams are open", func() bool { return r.openStreams(t) == 2 })
	if got := streamGoroutines(); got != 2 {
		t.Fatalf("%d event stream goroutines, want 2", got)
	}

	// Each message an agent reports reaches every stream with its text:
	// messages follow until the stuck client's connection is full and the
	// server drops it.
	id := r.launch(t, "t-stuck", "", "sleep:60s").Reference.AgentExecutionID
	text := strings.Repeat("x", 256<<10)
	deadline := time.Now().Add(60 * time.Second)
	for n := 0; r.openStreams(t) != 1; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d messages, %d streams are open and %d stream goroutines run, want 1 and 1: the client that never reads was not disconnected",
				n, r.openStreams(t), streamGoroutines())
		}
		obs := map[string]any{"observationId": fmt.Sprintf("o-%d", n), "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "message", "payload": map[string]any{"text": text}}}
		r.call(t, "POST", "/v1/executions/"+id+"/observations", obs, http.StatusOK, nil)
	}
	eventually(t, 10*time.Second, "the stuck client's stream goroutine ends", func() bool { return streamGoroutines() == 1 })

	// The server closed the connection: what it holds is read to the end.
	if err := stuck.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, stuck); err != nil {
		t.Fatalf("reading the stuck client's connection: got %v, want EOF: the server did not close it", err)
	}

	// The reading client was not dropped, and gets the next run's events.
	next := r.launch(t, "t-after", "", "exit:0").Reference.AgentExecutionID
	eventually(t, 20*time.Second, "the reading client gets the next execution's events", func() bool { return reader.saw(next) })
	if reader.overflowed() {
		t.Fatal("the reading client got an overflow event")
	}
	if reader.ended() {
		t.Fatal("the reading client's stream ended")
	}
	if !slices.ContainsFunc(log.all(), func(line string) bool { return strings.Contains(line, "took no data") }) {
		t.Errorf("the daemon log does not say a client was disconnected:\n%s", strings.Join(log.all(), ""))
	}
}

// openStuckStream opens GET /v1/events on a raw connection and never reads
// from it.
func (r *rig) openStuckStream(t *testing.T) *net.TCPConn {
	t.Helper()
	addr := strings.TrimPrefix(r.http.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { conn.Close() })
	req := fmt.Sprintf("GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", addr, testToken)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// openStreams reads the open event streams from GET /metrics.
func (r *rig) openStreams(t *testing.T) int {
	t.Helper()
	code, body := r.do(t, "GET", "/metrics", nil, testToken)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "agentjournal_sse_subscribers "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("GET /metrics has no agentjournal_sse_subscribers:\n%s", body)
	return 0
}

// streamGoroutines counts the goroutines serving an event stream.
func streamGoroutines() int {
	count := 0
	for _, g := range benchtest.Stacks() {
		if strings.Contains(g, "api.(*Server).events(") {
			count++
		}
	}
	return count
}

// eventCounter is an event stream read as fast as it comes, keeping only
// what the stuck-client test looks at.
type eventCounter struct {
	mu         sync.Mutex
	executions map[string]bool
	overflow   bool
	end        bool
}

// readAll opens GET /v1/events and reads it until the test ends.
func (r *rig) readAll(t *testing.T) *eventCounter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", r.http.URL+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events: status %d, want 200", resp.StatusCode)
	}
	c := &eventCounter{executions: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		readSSE(bufio.NewReaderSize(resp.Body, 64<<10), func(ev sseEvent) {
			var p struct {
				ExecutionID string `json:"executionId"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &p)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.executions[p.ExecutionID] = true
			if ev.Name == "overflow" {
				c.overflow = true
			}
		})
		if !errors.Is(ctx.Err(), context.Canceled) {
			c.mu.Lock()
			c.end = true
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

func (c *eventCounter) saw(execution string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.executions[execution]
}

func (c *eventCounter) overflowed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overflow
}

func (c *eventCounter) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}
