package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/crypto/bcrypt"
)

// readyTimeout bounds how long Open waits for the embedded server, which
// includes recovering every stream from disk.
const readyTimeout = 30 * time.Second

// MaxPayload is the embedded server's message size limit: 8 MiB, room for
// any record size limit up to 8 MiB minus headers.
const MaxPayload = 8 << 20

// MaxAtomicBatch is the most records one atomic batch may hold on the
// embedded server, and so the longest journal an import writes whole.
const MaxAtomicBatch = 100_000

// storeDirName is the JetStream store inside DataDir.
const storeDirName = "nats"

// serverOptions translates the config into nats-server options.
func serverOptions(cfg Config) (*server.Options, error) {
	// With group commit the stream's fsyncs are the process's own
	// (groupsync.go); the server's interval covers the rest of its files,
	// which it rebuilds or the daemon sets up again.
	syncAlways := cfg.Sync == SyncAlways && !cfg.groupCommit()
	opts := &server.Options{
		ServerName:             cfg.ServerName,
		JetStream:              true,
		StoreDir:               filepath.Join(cfg.DataDir, storeDirName),
		SyncAlways:             syncAlways,
		SyncInterval:           cfg.SyncInterval,
		DisableJetStreamBanner: true,
		// The daemon owns signal handling; the server must not exit the
		// process on SIGINT/SIGTERM behind its back.
		NoSigs: true,
		// HTTPPort stays 0: no monitoring endpoint.
		// A journal record may be up to its store's limit (1 MiB by
		// default) plus headers; the NATS default payload limit of 1 MB
		// would refuse the largest valid records.
		MaxPayload: MaxPayload,
		JetStreamLimits: server.JSLimitOpts{
			// One stream serves every journal and every subscriber, so the
			// server's default of 1,000 consumers per stream would cap the
			// number of concurrent readers. -1 lifts it.
			DefaultMaxConsumers: -1,
			// An import publishes a whole journal as one atomic batch.
			MaxBatchSize: MaxAtomicBatch,
		},
	}
	if !cfg.Cluster.enabled() && diskMeasured {
		// The disk guard (disk.go) limits the log by the free space as it
		// changes; the server's own limit would be fixed at 75% of the
		// space free at start.
		opts.JetStreamMaxStore = unlimitedStore
	}
	if cfg.Listen != "" || cfg.Cluster.enabled() {
		// A server that listens lets in only agentjournal, and not even it
		// may delete or purge the journal stream, or delete a record: the
		// log only grows.
		// The server keeps a hash of the secret, not the secret: the
		// cheapest bcrypt cost, since the secret is random and long and
		// each connection pays it.
		hash, err := bcrypt.GenerateFromPassword([]byte(cfg.Secret), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("hash the nats secret: %w", err)
		}
		// The process that runs the server logs in as OwnerUser with a
		// password that lives only in its memory (Config.owner): only it
		// sets up and changes the log's streams. Whoever holds the secret,
		// a joined daemon or anything else that can read nats-secret, may
		// append, read, consume and use the buckets, but not change what
		// the log keeps (clientDenied).
		ownerHash, err := bcrypt.GenerateFromPassword([]byte(cfg.owner), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("hash the owner's password: %w", err)
		}
		opts.Users = []*server.User{
			{Username: User, Password: string(hash), Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: clientDenied(cfg.StreamName)},
			}},
			{Username: OwnerUser, Password: string(ownerHash), Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: forbiddenAPI},
			}},
		}
	}
	if cfg.Cluster.enabled() {
		host, port, err := splitListen(cfg.Cluster.Listen)
		if err != nil {
			return nil, fmt.Errorf("cluster listen %q: %w", cfg.Cluster.Listen, err)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		}
		opts.Cluster = server.ClusterOpts{
			Name: cfg.Cluster.Name, Host: host, Port: port,
			// One route connection per peer rather than a pool. With a
			// pool, the interest in a consumer just created on a peer can
			// arrive on another connection than the answer that it exists,
			// so a pull sent on that answer is sometimes lost and the reader
			// waits out its missed heartbeats: 10s for each ordered consumer
			// a journal read starts. The log lives in one account, whose
			// traffic a pool would not spread anyway.
			PoolSize: -1,
			Username: RouteUser,
			Password: cfg.Secret,
		}
		for _, r := range cfg.Cluster.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("cluster route %q: %w", r, err)
			}
			if u.User == nil {
				u.User = url.UserPassword(RouteUser, cfg.Secret)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	listen := cfg.Listen
	switch {
	case listen == "" && cfg.Cluster.enabled():
		// nats-server starts routing only once its client listener is
		// up, so a cluster node always has one.
		listen = "127.0.0.1:0"
	case listen == "":
		opts.DontListen = true
		return opts, nil
	}
	host, port, err := splitListen(listen)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", listen, err)
	}
	opts.Host = host
	opts.Port = port
	if port == 0 {
		// nats-server reads 0 as its default port 4222; -1 asks for a free one.
		opts.Port = server.RANDOM_PORT
	}
	return opts, nil
}

