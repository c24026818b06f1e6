package bus

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/internal/durable"
)

// drainTimeout bounds how long Close lets in-flight publishes and
// subscriptions finish before the connection is cut.
const drainTimeout = 5 * time.Second

// connName identifies agentjournal connections in server monitoring.
const connName = "agentjournal"

// Bus is an open NATS connection with the journal stream in place, and, when
// embedded, the server behind it.
type Bus struct {
	cfg       Config
	srv       *server.Server // nil when connected to an external NATS
	lock      *dirLock       // nil when connected to an external NATS
	guard     *diskGuard     // nil when connected to an external NATS or clustered
	nc        *nats.Conn
	ncClosed  chan struct{} // closed by the connection's ClosedHandler
	js        jetstream.JetStream
	stream    jetstream.Stream
	clientURL string

	closeOnce sync.Once
	closeErr  error
}

// Open starts an embedded server on cfg.DataDir, or connects to cfg.URL, and
// creates or updates the journal stream. It fails with a *LockedError when
// another server already uses the data directory.
func Open(ctx context.Context, cfg Config) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bus{cfg: cfg, ncClosed: make(chan struct{})}
	if err := b.open(ctx); err != nil {
		// Undo whatever was started; the open error is the one that matters.
		_ = b.shutdown()
		return nil, err
	}
	return b, nil
}

