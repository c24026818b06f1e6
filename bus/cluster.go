package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterReadyTimeout bounds how long Open waits for the cluster to elect a
// JetStream meta leader, which needs a majority of its nodes running, and
// then for the journal stream to be placed on Replicas of them.
const clusterReadyTimeout = 2 * time.Minute

// clusterWaitLogEvery is how often Open says what it is still waiting for.
const clusterWaitLogEvery = 10 * time.Second

// serverNameFile holds a clustered node's name in DataDir. The name is the
// node's identity in the cluster's consensus groups, so it must survive
// restarts: a node that came back under a new name would count as a new
// peer while its old self stayed a missing member.
const serverNameFile = "server-name"

// loadOrCreateServerName returns the name in dir/server-name, writing a new
// one (the host name and a random suffix) on first use.
func loadOrCreateServerName(dir string) (string, error) {
	path := filepath.Join(dir, serverNameFile)
	data, err := os.ReadFile(path)
	if err == nil {
		name := strings.TrimSpace(string(data))
		if name == "" || strings.ContainsAny(name, " \t\r\n") {
			return "", fmt.Errorf("server name in %s is %q (want a single word; delete the file to get a new name)", path, name)
		}
		return name, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read server name: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("create server name: %w", err)
	}
	name := hex.EncodeToString(suffix)
	if host := nameWord(hostname()); host != "" {
		name = host + "-" + name
	}
	// Written to a temporary file and renamed, so a crash never leaves a
	// half-written name behind.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write server name: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write server name: %w", err)
	}
	return name, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// nameWord keeps the letters, digits, '-' and '_' of s, so a host name
// becomes part of a server name nats-server accepts.
func nameWord(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return -1
	}, s)
}

