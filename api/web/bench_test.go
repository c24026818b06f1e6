package web_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// The console's benchmarks drive a real Chromium against a whole daemon,
// once per iteration: run them with -benchtime=1x (docs/bench.md).
//
//	go test ./api/web -run '^$' -bench Console -benchtime=1x
//	go test ./api/web -run '^$' -bench ConsoleMemory -benchtime=1x -console.live=10m

// liveFor is how long the memory benchmark follows a live execution.
var liveFor = flag.Duration("console.live", 30*time.Second, "how long BenchmarkConsoleMemory follows a live execution (docs/bench.md runs it for 10m)")

// listSize is how many executions BenchmarkConsoleListFirstPaint lists.
var listSize = flag.Int("console.list", 10000, "how many executions BenchmarkConsoleListFirstPaint lists")

// markerAgent launches the fixture agent reporting progress every 100 ms
// for about d, and returns its id.
func markerAgent(t testing.TB, s *stack, owner string, d time.Duration) string {
	t.Helper()
	n := int(d/(100*time.Millisecond)) + 50
	return s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": owner, "agent": "generic",
		"command": []string{s.agent, fmt.Sprintf("markers:%d:100ms", n), "sleep:600s"}})
}

// BenchmarkConsoleRequestsPerRecord: the API requests an execution's page
// makes while the execution appends records live (a progress report every
// 100 ms), per record. Target: at most 1.
func BenchmarkConsoleRequestsPerRecord(b *testing.B) {
	for range b.N {
		br := newBrowser(b)
		s := startStack(b)
		id := markerAgent(b, s, "t-bench", 10*time.Second)
		br.signIn(b, s)
		br.openExecution(b, id)
		br.waitFor(b, 20*time.Second, "the first progress", `document.querySelectorAll('#timeline li.item[data-kind="progress"]').length > 0`)
		br.countRequests(b)
		from := s.lastSequence(b, id)
		time.Sleep(5 * time.Second)
		to := s.lastSequence(b, id)
		br.waitFor(b, 10*time.Second, "the newest record", fmt.Sprintf(`Number(document.getElementById('tt-banner-last').textContent) >= %d`, to))
		requests := eval[[]string](b, br, `window.requests`)
		b.ReportMetric(float64(len(requests))/float64(to-from), "requests/record")
		b.ReportMetric(float64(to-from), "records")
	}
}

// jsHeap is the page's used JavaScript heap, in bytes, after a full
// garbage collection, and the number of DOM nodes it holds.
func jsHeap(t testing.TB, br *browser) (heap, nodes float64) {
	t.Helper()
	var m performance.GetMetricsResult
	err := chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		if _, err := cdp.Call(ctx, target, performance.Enable, performance.EnableParams{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, target, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			return err
		}
		var err error
		m, err = cdp.Call(ctx, target, performance.GetMetrics, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatalf("read the page's metrics: %v", err)
	}
	for _, x := range m.Metrics {
		switch x.Name {
		case "JSHeapUsedSize":
			heap = x.Value
		case "Nodes":
			nodes = x.Value
		}
	}
	return heap, nodes
}

// BenchmarkConsoleMemory: the renderer's JavaScript heap while an
// execution's page follows it live (a progress report every 100 ms) for
// -console.live, measured after a garbage collection once the page has
// settled and at the end. Target: flat within 10%.
func BenchmarkConsoleMemory(b *testing.B) {
	for range b.N {
		br := newBrowserFor(b, *liveFor+4*time.Minute)
		s := startStack(b)
		id := markerAgent(b, s, "t-memory", *liveFor+time.Minute)
		br.signIn(b, s)
		br.openExecution(b, id)
		br.waitFor(b, 20*time.Second, "the first progress", `document.querySelectorAll('#timeline li.item[data-kind="progress"]').length > 0`)
		// Settle: the page's first reads done and some live records taken.
		time.Sleep(20 * time.Second)
		start, startNodes := jsHeap(b, br)
		from := s.lastSequence(b, id)
		time.Sleep(*liveFor)
		end, endNodes := jsHeap(b, br)
		records := s.lastSequence(b, id) - from
		b.Logf("JS heap %.1f MB -> %.1f MB, DOM nodes %.0f -> %.0f, over %s and %d records", start/1e6, end/1e6, startNodes, endNodes, *liveFor, records)
		b.ReportMetric(100*(end-start)/start, "heap-growth-%")
		b.ReportMetric(end/1e6, "heap-MB")
		b.ReportMetric(endNodes-startNodes, "nodes-added")
		b.ReportMetric(float64(records), "records")
		br.checkNoExceptions(b)
	}
}

// BenchmarkConsoleListFirstPaint: the time from the console's load to the
// executions list showing its rows, with -console.list executions all
// running (the list loads every running one, whatever their number).
// Target: under 1 s for 10,000.
func BenchmarkConsoleListFirstPaint(b *testing.B) {
	st := apitest.Start(b, apitest.Options{})
	s := stackOf(st)
	var wg sync.WaitGroup
	ids := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				fixtures.WriteJournal(b, st.Store, id, nil, true)
			}
		}()
	}
	for i := range *listSize {
		id, err := eventstore.NewAgentExecutionID(eventstore.OwnerTask, "t-1", fmt.Sprintf("bench-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		ids <- id
	}
	close(ids)
	wg.Wait()
	var total int
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var page struct {
			Executions []struct{} `json:"executions"`
		}
		s.call(b, "GET", "/v1/executions?lifecycle=running", nil, &page)
		if total = len(page.Executions); total >= *listSize || time.Now().After(deadline) {
			break
		}
	}
	if total < *listSize {
		b.Fatalf("the list holds %d running executions, want %d", total, *listSize)
	}
	br := newBrowser(b)
	br.signIn(b, s)
	b.ResetTimer()
	for range b.N {
		// From a fresh load of the page to the frame that shows rows.
		br.do(b, chromedp.Reload())
		at := awaited(b, br, `new Promise((done) => { const look = () => document.querySelector('#executions-body tr') ?
			done(performance.now()) : requestAnimationFrame(look); look(); })`)
		all := awaited(b, br, fmt.Sprintf(`new Promise((done) => { const look = () => document.querySelectorAll('#executions-body tr').length >= %d ?
			done(performance.now()) : setTimeout(look, 20); look(); })`, *listSize))
		b.ReportMetric(at, "ms-to-rows")
		b.ReportMetric(all, "ms-to-all-rows")
	}
}

// awaited evaluates an expression whose value is a promise of a number,
// and returns the number it resolves to.
func awaited(t testing.TB, br *browser, expr string) float64 {
	t.Helper()
	v, err := chromedp.Run(br.ctx, chromedp.Evaluate[float64](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
