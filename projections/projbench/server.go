package projbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
)

// activeJournals is how many journals the log's writer appends to at once:
// as many agents running at the same time on one daemon. Each writes its
// journal from header to completion and then starts the next.
const activeJournals = 64

// server is an embedded server on a scratch directory with a store on it.
type server struct {
	dir   string
	bus   *bus.Bus
	store *eventstore.JetStreamStore
}

// startServer starts a server in dir, creating it when missing. The server
// syncs on an interval: the log's durability is not what is measured, and
// it makes writing the log quicker.
func startServer(ctx context.Context, dir string) (*server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start server in %s: %w", dir, err)
	}
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	cfg.Sync = bus.SyncInterval
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start server in %s: %w", dir, err)
	}
	st, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{
		Stream:        b.StreamName(),
		SubjectPrefix: bus.SubjectPrefix,
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start server in %s: %w", dir, err), b.Close())
	}
	return &server{dir: dir, bus: b, store: st}, nil
}

// Close closes the store and the server and removes the directory.
func (s *server) Close() error {
	if s.bus == nil {
		return os.RemoveAll(s.dir)
	}
	return errors.Join(s.store.Close(), s.bus.Close(), os.RemoveAll(s.dir))
}

// restart stops the server and starts it again on the same directory, as a
// daemon restarts: what the server kept in memory from writing the log is
// gone, and it reads the log back from its files.
func (s *server) restart(ctx context.Context) error {
	err := errors.Join(s.store.Close(), s.bus.Close())
	s.bus, s.store = nil, nil
	if err != nil {
		return fmt.Errorf("restart server in %s: %w", s.dir, err)
	}
	fresh, err := startServer(ctx, s.dir)
	if err != nil {
		return err
	}
	s.bus, s.store = fresh.bus, fresh.store
	return nil
}

// writeLog writes journals of group holding records records in all, from
// activeJournals goroutines (fewer when there are fewer journals), each
// writing whole journals one after another. It returns the references.
func writeLog(ctx context.Context, st *eventstore.JetStreamStore, group string, records, journals int) ([]eventstore.Reference, error) {
	refs := make([]eventstore.Reference, journals)
	for i := range refs {
		ref, err := reference(group, i)
		if err != nil {
			return nil, err
		}
		refs[i] = ref
	}
	writers := min(activeJournals, journals)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for j := w; j < journals && ctx.Err() == nil; j += writers {
				n := records / journals
				if j < records%journals {
					n++
				}
				if err := writeJournal(ctx, st, refs[j], n); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("write %d journals: %w", journals, err)
	}
	return refs, nil
}

// writeJournal writes one generated journal of n records.
func writeJournal(ctx context.Context, st *eventstore.JetStreamStore, ref eventstore.Reference, n int) error {
	g := newGenerator(ref, n)
	if _, err := st.EnsureJournal(ctx, ref, g.header()); err != nil {
		return fmt.Errorf("ensure %s: %w", ref, err)
	}
	for !g.done() {
		r := g.next()
		if _, err := st.Append(ctx, ref, r); err != nil {
			return fmt.Errorf("append %s to %s: %w", r.Kind(), ref, err)
		}
	}
	return nil
}

// forgetDuplicates empties the server's table of recent record ids, which
// it keeps for the stream's duplicate window to turn a retried append into
// a no-op, and rebuilds from the log when it starts. The benchmark writes
// its log in seconds, so the table would hold the id of every record in it;
// the log of a real daemon grows over days and the table holds the last few
// minutes of it. A million-entry table in the same process makes every
// garbage collection of the measured reader scan it, which halved the
// catch-up's throughput. The window itself is left as it was.
func forgetDuplicates(ctx context.Context, b *bus.Bus) error {
	info, err := b.Stream().Info(ctx)
	if err != nil {
		return fmt.Errorf("forget duplicates: %w", err)
	}
	cfg := info.Config
	window := cfg.Duplicates
	cfg.Duplicates = minDuplicateWindow
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("forget duplicates: %w", err)
	}
	// The server purges the table when the window changes, keeping the
	// ids younger than the new window.
	time.Sleep(2 * minDuplicateWindow)
	cfg.Duplicates = window
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("forget duplicates: %w", err)
	}
	return nil
}

// minDuplicateWindow is the shortest duplicate window the server accepts.
const minDuplicateWindow = 100 * time.Millisecond