func (b *Bus) open(ctx context.Context) error {
	log := b.cfg.Logger
	opts := []nats.Option{
		nats.Name(connName),
		nats.DrainTimeout(drainTimeout),
		nats.ClosedHandler(func(*nats.Conn) { close(b.ncClosed) }),
	}
	if b.cfg.Secret != "" {
		opts = append(opts, nats.UserInfo(User, b.cfg.Secret))
	}

	// deadline bounds the retries of a stream setup that a cluster refuses
	// while it settles.
	deadline := time.Now().Add(readyTimeout)
	var srvOpts *server.Options // the embedded server's
	if b.cfg.URL != "" {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A daemon joined to a shared NATS rides out server restarts and
		// cluster failovers instead of giving up after the client's default
		// reconnect budget.
		opts = append(opts,
			nats.MaxReconnects(-1),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err != nil {
					log.Warn("nats disconnected", logKeyErr, err)
				}
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				log.Info("nats reconnected", logKeyURL, nc.ConnectedUrlRedacted())
			}),
		)
		nc, err := nats.Connect(b.cfg.URL, opts...)
		if errors.Is(err, nats.ErrAuthorization) {
			return fmt.Errorf("connect to nats %s: %w (give the secret of the agentjournal that serves it: its data directory's nats-secret file)", b.cfg.URL, err)
		}
		if err != nil {
			return fmt.Errorf("connect to nats %s: %w", b.cfg.URL, err)
		}
		b.nc = nc
		b.clientURL = b.cfg.URL
	} else {
		if err := os.MkdirAll(b.cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
		lock, err := lockDir(b.cfg.DataDir)
		if err != nil {
			return err
		}
		b.lock = lock

		if b.cfg.Listen != "" {
			if host, _, _ := splitListen(b.cfg.Listen); !loopbackHost(host) {
				log.Warn("nats listener is reachable from other hosts and its traffic is not encrypted", logKeyListen, b.cfg.Listen)
			}
		}
		if b.cfg.Cluster.enabled() {
			if host, _, _ := splitListen(b.cfg.Cluster.Listen); !loopbackHost(host) {
				log.Warn("nats cluster listener is reachable from other hosts and its traffic is not encrypted", logKeyListen, b.cfg.Cluster.Listen)
			}
			if b.cfg.ServerName == "" {
				name, err := loadOrCreateServerName(b.cfg.DataDir)
				if err != nil {
					return err
				}
				b.cfg.ServerName = name
			}
		}
		if b.cfg.Secret != "" {
			b.cfg.owner = rand.Text()
		}
		srv, sopts, err := startServer(ctx, b.cfg)
		if err != nil {
			return err
		}
		srvOpts = sopts
		b.srv = srv
		if b.cfg.Cluster.enabled() {
			deadline = time.Now().Add(clusterReadyTimeout)
			if err := waitCluster(ctx, srv, b.cfg, deadline); err != nil {
				return err
			}
		}
		if b.cfg.Listen != "" || b.cfg.Cluster.enabled() {
			b.clientURL = clientURL(srv)
		}

		if b.cfg.owner != "" {
			// The last UserInfo given wins: this process owns the server.
			opts = append(opts, nats.UserInfo(OwnerUser, b.cfg.owner))
		}
		nc, err := nats.Connect("", append(opts, nats.InProcessServer(srv))...)
		if err != nil {
			return fmt.Errorf("connect to embedded nats: %w", err)
		}
		b.nc = nc
	}

	js, err := jetstream.New(b.nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	b.js = js
	stream, err := b.ensureStream(ctx, deadline)
	if err != nil {
		return err
	}
	if b.Clustered() {
		if stream, err = b.waitStream(ctx, deadline); err != nil {
			return err
		}
	}
	b.stream = stream
	if srvOpts != nil {
		if err := syncStreamDirs(b.cfg.DataDir, srvOpts.StoreDir, b.cfg.StreamName); err != nil {
			return err
		}
	}
	if srvOpts != nil && b.cfg.groupCommit() {
		g, err := newGroupSync(filepath.Join(streamDir(srvOpts.StoreDir, b.cfg.StreamName), "msgs"))
		if err != nil {
			return err
		}
		b.js = durableJetStream{JetStream: b.js, sync: g}
	}
	if srvOpts != nil && !b.cfg.Cluster.enabled() && diskMeasured {
		// After the stream is set up: a disk already full must not stop
		// the daemon from starting and serving reads. Not on a cluster
		// node, where an account's limit is checked against the cluster's
		// usage rather than one node's disk, and nats-server's own limit
		// applies.
		b.guard = newDiskGuard(b.srv, srvOpts, b.cfg)
		b.guard.start()
	}

	attrs := []any{
		logKeyStream, b.cfg.StreamName,
		logKeyDir, b.dirForLog(),
		logKeyURL, b.clientURL,
		logKeySync, b.syncForLog(),
	}
	if b.Clustered() {
		attrs = append(attrs, logKeyCluster, b.cfg.Cluster.Name, logKeyServer, b.srv.Name())
	}
	log.Info("bus open", attrs...)
	return nil
}

func (b *Bus) dirForLog() string {
	if b.srv == nil {
		return ""
	}
	return b.cfg.DataDir
}

func (b *Bus) syncForLog() string {
	switch {
	case b.srv == nil:
		return "external"
	case b.cfg.Sync == SyncInterval:
		return string(SyncInterval) + " " + b.cfg.SyncInterval.String()
	default:
		return string(SyncAlways)
	}
}

// StreamConfig is the journal stream's configuration, a recorded decision:
// one file-backed stream for every journal, writes refused rather than old
// records dropped when a limit is hit, no deleting records and no purging, direct gets for
// cheap head reads, atomic batches for imports, a 10 minute duplicate window for idempotent appends, and
// no cap on consumers because every subscriber reads this one stream.
func StreamConfig(name string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        name,
		Subjects:    []string{SubjectPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		DenyPurge:   true,
		AllowDirect: true,
		// A journal imported from an export lands whole or not at all.
		AllowAtomicPublish: true,
		Duplicates:         DuplicateWindow,
		Replicas:           replicas,
		MaxConsumers:       -1,
	}
}

// Conn is the bus's connection. It stays owned by the Bus: callers must not
// close it.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream is the JetStream context on Conn.
//
// On an embedded node under SyncAlways that only this process writes to,
// Publish and PublishMsg return once their message is on disk, sharing the
// fsync with every publish acknowledged at the same time; PublishAsync's
// acknowledgements do not wait for the disk.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Stream is a handle to the journal stream.
func (b *Bus) Stream() jetstream.Stream { return b.stream }

// StreamName is the journal stream's name.
func (b *Bus) StreamName() string { return b.cfg.StreamName }

// ClientURL is the URL other processes can connect to: the embedded server's
// listener when Config.Listen or Config.Cluster is set, Config.URL when
// connected to an external NATS, and "" when the embedded server has no
// listener.
func (b *Bus) ClientURL() string { return b.clientURL }

// Reachable reports whether the connection to the log is up (nil), or why
// not: a connection to another process's NATS goes down with that server
// and reconnects by itself when it is back.
func (b *Bus) Reachable() error {
	if b.nc.IsConnected() {
		return nil
	}
	if b.srv != nil {
		return errors.New("the embedded NATS server is not connected")
	}
	return fmt.Errorf("the NATS server at %s is unreachable (%s)", b.cfg.URL, strings.ToLower(b.nc.Status().String()))
}

// DataDir is the data directory of the embedded server ("" when external).
func (b *Bus) DataDir() string {
	if b.srv == nil {
		return ""
	}
	return b.cfg.DataDir
}

// Server is the embedded server, nil when connected to an external NATS.
// Tests use it to open extra in-process connections.
func (b *Bus) Server() *server.Server { return b.srv }

// Embedded reports whether this Bus runs its own server.
func (b *Bus) Embedded() bool { return b.srv != nil }

// Clustered reports whether this Bus's embedded server is a node of a
// cluster (Config.Cluster).
func (b *Bus) Clustered() bool { return b.srv != nil && b.cfg.Cluster.enabled() }

// ServerName is the embedded server's name in its cluster, "" when
// connected to an external NATS.
func (b *Bus) ServerName() string {
	if b.srv == nil {
		return ""
	}
	return b.srv.Name()
}

// Shared reports whether other processes may use this log: it is another
// server's, or the embedded server listens for clients or routes.
func (b *Bus) Shared() bool { return b.cfg.shared() }

// NodeName is this daemon's lasting name: its server name in a cluster,
// else a name kept in the data directory and made on first use, so that a
// daemon that restarts is the same member of the groups it belongs to.
func (b *Bus) NodeName() (string, error) {
	if b.Clustered() {
		return b.srv.Name(), nil
	}
	if err := os.MkdirAll(b.cfg.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return loadOrCreateServerName(b.cfg.DataDir)
}

// Close drains the connection, shuts the embedded server down and waits for
// it to stop, then releases the data directory. It is safe to call more than
// once; later calls return the first call's result.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.shutdown() })
	return b.closeErr
}

// shutdown releases whatever open got as far as acquiring, in reverse order.
func (b *Bus) shutdown() error {
	var errs []error
	if b.guard != nil {
		// Before the server goes: the guard may be restarting JetStream.
		b.guard.close()
	}
	if b.nc != nil {
		if err := b.drain(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
	if b.lock != nil {
		if err := b.lock.unlock(); err != nil {
			errs = append(errs, fmt.Errorf("unlock data directory: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close bus: %w", err)
	}
	return nil
}

// drain lets pending publishes and subscriptions finish. The client enforces
// drainTimeout itself; the extra second only guards against a ClosedHandler
// that never runs, after which the connection is closed outright.
func (b *Bus) drain() error {
	if err := b.nc.Drain(); err != nil {
		// Already closed, or reconnecting (in which case Drain closed it).
		b.nc.Close()
	}
	select {
	case <-b.ncClosed:
	case <-time.After(drainTimeout + time.Second):
		b.nc.Close()
	}
	if err := b.nc.LastError(); errors.Is(err, nats.ErrDrainTimeout) {
		return fmt.Errorf("drain connection: %w", err)
	}
	return nil
}

// syncStreamDirs makes the directories that lead to the stream's files
// durable. nats-server syncs the files it writes and the stream's own
// directory, but creates the chain above it (store, jetstream, account,
// streams) without syncing it: on a file system that makes a new entry
// durable only with an fsync of its own directory, a power cut could lose
// a new store whole, acknowledged records and all (the power-loss test's
// strict rule showed it). Syncing the chain once, after the stream is
// there, closes that; on ext4 or XFS it costs a few fsyncs at start.
func syncStreamDirs(dataDir, storeDir, stream string) error {
	streamDir := streamDir(storeDir, stream)
	// The stream's own files (its configuration and checksum): the server
	// syncs them only when it syncs every write itself.
	entries, err := os.ReadDir(streamDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("make the stream's files durable: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := durable.SyncFile(filepath.Join(streamDir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("make the stream's files durable: %w", err)
			}
		}
	}
	// From the stream's messages up to the data directory (or the store's,
	// when it lies elsewhere), each directory after the entries in it.
	top := dataDir
	if rel, err := filepath.Rel(dataDir, storeDir); err != nil || strings.HasPrefix(rel, "..") {
		top = storeDir
	}
	dirs := []string{filepath.Join(streamDir, "msgs")}
	for d := streamDir; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top || d == filepath.Dir(d) {
			break
		}
	}
	for _, d := range dirs {
		if err := durable.SyncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("make the stream's directories durable: %w", err)
		}
	}
	return nil
}

// streamDir is where the embedded server keeps the stream's files.
func streamDir(storeDir, stream string) string {
	return filepath.Join(storeDir, "jetstream", server.DEFAULT_GLOBAL_ACCOUNT, "streams", stream)
}
