package bus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// recordingSync is a groupSync's sync that records the files it synced and
// can hold the next round back.
type recordingSync struct {
	mu     sync.Mutex
	synced []string
	hold   chan struct{} // when set, the next sync waits for it to close
	held   chan struct{} // closed when a sync is being held
	err    error
}

func (r *recordingSync) sync(path string) error {
	r.mu.Lock()
	hold, held := r.hold, r.held
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	if err := durable.SyncFile(path); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.synced = append(r.synced, filepath.Base(path))
	return r.err
}

func (r *recordingSync) files() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.synced...)
}

func newTestGroupSync(t *testing.T, blocks ...string) (*groupSync, *recordingSync) {
	t.Helper()
	dir := t.TempDir()
	for _, b := range blocks {
		writeBlock(t, dir, b)
	}
	g, err := newGroupSync(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingSync{}
	g.sync = rec.sync
	return g, rec
}

func writeBlock(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("records"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitForWaiting returns once n callers wait on g's running round.
func waitForWaiting(ctx context.Context, t *testing.T, g *groupSync, n int) {
	t.Helper()
	for {
		g.mu.Lock()
		got := g.waiting
		g.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d callers waiting on the running round", got, n)
		case <-time.After(time.Millisecond):
		}
	}
}

// holdFirstRound starts a wait whose round is held in its sync; release
// lets the round go on, and first gets the wait's result.
func holdFirstRound(ctx context.Context, g *groupSync, rec *recordingSync) (release func(), first <-chan error) {
	rec.hold, rec.held = make(chan struct{}), make(chan struct{})
	hold, held := rec.hold, rec.held
	done := make(chan error, 1)
	go func() { done <- g.wait(ctx) }()
	<-held
	return func() { close(hold) }, done
}

// Writes acknowledged while a round runs are all made durable by the one
// round after it: the fsync is shared.
func TestGroupSyncSharesARound(t *testing.T) {
	g, rec := newTestGroupSync(t, "1.blk")
	ctx := waitCtx(t)
	release, first := holdFirstRound(ctx, g, rec)

	const writers = 16
	errs := make(chan error, writers)
	for range writers {
		go func() { errs <- g.wait(ctx) }()
	}
	waitForWaiting(ctx, t, g, writers)
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The held round, then one round for all sixteen.
	if diff := cmp.Diff([]string{"1.blk", "1.blk"}, rec.files()); diff != "" {
		t.Errorf("files synced (-want +got):\n%s", diff)
	}
}

// A write that arrives while a round runs is not served by that round,
// which may have begun before the write was acknowledged.
func TestGroupSyncWaitsForTheNextRound(t *testing.T) {
	g, rec := newTestGroupSync(t, "1.blk")
	ctx := waitCtx(t)
	release, first := holdFirstRound(ctx, g, rec)

	late := make(chan error, 1)
	go func() { late <- g.wait(ctx) }()
	waitForWaiting(ctx, t, g, 1)
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done != 2 {
		t.Errorf("rounds done = %d, want 2: the late write needs a round of its own", g.done)
	}
}

// When the server rolls over to a new block, a round syncs the old block,
// the directory (for the new entry) and the new block.
func TestGroupSyncFollowsRollover(t *testing.T) {
	g, rec := newTestGroupSync(t, "1.blk", "2.blk")
	ctx := waitCtx(t)
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	writeBlock(t, g.dir, "3.blk")
	writeBlock(t, g.dir, "4.blk")
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"2.blk", "2.blk", "3.blk", "4.blk"}, rec.files()); diff != "" {
		t.Errorf("files synced (-want +got):\n%s", diff)
	}
	if g.block != 4 || g.entered != 4 {
		t.Errorf("block %d, entered %d, want 4 and 4", g.block, g.entered)
	}
}