// waitCluster waits until srv knows the cluster's JetStream meta leader and
// is current with it; until then the server answers no JetStream request.
func waitCluster(ctx context.Context, srv *server.Server, cfg Config, deadline time.Time) error {
	log := cfg.Logger
	nextLog := time.Now().Add(clusterWaitLogEvery)
	for {
		h := srv.Healthz(&server.HealthzOptions{JSMetaOnly: true})
		if h.StatusCode == http.StatusOK {
			return nil
		}
		if time.Now().After(nextLog) {
			log.Info("waiting for the nats cluster", logKeyCluster, cfg.Cluster.Name, logKeyRoutes, srv.NumRoutes(), logKeyReason, h.Error)
			nextLog = time.Now().Add(clusterWaitLogEvery)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("join nats cluster %s: %s after %s (%d routes up; a majority of the nodes among %s must be running)",
				cfg.Cluster.Name, h.Error, clusterReadyTimeout, srv.NumRoutes(), strings.Join(cfg.Cluster.Routes, ","))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ensureStream creates the journal stream or brings its configuration up to
// date. Errors that a clustered JetStream reports while it settles are
// retried until the deadline: the meta leader may be changing, too few peers
// may have reported in yet to place the replicas, and another node may be
// creating the same stream at the same moment. On a cluster of embedded
// servers the first attempts get short timeouts, because JetStream may leave
// some of several simultaneous creates unanswered and the next attempt then
// finds the stream in place; a JetStream API that does not answer yet is
// retried too, as on a server this process just saw join its cluster it can
// only be temporary.
func (b *Bus) ensureStream(ctx context.Context, deadline time.Time) (jetstream.Stream, error) {
	cfg := StreamConfig(b.cfg.StreamName, b.cfg.Replicas)
	// An embedded server on its own holds exactly one replica; elsewhere an
	// existing stream keeps a higher count than this process asks for:
	// giving up copies of the log is an operator's decision, not a side
	// effect of one more process starting with the default of 1.
	keepReplicas := !b.Embedded() || b.Clustered()
	nextLog := time.Now().Add(clusterWaitLogEvery)
	for attempt := 0; ; attempt++ {
		timeout := streamSetupTimeout
		if b.Clustered() {
			timeout = min(time.Second<<attempt, streamSetupTimeout)
		}
		stream, err := setupStream(ctx, b.js, cfg, keepReplicas, timeout)
		if err == nil {
			return stream, nil
		}
		if !transientStreamErr(err, b.Clustered()) || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("create or update stream %s: %w", cfg.Name, err)
		}
		if time.Now().After(nextLog) {
			b.cfg.Logger.Info("waiting to place the journal stream", logKeyStream, cfg.Name, logKeyReason, err)
			nextLog = time.Now().Add(clusterWaitLogEvery)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("create or update stream %s: %w", cfg.Name, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// setupStream makes one attempt at creating or updating the stream, within
// timeout. With keepReplicas an existing stream's replica count is never
// lowered.
func setupStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, keepReplicas bool, timeout time.Duration) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	existing, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		// Should another node create it first, with the same
		// configuration this succeeds; with another, the next attempt
		// finds it and updates it.
		return js.CreateStream(ctx, cfg)
	case err != nil:
		return nil, err
	}
	have := existing.CachedInfo().Config
	if keepReplicas {
		cfg.Replicas = max(cfg.Replicas, have.Replicas)
	}
	if holds(have, cfg) {
		// Nothing to change: a daemon joined by URL may not change the
		// log's streams (server.go), and need not.
		return existing, nil
	}
	return js.UpdateStream(ctx, cfg)
}

// holds reports whether the stream configuration have already is want in
// every setting StreamConfig chooses.
func holds(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) && have.Storage == want.Storage && have.Discard == want.Discard &&
		have.DenyDelete == want.DenyDelete && have.DenyPurge == want.DenyPurge && have.AllowDirect == want.AllowDirect &&
		have.AllowAtomicPublish == want.AllowAtomicPublish && have.Duplicates == want.Duplicates &&
		have.Replicas == want.Replicas && have.MaxConsumers == want.MaxConsumers
}

// streamSetupTimeout is the longest one attempt at setting up the stream
// waits for an answer: the JetStream client's default API timeout.
const streamSetupTimeout = 5 * time.Second

// waitStream waits until the journal stream has a leader and this server's
// replica of it is current. Until then a freshly created stream's info may
// be answered by a replica that has not set the stream up yet ("stream not
// found"), and reads through this server may lag what the leader has
// acknowledged.
func (b *Bus) waitStream(ctx context.Context, deadline time.Time) (jetstream.Stream, error) {
	name, srv := b.cfg.StreamName, b.srv
	nextLog := time.Now().Add(clusterWaitLogEvery)
	for {
		reason := ""
		reqCtx, cancel := context.WithTimeout(ctx, time.Second)
		stream, err := b.js.Stream(reqCtx, name)
		cancel()
		switch {
		case err != nil:
			reason = err.Error()
		case stream.CachedInfo().Cluster == nil || stream.CachedInfo().Cluster.Leader == "":
			reason = "the stream has no leader"
		case isReplica(stream.CachedInfo().Cluster, srv.Name()) && !srv.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, name):
			reason = "this server's replica is catching up"
		default:
			return stream, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for stream %s: %w", name, ctx.Err())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("wait for stream %s: %s after %s", name, reason, clusterReadyTimeout)
		}
		if time.Now().After(nextLog) {
			b.cfg.Logger.Info("waiting for the journal stream", logKeyStream, name, logKeyReason, reason)
			nextLog = time.Now().Add(clusterWaitLogEvery)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for stream %s: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// isReplica reports whether the server named name holds a replica of the
// stream described by ci.
func isReplica(ci *jetstream.ClusterInfo, name string) bool {
	if ci.Leader == name {
		return true
	}
	for _, p := range ci.Replicas {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Server error codes that a clustered JetStream reports while it settles.
const (
	errCodeClusterNoPeers       = 10005 // no suitable peers for placement (yet)
	errCodeClusterNotAvailable  = 10008 // no meta leader
	errCodeClusterNotLeader     = 10009 // the request reached a node that is no longer leader
	errCodeInsufficientResource = 10023 // too few JetStream peers known so far
)

// transientStreamErr reports whether a failed stream setup is worth another
// attempt.
func transientStreamErr(err error, embeddedCluster bool) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterNoPeers, errCodeClusterNotAvailable, errCodeClusterNotLeader, errCodeInsufficientResource,
			// Another node created the stream, with another
			// configuration, between this one's lookup and create;
			// the next attempt finds it and updates it.
			jetstream.JSErrCodeStreamNameInUse:
			return true
		}
		return false
	}
	if !embeddedCluster {
		return false
	}
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders)
}
