//go:build linux

package projections_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fixtures/powerfs"
	"github.com/agentjournal/agentjournal/projections"
)

var (
	powerLossTrials = flag.Int("powerloss.trials", 1, "power cuts in TestPowerLossRebuildsTheProjection")
	powerLossSeed   = flag.Uint64("powerloss.seed", 0, "seed of the cut points; 0 takes one from the clock")
)

const (
	powerLossChildEnv = "AGENTJOURNAL_TEST_POWERLOSS_CHILD"
	bootIDPath        = "/proc/sys/kernel/random/boot_id"
	powerLossJournals = 6
)

// TestPowerLossRebuildsTheProjection projects a log into a file while
// records are appended, both on a file system that loses every write not yet
// fsynced, and cuts the power once the projection has committed. The file
// on the disk afterwards carries the mark of the boot that wrote it, and a
// checkpoint no later than the one reached before the cut: its unsynced
// commits are gone. A process that sees another boot id, as the system
// would after restarting, moves the file aside and rebuilds it from the log,
// and the rebuilt file equals a replay of every journal.
func TestPowerLossRebuildsTheProjection(t *testing.T) {
	boot := thisBoot(t)
	seed := *powerLossSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-powerloss.seed=%d repeats the cut points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	root := t.TempDir()
	backing, mnt := filepath.Join(root, "disk"), filepath.Join(root, "mnt")
	for _, dir := range []string{backing, mnt} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := powerfs.Config{Backing: backing, Mountpoint: mnt, Entries: powerfs.EntriesWithAnySync}
	path := filepath.Join(mnt, "projections", "p.db")
	rs := refs(powerLossJournals)
	for trial := range *powerLossTrials {
		reached := projectUntilTheCut(t, cfg, path, rs, trial, rng)

		fsys := mountProcess(t, cfg)
		mark, onDisk := markAndCheckpoint(t, path)
		if mark != boot {
			t.Errorf("trial %d: the file on the disk is marked %q, want this boot %q: without the mark a restarted system would trust a file that lost commits", trial, mark, boot)
		}
		if onDisk > reached {
			t.Errorf("trial %d: the file on the disk has checkpoint %d, beyond the %d reached before the cut", trial, onDisk, reached)
		}
		t.Logf("trial %d: checkpoint %d before the cut, %d in the file on the disk", trial, reached, onDisk)

		// Another boot: a child process in a mount namespace of its own
		// reads a different boot id.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPowerLossChild$", "-test.v")
		cmd.Env = append(os.Environ(), powerLossChildEnv+"="+mnt+"|"+path+"|"+strconv.Itoa(len(rs)))
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		cancel()
		i := strings.Index(string(out), "rebuilt from the log")
		if err != nil || i < 0 {
			t.Fatalf("trial %d: the process after the restart: %v\n%s", trial, err, out)
		}
		line, _, _ := strings.Cut(string(out[i:]), "\n")
		t.Logf("trial %d: after the restart, in another boot: %s", trial, line)
		if err := fsys.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// projectUntilTheCut appends to rs and projects the log into path until a
// seeded random moment after the projection's first commits, cuts the
// power, and returns the checkpoint the projection had reached.
func projectUntilTheCut(t *testing.T, cfg powerfs.Config, path string, rs []eventstore.Reference, trial int, rng *rand.Rand) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	fsys := mountProcess(t, cfg)
	bcfg := bus.DefaultConfig()
	bcfg.DataDir = cfg.Mountpoint
	b, err := bus.Open(ctx, bcfg)
	if err != nil {
		fsys.Close()
		t.Fatal(err)
	}
	s := fixtures.OpenStore(t, b)
	db, _, err := projections.OpenOrRebuild(ctx, projections.Config{Path: path}, s, nil)
	if err != nil {
		b.Close()
		fsys.Close()
		t.Fatal(err)
	}

	running, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { db.Project(running, s) })
	for _, ref := range rs {
		wg.Go(func() {
			// Each trial goes on where the last left the journal.
			next := 0
			if head, err := s.Head(running, ref); err == nil && head.LastSequence > 0 {
				next = int(head.LastSequence) - 1 // the header is not one of record's
			} else if _, err := s.EnsureJournal(running, ref, storetest.Header("agent-"+ref.OwnerID)); err != nil {
				return
			}
			for ; ; next++ {
				if _, err := s.Append(running, ref, record(ref, next)); err != nil {
					return // the power is gone
				}
			}
		})
	}
	first, err := db.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cp, err := db.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if cp >= first+200 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trial %d: the projection did not move 200 records past %d before %v", trial, first, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
	reached, err := db.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.LosePower(); err != nil {
		t.Fatal(err)
	}
	stop()
	wg.Wait()
	closeAfterTheCut(t, "the projection", db.Close)
	closeAfterTheCut(t, "the bus", b.Close)
	closeAfterTheCut(t, "the file system", fsys.Close)
	return reached
}

