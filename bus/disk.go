package bus

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const (
	// DefaultDiskReserve is the free space the log leaves on the disk that
	// holds it, or a tenth of that disk when it is smaller: writes are
	// refused once no more is free. It leaves room for what grows beside
	// the log (the read models, the stream's index and consumer state), so
	// that none of it meets a full disk first.
	DefaultDiskReserve = 64 << 20

	// DefaultDiskCheckInterval is how often the free space is measured.
	DefaultDiskCheckInterval = 250 * time.Millisecond

	// unlimitedStore is the embedded server's own storage limit: none to
	// speak of. nats-server would otherwise fix it at 75% of the space free
	// at start and refuse writes there for good, however much is freed.
	unlimitedStore = 1 << 60

	// restartGap spaces out JetStream restarts, should a disk keep filling.
	restartGap = 5 * time.Second

	// fullMargin is how far past the reserve a write may reach while the
	// disk is not full: a record of the default largest size (1 MiB) fits,
	// so a write is refused only once the disk is reported full.
	fullMargin = 1 << 20

	// healthEvery is how many checks go by between looks for a stream
	// write error while the disk has never been seen full.
	healthEvery = 20
)

// DiskSpace is what the bus last measured of the disk that holds its data
// directory.
type DiskSpace struct {
	// Dir is the data directory.
	Dir string
	// Free is the space left on the disk for unprivileged writers, in bytes.
	Free uint64
	// Reserve is the space the log leaves free (Config.DiskReserve).
	Reserve uint64
	// Full reports that the log refuses writes: Free is at most Reserve.
	// While it is not, a record of up to 1 MiB is taken.
	Full bool
}

// DiskSpace returns the last measurement of the disk under the data
// directory, and false when there is none: connected to an external NATS,
// a node of a cluster, or on a system where free space cannot be measured.
func (b *Bus) DiskSpace() (DiskSpace, bool) {
	if b.guard == nil {
		return DiskSpace{}, false
	}
	d := b.guard.last.Load()
	if d == nil {
		return DiskSpace{}, false
	}
	return *d, true
}

// diskGuard keeps the log from filling its disk. Every interval it measures
// the free space and sets the account's JetStream storage limit to what the
// stream holds plus the free space above the reserve (and fullMargin), or,
// once no more than the reserve is free, to what it holds: the server then
// refuses writes (JSAccountResourcesExceededErr) before any meets a full
// disk, and takes them again once space is freed. The limit follows the
// disk, where the server's own is fixed at start.
//
// A write can still meet a full disk: another process may fill it between
// two checks. nats-server then keeps the stream's write error and refuses
// every later write, without answering, until the stream is loaded again;
// the guard restarts JetStream once there is space again.
type diskGuard struct {
	srv      *server.Server
	opts     *server.Options // the server's, for restarting JetStream
	dataDir  string
	stream   string
	reserve  int64 // Config.DiskReserve; 0 means the default for the disk's size
	interval time.Duration
	log      *slog.Logger
	// stat measures the disk: statDisk, or a test's stand-in.
	stat atomic.Pointer[statFunc]

	last atomic.Pointer[DiskSpace]

	// Owned by the goroutine that runs check.
	applied     int64 // the limit last set; -1 for none
	sawFull     bool  // full since the last look for a write error
	checks      int
	statFailed  bool
	lastRestart time.Time

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newDiskGuard(srv *server.Server, opts *server.Options, cfg Config) *diskGuard {
	g := &diskGuard{
		srv: srv, opts: opts, dataDir: cfg.DataDir, stream: cfg.StreamName,
		reserve: cfg.DiskReserve, interval: cfg.DiskCheckInterval,
		log:     cfg.Logger.With(logKeyComponent, "disk"),
		applied: -1,
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	stat := statDisk
	g.stat.Store(&stat)
	return g
}

// statFunc returns the bytes free for unprivileged writers and the size of
// the file system holding dir.
type statFunc func(dir string) (free, size uint64, err error)

// start checks once, so the limit is in place when Open returns, and then
// keeps checking until close.
func (g *diskGuard) start() {
	g.check()
	go func() {
		defer close(g.done)
		t := time.NewTicker(g.interval)
		defer t.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-t.C:
				g.check()
			}
		}
	}()
}

// close stops the checks and waits for the one in progress.
func (g *diskGuard) close() {
	g.stopOnce.Do(func() { close(g.stop) })
	<-g.done
}