// forbiddenAPI are the JetStream API subjects no client may publish to,
// the server's owner included: deleting or purging a stream, deleting a
// message or purging the account would take records out of the journals.
var forbiddenAPI = []string{
	"$JS.API.STREAM.DELETE.>",
	"$JS.API.STREAM.PURGE.>",
	"$JS.API.STREAM.MSG.DELETE.>",
	"$JS.API.ACCOUNT.PURGE.>",
}

// clientDenied is forbiddenAPI and what else a holder of the secret may
// not do, since JetStream drops records itself when told to: changing a
// stream's configuration (a limit of one message with discard old erases
// the log, deny-delete or not), restoring a stream over it, creating the
// journal stream under another configuration, moving or removing its
// replicas and leaders, and the server-wide JetStream API. Creating other
// streams stays open: a daemon joined by URL creates the key-value buckets
// it needs, each a stream of its own. Rollup and TTL headers on journal
// subjects are refused by the journal stream's own configuration, which a
// client can no longer change.
func clientDenied(stream string) []string {
	return append(slices.Clone(forbiddenAPI),
		"$JS.API.STREAM.UPDATE.>",
		"$JS.API.STREAM.RESTORE.>",
		"$JS.API.STREAM.CREATE."+stream,
		"$JS.API.STREAM.PEER.REMOVE.>",
		"$JS.API.STREAM.LEADER.STEPDOWN.>",
		"$JS.API.CONSUMER.LEADER.STEPDOWN.>",
		"$JS.API.META.>",
		"$JS.API.SERVER.>",
		"$JS.API.ACCOUNT.STREAM.MOVE.>",
		"$JS.API.ACCOUNT.STREAM.CANCEL_MOVE.>",
	)
}

// startServer starts the embedded server and waits until it accepts
// connections, so failures surface from Open and not from the first publish.
func startServer(ctx context.Context, cfg Config) (*server.Server, *server.Options, error) {
	opts, err := serverOptions(cfg)
	if err != nil {
		return nil, nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("configure nats server: %w", err)
	}
	logger := &serverLogger{log: cfg.Logger.With(logKeyComponent, "nats-server")}
	srv.SetLoggerV2(logger, false, false, false)
	srv.Start()

	if err := waitReady(ctx, srv, logger); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, nil, fmt.Errorf("start nats server in %s: %w", opts.StoreDir, err)
	}
	return srv, opts, nil
}

// waitReady polls rather than making one long ReadyForConnections call so that
// a fatal startup error (port in use, unreadable store) or a cancelled ctx
// ends the wait at once instead of after readyTimeout.
func waitReady(ctx context.Context, srv *server.Server, logger *serverLogger) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if srv.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if msg := logger.fatal.Load(); msg != nil {
			return errors.New(*msg)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready for connections after %s", readyTimeout)
		}
	}
}

// clientURL is the URL another process can dial to reach srv's listener.
func clientURL(srv *server.Server) string {
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		// Bound to every interface: loopback is the address that is sure to
		// reach it from this host.
		host = "127.0.0.1"
		if addr.IP.To4() == nil {
			host = "::1"
		}
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// loopbackHost reports whether a Listen host only accepts local connections.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyDir       = "dir"
	logKeyListen    = "listen"
	logKeyURL       = "url"
	logKeyStream    = "stream"
	logKeySync      = "sync"
	logKeyErr       = "err"
	logKeyCluster   = "cluster"
	logKeyRoutes    = "routes"
	logKeyReason    = "reason"
	logKeyServer    = "server"
)

// serverLogger forwards nats-server logs to slog. Notices go to Debug: the
// server's startup chatter is noise in the daemon's log, while its warnings
// and errors are not. Fatalf does not exit: it records the message so Open can
// return it as the reason the server did not start.
type serverLogger struct {
	log   *slog.Logger
	fatal atomic.Pointer[string]
}

func (l *serverLogger) Noticef(format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...))
}

func (l *serverLogger) Warnf(format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}

func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.fatal.CompareAndSwap(nil, &msg)
	l.log.Error(msg)
}

func (l *serverLogger) Errorf(format string, v ...any) {
	l.log.Error(fmt.Sprintf(format, v...))
}

func (l *serverLogger) Debugf(format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...))
}

func (l *serverLogger) Tracef(format string, v ...any) {}