// mountProcess mounts cfg from another process: bbolt maps the projection
// file into memory (see powerfs.Process).
func mountProcess(t *testing.T, cfg powerfs.Config) *powerfs.Process {
	t.Helper()
	p, err := powerfs.MountProcess(cfg)
	if err != nil {
		t.Fatalf("%v; the power-loss test needs FUSE: /dev/fuse and root", err)
	}
	return p
}

// closeAfterTheCut closes what lost its power; its errors are expected, but
// it must end.
func closeAfterTheCut(t *testing.T, what string, closeFn func() error) {
	t.Helper()
	done := make(chan struct{})
	go func() { closeFn(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not close within 30s of the power loss", what)
	}
}

// markAndCheckpoint reads the unsynced mark and the checkpoint of the file
// at path.
func markAndCheckpoint(t *testing.T, path string) (string, uint64) {
	t.Helper()
	mark, _ := readMark(t, path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open %s after the power loss: %v", path, err)
	}
	defer db.Close()
	var cp uint64
	err = db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte("meta")).Get([]byte("checkpoint"))
		if len(v) != 8 {
			return fmt.Errorf("checkpoint %x is not 8 bytes", v)
		}
		for _, c := range v {
			cp = cp<<8 | uint64(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mark, cp
}

// TestPowerLossChild is the side of TestPowerLossRebuildsTheProjection after
// the restart, in a mount namespace of its own: it shows the process another
// boot id, opens the log and the projection file, and checks the file is
// rebuilt and equals a replay.
func TestPowerLossChild(t *testing.T) {
	spec := os.Getenv(powerLossChildEnv)
	if spec == "" {
		return // run only as a child process
	}
	parts := strings.Split(spec, "|")
	mnt, path := parts[0], parts[1]
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(fake, []byte("00000000-0000-4000-8000-00000000b007\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(fake, bootIDPath, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("show another boot id: bind %s on %s: %v", fake, bootIDPath, err)
	}
	if got := thisBoot(t); got != "00000000-0000-4000-8000-00000000b007" {
		t.Fatalf("the boot id reads %q after the bind mount", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := bus.DefaultConfig()
	cfg.DataDir = mnt
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open the log after the power loss: %v", err)
	}
	defer b.Close()
	s := fixtures.OpenStore(t, b)
	if _, err := projections.Open(projections.Config{Path: path}); !errors.Is(err, projections.ErrCorrupt) {
		t.Fatalf("Open of the file after the restart: %v, want ErrCorrupt", err)
	}
	db, rebuilt, err := projections.OpenOrRebuild(ctx, projections.Config{Path: path}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !rebuilt {
		t.Fatal("OpenOrRebuild trusted a file written without syncing before the system restarted")
	}
	catchUp(t, db, s)
	checkAgainstReplay(t, db, s, refs(n), 100)
	aside, _ := filepath.Glob(path + ".corrupt-*")
	t.Logf("rebuilt from the log up to offset %d; %d files moved aside", lastOffset(t, s), len(aside))
}
