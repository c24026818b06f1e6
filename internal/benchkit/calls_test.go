package benchkit

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestTimeEach: every index is called once, from one of the goroutines,
// and timed; the first error stops the calls and is what TimeEach returns.
func TestTimeEach(t *testing.T) {
	const n, workers = 50, 4
	var mu sync.Mutex
	calls := map[int]int{}
	c, err := TimeEach(t.Context(), n, workers, func(_ context.Context, worker, i int) error {
		if worker < 0 || worker >= workers {
			t.Errorf("call %d from goroutine %d, want 0 to %d", i, worker, workers-1)
		}
		mu.Lock()
		defer mu.Unlock()
		calls[i]++
		return nil
	})
	if err != nil {
		t.Fatalf("TimeEach: %v", err)
	}
	for i := range n {
		if calls[i] != 1 {
			t.Errorf("index %d called %d times, want once", i, calls[i])
		}
		if c.Starts[i].Before(c.Start) || c.Latencies[i] < 0 {
			t.Errorf("call %d started %v before the calls did (%v), or took %v", i, c.Starts[i], c.Start, c.Latencies[i])
		}
	}
	if len(c.Latencies) != n || len(c.Starts) != n || c.Elapsed <= 0 {
		t.Errorf("%d latencies, %d starts, elapsed %v; want %d, %d and a positive time", len(c.Latencies), len(c.Starts), c.Elapsed, n, n)
	}

	refused := errors.New("refused")
	var after int
	_, err = TimeEach(t.Context(), n, 1, func(_ context.Context, _, i int) error {
		if i == 3 {
			return refused
		}
		if i > 3 {
			after++
		}
		return nil
	})
	if !errors.Is(err, refused) || after != 0 {
		t.Errorf("TimeEach with call 3 failing = %v, %d calls after it; want the error and none", err, after)
	}
}
