package bus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// groupSync makes acknowledged writes to the embedded server's stream
// durable, sharing one fsync among every write acknowledged while the one
// before it ran: a group commit.
//
// With --sync always the server would fsync each message on its own, inside
// the stream's single write path, so concurrent writers queue behind each
// other's fsyncs. Instead the server runs with interval syncing, which still
// writes each message into its block file before acknowledging it (the
// store flushes in place), and the publish waits for a sync round that
// started after its acknowledgement. A round fsyncs the block being
// written, and the one after it whenever the server has rolled over
// (syncing the directory first, for the new file's entry), so everything
// acknowledged before the round began is on disk when it ends.
//
// Durability stays prefix-closed, as with the server's own fsyncs: a round
// syncs whole files, so a record on disk has every record before it on
// disk. A reader may see a record before its round ends; anything it does
// in answer that must last is an append of its own, durable only once
// everything before it is.
type groupSync struct {
	dir string // the stream's msgs directory

	mu      sync.Mutex
	started uint64 // rounds begun
	done    uint64 // rounds ended
	running chan struct{}
	// err is the first failed sync: after a failed fsync the kernel may
	// have dropped the dirty pages and a later fsync succeed without them,
	// so no write is ever called durable again.
	err error
	// waiting counts the callers waiting on a running round, those the
	// next round will serve at once.
	waiting int
	// block is the newest block file synced; entered is the newest whose
	// directory entry is durable.
	block, entered uint64
	// sync is durable.SyncFile; tests hold rounds back through it.
	sync func(path string) error
}

// newGroupSync starts after the stream's directories are synced, so every
// block file that exists now has a durable entry.
func newGroupSync(msgsDir string) (*groupSync, error) {
	newest, err := newestBlock(msgsDir)
	if err != nil {
		return nil, err
	}
	// A block is synced by name, with a new descriptor each round: the
	// server may replace a block file by renaming another over it.
	return &groupSync{dir: msgsDir, block: newest, entered: newest, sync: durable.SyncFile}, nil
}

// wait returns once every write the server acknowledged before the call is
// on disk.
func (g *groupSync) wait(ctx context.Context) error {
	g.mu.Lock()
	// A round already running may have begun before the write was
	// acknowledged: only the next one is sure to cover it.
	target := g.started + 1
	for {
		switch {
		case g.err != nil:
			err := g.err
			g.mu.Unlock()
			return err
		case g.done >= target:
			g.mu.Unlock()
			return nil
		case g.running == nil:
			// Lead a round. Its fsyncs are not cancelled with ctx: the
			// writes of everyone waiting on it depend on them.
			g.started++
			round := make(chan struct{})
			g.running = round
			g.mu.Unlock()
			err := g.round()
			g.mu.Lock()
			g.done = g.started
			g.running = nil
			if err != nil && g.err == nil {
				g.err = fmt.Errorf("make acknowledged writes durable: %w (the log's writes can no longer be called durable; restart the daemon)", err)
			}
			close(round)
		default:
			round := g.running
			g.waiting++
			g.mu.Unlock()
			var err error
			select {
			case <-round:
			case <-ctx.Done():
				err = fmt.Errorf("wait for the write to reach the disk: %w", ctx.Err())
			}
			g.mu.Lock()
			g.waiting--
			if err != nil {
				g.mu.Unlock()
				return err
			}
		}
	}
}

// round syncs the block being written and any the server has rolled over to
// since the last round. Only g's leader calls it, so the block fields need
// no lock.
func (g *groupSync) round() error {
	for {
		err := g.sync(g.blockPath(g.block))
		if errors.Is(err, os.ErrNotExist) {
			// The block was removed (a purge, or compaction), or this is
			// the first round: find the newest. A write was acknowledged,
			// so there is one, and the server numbers a new block above
			// the old; anything else means the files are not where they
			// were (a lost disk, an unmounted file system), and nothing
			// can be called durable.
			newest, rerr := newestBlock(g.dir)
			if rerr != nil {
				return rerr
			}
			if newest <= g.block {
				return fmt.Errorf("block %d of the stream is gone from %s and no newer block is there: %w", g.block, g.dir, err)
			}
			if err := g.enter(newest); err != nil {
				return err
			}
			g.block = newest
			continue
		}
		if err != nil {
			return err
		}
		// Blocks are numbered one after the other: a write acknowledged
		// before this round began went to this block or a later one that
		// existed by then.
		next := g.block + 1
		if _, err := os.Stat(g.blockPath(next)); errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		if err := g.enter(next); err != nil {
			return err
		}
		g.block = next
	}
}

// enter makes block n's directory entry durable.
func (g *groupSync) enter(n uint64) error {
	if n <= g.entered {
		return nil
	}
	if err := durable.SyncDir(g.dir); err != nil {
		return err
	}
	g.entered = n
	return nil
}

func (g *groupSync) blockPath(n uint64) string {
	return filepath.Join(g.dir, strconv.FormatUint(n, 10)+".blk")
}

// newestBlock is the highest block number in dir, 0 when it has none (or
// does not exist yet: the server creates it with the first block).
func newestBlock(dir string) (uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("list the stream's blocks: %w", err)
	}
	var newest uint64
	for _, e := range entries {
		n, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".blk"), 10, 64)
		if err == nil && strings.HasSuffix(e.Name(), ".blk") && n > newest {
			newest = n
		}
	}
	return newest, nil
}

// durableJetStream is the JetStream API whose publishes return only once
// their message is on disk.
type durableJetStream struct {
	jetstream.JetStream
	sync *groupSync
}

func (d durableJetStream) Publish(ctx context.Context, subj string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := d.JetStream.Publish(ctx, subj, data, opts...)
	if err != nil {
		return ack, err
	}
	return ack, d.sync.wait(ctx)
}

func (d durableJetStream) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := d.JetStream.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return ack, err
	}
	return ack, d.sync.wait(ctx)
}

// Unsynced is the JetStream API whose publishes return at the server's
// acknowledgement, for a caller that publishes several messages and then
// calls WaitDurable once.
func (d durableJetStream) Unsynced() jetstream.JetStream { return d.JetStream }

// WaitDurable returns once every message the server acknowledged before
// the call is on disk.
func (d durableJetStream) WaitDurable(ctx context.Context) error { return d.sync.wait(ctx) }
