package benchkit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Calls is what TimeEach measured of its calls.
type Calls struct {
	// Latencies and Starts are how long each call took and when it
	// started, by its index.
	Latencies []time.Duration
	Starts    []time.Time
	// Start is when the goroutines started; Elapsed is how long all the
	// calls took, from Start to the last one's end.
	Start   time.Time
	Elapsed time.Duration
}

// TimeEach calls do for 0 … n-1 from the given number of goroutines, each
// taking the next index as it finishes the last, and times every call: the
// closed-loop load of a measurement with many clients. do is told which
// goroutine, 0 … workers-1, calls it. The first error stops the others and
// is returned.
func TimeEach(ctx context.Context, n, workers int, do func(ctx context.Context, worker, i int) error) (Calls, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := Calls{Latencies: make([]time.Duration, n), Starts: make([]time.Time, n)}
	var next atomic.Int64
	var wg sync.WaitGroup
	c.Start = time.Now()
	for w := range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c.Starts[i] = time.Now()
				if err := do(ctx, w, i); err != nil {
					cancel(err)
					return
				}
				c.Latencies[i] = time.Since(c.Starts[i])
			}
		})
	}
	wg.Wait()
	c.Elapsed = time.Since(c.Start)
	if err := context.Cause(ctx); err != nil {
		return Calls{}, err
	}
	return c, nil
}
