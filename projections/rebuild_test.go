package projections_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
)

// readers calls Execution, List and Timeline on db in a loop until stopped,
// and returns the errors they met and the number of calls.
func readers(t *testing.T, db *projections.DB, rs []eventstore.Reference, n int) (stop func() (calls int64)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var count atomic.Int64
	errs := make(chan error, n)
	for g := range n {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id := rs[(g+i)%len(rs)].AgentExecutionID
				st, err := db.Execution(id)
				if err == nil && st.ID != id {
					err = fmt.Errorf("Execution(%s) returned %s", id, st.ID)
				}
				if err == nil {
					var sums []projections.Summary
					sums, err = db.List(projections.Filter{OwnerEntity: rs[0].OwnerEntity})
					if err == nil && len(sums) == 0 {
						err = errors.New("List returned nothing")
					}
				}
				if err == nil {
					tl, _, terr := db.Timeline(id, 0, 20)
					if err = terr; err == nil && len(tl) == 0 {
						err = fmt.Errorf("Timeline(%s) is empty", id)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				count.Add(3)
			}
		})
	}
	return func() int64 {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("reader: %v", err)
		}
		return count.Load()
	}
}

func TestRebuildWhileReading(t *testing.T) {
	s, rs := writtenLog(t, 8, 100)

	// Two projections built batch by batch: the one to rebuild, and a
	// reference that is left alone.
	live := openDB(t, projections.Config{Path: dbPath(t, "live.db"), BatchSize: 17})
	catchUp(t, live, s)
	reference := openDB(t, projections.Config{Path: dbPath(t, "reference.db"), BatchSize: 50})
	catchUp(t, reference, s)

	stop := readers(t, live, rs, 3)
	var calls [][2]uint64
	err := projections.Rebuild(context.Background(), s, live, func(done, total uint64) {
		calls = append(calls, [2]uint64{done, total})
	})
	if err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	n := stop()
	t.Logf("%d reads during the rebuild", n)
	last := lastOffset(t, s)
	if len(calls) == 0 || calls[len(calls)-1] != [2]uint64{last, last} {
		t.Fatalf("progress calls end with %v, want [%d %d]", calls[len(calls)-1:], last, last)
	}
	if _, err := os.Stat(live.Path() + ".rebuild"); !os.IsNotExist(err) {
		t.Fatalf("the rebuild file is still there: %v", err)
	}
	checkSameAs(t, live, reference, rs)

	// The live DB keeps projecting into the swapped-in file.
	writeJournals(t, s, rs, 100, 10)
	catchUp(t, live, s)
	checkAgainstReplay(t, live, s, rs, 50)

	// After closing, the file at the live path is the rebuilt one.
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openDB(t, projections.Config{Path: live.Path()})
	if cp, _ := reopened.Checkpoint(); cp != lastOffset(t, s) {
		t.Fatalf("reopened checkpoint %d, want %d", cp, lastOffset(t, s))
	}
	checkAgainstReplay(t, reopened, s, rs, 50)
}

// A projector keeps running on the live DB while records are appended and
// the DB is rebuilt under it: nothing is lost or applied twice.
func TestRebuildWhileProjecting(t *testing.T) {
	s, rs := writtenLog(t, 6, 80)
	live := openDB(t, projections.Config{Path: dbPath(t, "live.db"), BatchSize: 20})
	stopProject := runProject(t, live, s)
	waitCheckpoint(t, live, lastOffset(t, s))
	stopReaders := readers(t, live, rs, 2)

	appended := make(chan struct{})
	go func() {
		defer close(appended)
		if err := appendJournals(s, rs, 80, 60); err != nil {
			t.Error(err)
		}
	}()
	for range 2 {
		if err := projections.Rebuild(context.Background(), s, live, nil); err != nil {
			t.Fatalf("Rebuild: %v", err)
		}
	}
	<-appended
	waitCheckpoint(t, live, lastOffset(t, s))
	stopProject()
	stopReaders()
	checkAgainstReplay(t, live, s, rs, 100)
}

func TestRebuildRefusesASecondOne(t *testing.T) {
	s, rs := writtenLog(t, 3, 30)
	live := openDB(t, projections.Config{Path: dbPath(t, "live.db"), BatchSize: 10})
	started, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- projections.Rebuild(context.Background(), s, live, func(uint64, uint64) {
			once.Do(func() {
				close(started)
				<-proceed
			})
		})
	}()
	<-started
	err := projections.Rebuild(context.Background(), s, live, nil)
	close(proceed)
	if !errors.Is(err, projections.ErrRebuilding) {
		t.Fatalf("second Rebuild: got %v, want ErrRebuilding", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first Rebuild: %v", err)
	}
	checkAgainstReplay(t, live, s, rs, 100)
}

func TestRebuildCancelledLeavesLiveAlone(t *testing.T) {
	s, rs := writtenLog(t, 3, 100)
	live := openDB(t, projections.Config{Path: dbPath(t, "live.db"), BatchSize: 10})
	catchUp(t, live, s)
	ctx, cancel := context.WithCancel(context.Background())
	err := projections.Rebuild(ctx, s, live, func(done, total uint64) {
		if done > 0 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Rebuild: got %v, want context.Canceled", err)
	}
	if _, err := os.Stat(live.Path() + ".rebuild"); !os.IsNotExist(err) {
		t.Fatalf("the partial rebuild file is still there: %v", err)
	}
	checkAgainstReplay(t, live, s, rs, 100)
}

// TestRebuildReportsProgressWithinACommit: a log shorter than one commit
// (the default BatchSize) is applied in several read batches, and the
// progress follows them instead of going from nothing to all at the end.
func TestRebuildReportsProgressWithinACommit(t *testing.T) {
	s, _ := writtenLog(t, 6, 500)
	live := openDB(t, projections.Config{Path: dbPath(t, "live.db")})
	catchUp(t, live, s)
	last := lastOffset(t, s)
	if last >= projections.DefaultBatchSize {
		t.Fatalf("the log has %d records, want fewer than one commit's %d", last, projections.DefaultBatchSize)
	}
	var calls [][2]uint64
	err := projections.Rebuild(context.Background(), s, live, func(done, total uint64) {
		calls = append(calls, [2]uint64{done, total})
	})
	if err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	var between int
	for i, c := range calls {
		if c[1] != last || c[0] > last || i > 0 && c[0] < calls[i-1][0] {
			t.Fatalf("progress calls %v: want done rising to the total %d", calls, last)
		}
		if c[0] > 0 && c[0] < last {
			between++
		}
	}
	if between == 0 || calls[len(calls)-1] != [2]uint64{last, last} {
		t.Fatalf("progress calls %v, want some between 0 and %d and the last at [%d %d]", calls, last, last, last)
	}
}
