package storebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// nameDiskSync is the result that measures the file system under every
// durable line: what one synced record costs when it grows its file, as
// every record of a JetStream block does, against when it overwrites bytes
// the file already has, as SQLite's write-ahead log does once it has grown
// to its size and starts again at its beginning.
const nameDiskSync = "disk/sync-per-record"

// Names of the disk result's baseline and figure.
const (
	baselineOverwrite   = "overwrite"
	figureOverwriteRate = "overwrite rec/s"
)

// diskSync measures one writer syncing each record of recordBytes into a
// file of its own, appended against overwritten in place, rounds times
// each, alternating which goes first.
func (r *runner) diskSync(ctx context.Context) (_ []benchkit.Result, err error) {
	dir, err := os.MkdirTemp(r.cfg.Dir, "disk-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameDiskSync, err)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("%s: %w", nameDiskSync, rerr)
		}
	}()
	n, size := r.cfg.Records, max(r.recordBytes, 1)
	record := make([]byte, size)
	copy(record, r.summary)
	// Each side writes the same n records to a new file, synced one by
	// one; the overwriting side's file is first filled and synced
	// untimed, so that no write of the timed part changes its size.
	side := func(prefill bool) side {
		return func(ctx context.Context, round int) (time.Duration, error) {
			path := filepath.Join(dir, fmt.Sprintf("round-%d-%t", round, prefill))
			defer os.Remove(path)
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			if prefill {
				if _, err := f.WriteAt(make([]byte, n*size), 0); err != nil {
					return 0, err
				}
			}
			if err := f.Sync(); err != nil {
				return 0, err
			}
			return benchkit.Timed(func() error {
				for i := range n {
					if i%1000 == 0 && ctx.Err() != nil {
						return ctx.Err()
					}
					if _, err := f.WriteAt(record, int64(i*size)); err != nil {
						return err
					}
					if err := f.Sync(); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	times, err := compareAll(ctx, side(false), side(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameDiskSync, err)
	}
	elapsed, overwrite := benchkit.Median(times[0]), benchkit.Median(times[1])
	res := benchkit.Result{
		Name:     nameDiskSync,
		Count:    n,
		Elapsed:  elapsed,
		Rate:     benchkit.Rate(n, elapsed),
		RateUnit: unitRecordsPerSec,
		Baseline: baselineOverwrite,
		Method: fmt.Sprintf("a %d-byte record written at the end of a file and fsynced, one after the other, "+
			"against the same records written over bytes the file already holds, each fsynced", size),
	}
	overwriteRate := benchkit.Rate(n, overwrite)
	if overwriteRate > 0 {
		res.Ratio = res.Rate / overwriteRate
	}
	res.Figures = []benchkit.Figure{{Name: figureOverwriteRate, Value: overwriteRate}}
	return []benchkit.Result{res}, nil
}