// check measures the disk, moves the limit and restarts a stream that met a
// full disk.
func (g *diskGuard) check() {
	free, size, err := (*g.stat.Load())(g.opts.StoreDir)
	if err != nil {
		if !g.statFailed {
			g.log.Warn("cannot measure the free space of the data directory's disk", logKeyDir, g.dataDir, logKeyErr, err)
			g.statFailed = true
		}
		return
	}
	g.statFailed = false
	reserve := g.reserveFor(size)
	d := DiskSpace{Dir: g.dataDir, Free: free, Reserve: reserve, Full: free <= reserve}
	// Before d is published: whoever sees space freed may write at once.
	g.setLimit(d)
	if prev := g.last.Swap(&d); prev == nil || prev.Full != d.Full {
		switch {
		case d.Full:
			g.log.Error("the disk holding the data directory is full: the log refuses writes until space is freed",
				logKeyDir, g.dataDir, logKeyFree, free, logKeyReserve, reserve)
		case prev != nil:
			g.log.Info("space was freed on the disk holding the data directory: the log takes writes again",
				logKeyDir, g.dataDir, logKeyFree, free, logKeyReserve, reserve)
		}
	}
	g.sawFull = g.sawFull || d.Full
	g.checks++
	if !d.Full && (g.sawFull || g.checks%healthEvery == 0) {
		g.sawFull = false
		g.restartIfStuck()
	}
}

// reserveFor is the reserve on a disk of the given size.
func (g *diskGuard) reserveFor(size uint64) uint64 {
	if g.reserve > 0 {
		return uint64(g.reserve)
	}
	return min(DefaultDiskReserve, size/10)
}

// setLimit sets the account's storage limit to what it holds plus the free
// space above the reserve and fullMargin, or to what it holds when the disk
// is full: the server refuses a write past it.
func (g *diskGuard) setLimit(d DiskSpace) {
	acc := g.srv.GlobalAccount()
	if acc == nil || !g.srv.JetStreamEnabled() {
		g.applied = -1
		return
	}
	var above int64
	if !d.Full {
		above = int64(min(d.Free-d.Reserve+fullMargin, unlimitedStore))
	}
	limit := int64(acc.JetStreamUsage().Store) + above
	if limit == g.applied {
		return
	}
	err := acc.UpdateJetStreamLimits(map[string]server.JetStreamAccountLimits{"": {
		MaxMemory: -1, MaxStore: limit, MaxStreams: -1, MaxConsumers: -1,
		MaxAckPending: -1, MemoryMaxStreamBytes: -1, StoreMaxStreamBytes: -1,
	}})
	if err != nil {
		// JetStream is restarting, or going away with the server.
		g.applied = -1
		g.log.Debug("set the log's storage limit", logKeyErr, err)
		return
	}
	g.applied = limit
}

// restartIfStuck restarts JetStream when the stream keeps a write error from
// a full disk: nats-server refuses every write after one, without an answer,
// until the stream is loaded again. Records stored before are untouched;
// readers following the log resume by themselves.
func (g *diskGuard) restartIfStuck() {
	werr := g.streamWriteError()
	if werr == "" || time.Since(g.lastRestart) < restartGap {
		return
	}
	g.lastRestart = time.Now()
	g.log.Warn("the log met a full disk and refuses writes since: restarting JetStream now that space is free", logKeyErr, werr)
	if err := g.srv.ShutdownJetStream(); err != nil {
		g.log.Error("restart JetStream: shut down", logKeyErr, err)
		return
	}
	g.applied = -1
	o := g.opts
	err := g.srv.EnableJetStream(&server.JetStreamConfig{
		StoreDir: o.StoreDir, SyncInterval: o.SyncInterval, SyncAlways: o.SyncAlways,
		Strict: !o.NoJetStreamStrict, MaxMemory: o.JetStreamMaxMemory, MaxStore: o.JetStreamMaxStore,
		Domain: o.JetStreamDomain, CompressOK: true, UniqueTag: o.JetStreamUniqueTag,
	})
	if err != nil {
		g.log.Error("restart JetStream: the log takes no writes until the daemon is restarted", logKeyErr, err)
		return
	}
	if d := g.last.Load(); d != nil {
		g.setLimit(*d)
	}
	g.log.Info("JetStream restarted: the log takes writes again")
}

// streamWriteError returns the stream's write error from a full disk, or "".
func (g *diskGuard) streamWriteError() string {
	h := g.srv.Healthz(&server.HealthzOptions{Account: server.DEFAULT_GLOBAL_ACCOUNT, Stream: g.stream, Details: true})
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && outOfSpace(e.Error) {
			return e.Error
		}
	}
	return ""
}

// outOfSpace reports an error text of a full disk or an exhausted quota; the
// server hands its write errors on as text.
func outOfSpace(msg string) bool {
	return strings.Contains(msg, "no space left") || strings.Contains(msg, "quota exceeded")
}

var errNoStatfs = errors.New("free space cannot be measured on this system")

// Log attribute keys of the guard.
const (
	logKeyFree    = "free"
	logKeyReserve = "reserve"
)