// A store with no block yet gets its first, and a removed block is replaced
// by the newest there is.
func TestGroupSyncFindsBlocks(t *testing.T) {
	g, rec := newTestGroupSync(t)
	ctx := waitCtx(t)
	writeBlock(t, g.dir, "1.blk")
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(g.dir, "1.blk")); err != nil {
		t.Fatal(err)
	}
	writeBlock(t, g.dir, "7.blk")
	if err := g.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1.blk", "7.blk"}, rec.files()); diff != "" {
		t.Errorf("files synced (-want +got):\n%s", diff)
	}
}

// A block that is gone with no newer one in its place (the file system
// unmounted under the server, a lost disk) fails the round: nothing
// acknowledged can be called durable.
func TestGroupSyncMissingBlockFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(dir string) error
	}{
		{name: "block removed", remove: func(dir string) error { return os.Remove(filepath.Join(dir, "1.blk")) }},
		{name: "directory gone", remove: os.RemoveAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := newTestGroupSync(t, "1.blk")
			ctx := waitCtx(t)
			if err := g.wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tc.remove(g.dir); err != nil {
				t.Fatal(err)
			}
			if err := g.wait(ctx); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("wait with the block gone = %v, want an error wrapping os.ErrNotExist", err)
			}
		})
	}
}

// After a failed fsync no write is called durable again, even if a later
// fsync would succeed.
func TestGroupSyncFailureSticks(t *testing.T) {
	g, rec := newTestGroupSync(t, "1.blk")
	ctx := waitCtx(t)
	eio := errors.New("input/output error")
	rec.err = eio
	if err := g.wait(ctx); !errors.Is(err, eio) {
		t.Fatalf("wait = %v, want the sync's error", err)
	}
	rec.err = nil
	if err := g.wait(ctx); !errors.Is(err, eio) {
		t.Fatalf("wait after a failed sync = %v, want the first error again", err)
	}
}

// A caller that gives up waiting gets its context's error; the round goes
// on for the others.
func TestGroupSyncWaitCancelled(t *testing.T) {
	g, rec := newTestGroupSync(t, "1.blk")
	ctx := waitCtx(t)
	release, first := holdFirstRound(ctx, g, rec)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a cancelled context = %v, want context.Canceled", err)
	}
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// Group commit replaces the server's own fsyncs only where every publish
// goes through this process's JetStream API.
func TestGroupCommitOnlyWhereThisProcessWrites(t *testing.T) {
	for _, tc := range []struct {
		name             string
		edit             func(*Config)
		group, srvAlways bool
	}{
		{name: "default", edit: func(*Config) {}, group: true},
		{name: "sync interval", edit: func(c *Config) { c.Sync = SyncInterval }},
		{name: "nats listener", edit: func(c *Config) { c.Listen = "127.0.0.1:0" }, srvAlways: true},
		{name: "cluster", edit: func(c *Config) { c.Cluster = ClusterConfig{Name: "c", Listen: "127.0.0.1:0"} }, srvAlways: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			tc.edit(&cfg)
			if got := cfg.groupCommit(); got != tc.group {
				t.Errorf("groupCommit() = %t, want %t", got, tc.group)
			}
			opts, err := serverOptions(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if opts.SyncAlways != tc.srvAlways {
				t.Errorf("server SyncAlways = %t, want %t", opts.SyncAlways, tc.srvAlways)
			}
		})
	}
}

// On the default embedded node, the JetStream API waits for the disk.
func TestOpenWrapsJetStreamForGroupCommit(t *testing.T) {
	ctx := waitCtx(t)
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	b, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, ok := b.JetStream().(durableJetStream)
	if !ok {
		t.Fatalf("JetStream() is a %T, want the group-commit wrapper", b.JetStream())
	}
	if _, err := b.JetStream().Publish(ctx, SubjectPrefix+".x", []byte("r")); err != nil {
		t.Fatal(err)
	}
	d.sync.mu.Lock()
	defer d.sync.mu.Unlock()
	if d.sync.done == 0 || d.sync.block == 0 {
		t.Errorf("after a publish: %d rounds, newest block synced %d; want a round and a block", d.sync.done, d.sync.block)
	}
}
