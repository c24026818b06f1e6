package bus_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
)

const testSubject = bus.SubjectPrefix + ".execution.e1.run1"

func TestOpenCreatesStream(t *testing.T) {
	b := fixtures.StartNATS(t)
	ctx := t.Context()

	if !b.Embedded() {
		t.Errorf("Embedded() = false, want true")
	}
	if got := b.ClientURL(); got != "" {
		t.Errorf("ClientURL() = %q, want \"\" without a listener", got)
	}
	if got, want := b.StreamName(), bus.DefaultStreamName; got != want {
		t.Errorf("StreamName() = %q, want %q", got, want)
	}

	info, err := b.Stream().Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	type journalConfig struct {
		Name         string
		Subjects     []string
		Storage      jetstream.StorageType
		Discard      jetstream.DiscardPolicy
		DenyDelete   bool
		AllowDirect  bool
		Duplicates   time.Duration
		Replicas     int
		MaxConsumers int
	}
	c := info.Config
	got := journalConfig{c.Name, c.Subjects, c.Storage, c.Discard, c.DenyDelete, c.AllowDirect, c.Duplicates, c.Replicas, c.MaxConsumers}
	want := journalConfig{
		Name:         "AGENT_JOURNAL",
		Subjects:     []string{"journal.>"},
		Storage:      jetstream.FileStorage,
		Discard:      jetstream.DiscardNew,
		DenyDelete:   true,
		AllowDirect:  true,
		Duplicates:   10 * time.Minute,
		Replicas:     1,
		MaxConsumers: -1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream config mismatch (-want +got):\n%s", diff)
	}

	ack := publish(t, b.JetStream(), testSubject, "hello", "rec-1")
	if ack.Stream != bus.DefaultStreamName || ack.Sequence != 1 {
		t.Errorf("ack = %s/%d, want %s/1", ack.Stream, ack.Sequence, bus.DefaultStreamName)
	}
	if dup := publish(t, b.JetStream(), testSubject, "hello", "rec-1"); !dup.Duplicate || dup.Sequence != 1 {
		t.Errorf("republish with the same Msg-Id: duplicate=%v seq=%d, want duplicate=true seq=1", dup.Duplicate, dup.Sequence)
	}
	checkLast(t, b, "the bus", "hello")

	if err := b.Stream().DeleteMsg(ctx, 1); err == nil {
		t.Errorf("DeleteMsg succeeded, want it refused by DenyDelete")
	}
}

func TestConsumersNotCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("creates more consumers than the server's default limit")
	}
	b := fixtures.StartNATS(t)
	ctx := t.Context()
	// nats-server caps consumers per stream at 1,000 by default.
	const n = 1001
	for i := range n {
		_, err := b.Stream().CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       fmt.Sprintf("c%d", i),
			MemoryStorage: true,
		})
		if err != nil {
			t.Fatalf("create consumer %d of %d: %v", i+1, n, err)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	ctx := t.Context()

	b, err := bus.Open(ctx, config(dir))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	publish(t, b.JetStream(), testSubject, "kept", "rec-1")
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second close: %v, want nil", err)
	}
	waitGoroutines(t, before)

	b = fixtures.StartNATSAt(t, dir)
	msg, err := b.Stream().GetMsg(ctx, 1)
	if err != nil {
		t.Fatalf("get msg 1 after reopen: %v", err)
	}
	if got, want := string(msg.Data), "kept"; got != want {
		t.Errorf("data after reopen = %q, want %q", got, want)
	}
	if got, want := msg.Subject, testSubject; got != want {
		t.Errorf("subject after reopen = %q, want %q", got, want)
	}
}

func TestSecondOpenInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	fixtures.StartNATSAt(t, dir)

	_, err := bus.Open(t.Context(), config(dir))
	assertLocked(t, err, dir, os.Getpid())
}

// holdDirEnv makes TestHelperHoldDir open a bus on the directory it names.
const holdDirEnv = "AGENTJOURNAL_BUS_TEST_HOLD_DIR"

// TestHelperHoldDir is not a test: TestSecondProcessIsLocked runs the test
// binary on it to get another process that holds a data directory.
func TestHelperHoldDir(t *testing.T) {
	dir := os.Getenv(holdDirEnv)
	if dir == "" {
		t.Skip("helper process for TestSecondProcessIsLocked")
	}
	b, err := bus.Open(t.Context(), config(dir))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	// Hold the lock until the parent kills us or closes stdin.
	_, _ = io.Copy(io.Discard, os.Stdin)
	b.Close()
}

func TestSecondProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldDir$")
	cmd.Env = append(os.Environ(), holdDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	defer kill()

	// The helper's output up to "ready", or everything it printed if it
	// exited without getting there.
	type startup struct {
		ready bool
		out   string
	}
	started := make(chan startup, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var lines []string
		for sc.Scan() {
			if sc.Text() == "ready" {
				started <- startup{ready: true}
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
			lines = append(lines, sc.Text())
		}
		started <- startup{out: strings.Join(lines, "\n")}
	}()
	select {
	case s := <-started:
		if !s.ready {
			t.Fatalf("helper exited before it was ready:\n%s", s.out)
		}
	case <-time.After(time.Minute):
		t.Fatal("helper not ready after a minute")
	}

	_, err = bus.Open(t.Context(), config(dir))
	assertLocked(t, err, dir, cmd.Process.Pid)

	// The kernel drops the flock with the process, however it died.
	kill()
	b, err := bus.Open(t.Context(), config(dir))
	if err != nil {
		t.Fatalf("open after the holder was killed: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestListenAcceptsOtherClients(t *testing.T) {
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	url := b.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL() = %q, want nats://127.0.0.1:<port>", url)
	}

	_, js := fixtures.ConnectJetStream(t, b, url)
	publish(t, js, testSubject, "from outside", "rec-1")

	checkLast(t, b, "the bus", "from outside")
}

// TestListenRefusesStrangersAndDeletions: a raw NATS client without the
// secret is refused; with it, it still cannot delete or purge the journal
// stream or delete a record.
func TestListenRefusesStrangersAndDeletions(t *testing.T) {
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	url := b.ClientURL()
	for _, opts := range [][]nats.Option{nil, {nats.UserInfo(bus.User, "wrong-secret-0123456789abcdef0123456789")}, {nats.Token(fixtures.NATSSecret)}} {
		if nc, err := nats.Connect(url, opts...); err == nil {
			nc.Close()
			t.Fatalf("a client without the secret connected to %s", url)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("connect without the secret: %v, want an authorization violation", err)
		}
	}
	_, js := fixtures.ConnectJetStream(t, b, url)
	publish(t, js, testSubject, "kept", "rec-keep")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := stream.Info(ctx); err != nil || !info.Config.DenyPurge || !info.Config.DenyDelete {
		t.Fatalf("stream config %+v (%v), want deny purge and deny delete", info, err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, testSubject)
	if err != nil {
		t.Fatal(err)
	}
	// A forbidden request gets no answer: each attempt waits a moment and
	// fails.
	for what, try := range map[string]func(context.Context) error{
		"deleting the journal stream": func(ctx context.Context) error { return js.DeleteStream(ctx, b.StreamName()) },
		"purging the journal stream":  func(ctx context.Context) error { return stream.Purge(ctx) },
		"deleting a record":           func(ctx context.Context) error { return stream.DeleteMsg(ctx, msg.Sequence) },
	} {
		attempt, cancel := context.WithTimeout(t.Context(), time.Second)
		err := try(attempt)
		cancel()
		if err == nil {
			t.Fatalf("%s succeeded", what)
		}
	}
	if got, err := b.Stream().GetLastMsgForSubject(ctx, testSubject); err != nil || string(got.Data) != "kept" {
		t.Fatalf("after the attempts the record is %v (%v), want it kept", got, err)
	}
}

func TestListenPortInUse(t *testing.T) {
	a := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	cfg := config(t.TempDir())
	cfg.Listen = strings.TrimPrefix(a.ClientURL(), "nats://")

	b, err := bus.Open(t.Context(), cfg)
	if err == nil {
		b.Close()
		t.Fatalf("open a second server on %s succeeded, want an error", cfg.Listen)
	}
	if !strings.Contains(err.Error(), cfg.Listen) {
		t.Errorf("error %q does not name the address %s", err, cfg.Listen)
	}
	// The failed Open must have released the directory.
	b, err = bus.Open(t.Context(), config(cfg.DataDir))
	if err != nil {
		t.Fatalf("open after a failed open: %v", err)
	}
	b.Close()
}

func TestExternalURL(t *testing.T) {
	a := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	cfg := bus.DefaultConfig()
	cfg.URL = a.ClientURL()

	// Without the secret the server refuses, and says what is missing.
	if b, err := bus.Open(t.Context(), cfg); err == nil || !errors.Is(err, nats.ErrAuthorization) || !strings.Contains(err.Error(), "nats-secret") {
		if b != nil {
			b.Close()
		}
		t.Fatalf("open without the secret: %v, want an authorization error naming the secret file", err)
	}
	cfg.Secret = fixtures.NATSSecret
	b, err := bus.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open with URL %s: %v", cfg.URL, err)
	}
	if b.Embedded() {
		t.Errorf("Embedded() = true, want false with a URL")
	}
	if got, want := b.ClientURL(), cfg.URL; got != want {
		t.Errorf("ClientURL() = %q, want %q", got, want)
	}
	publish(t, b.JetStream(), testSubject, "via url", "rec-1")
	info, err := b.Stream().Info(t.Context())
	if err != nil {
		t.Fatalf("stream info through B: %v", err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("msgs = %d, want 1", info.State.Msgs)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close B: %v", err)
	}

	// A is untouched by B's close.
	if !a.Conn().IsConnected() {
		t.Fatalf("A's connection is %v after B closed, want connected", a.Conn().Status())
	}
	checkLast(t, a, "A after B closed", "via url")
}

func TestSyncInterval(t *testing.T) {
	dir := t.TempDir()
	interval := func(c *bus.Config) {
		c.Sync = bus.SyncInterval
		c.SyncInterval = time.Second
	}
	b, err := bus.Open(t.Context(), withOpts(config(dir), interval))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	publish(t, b.JetStream(), testSubject, "batched", "rec-1")
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	b = fixtures.StartNATSAt(t, dir, interval)
	msg, err := b.Stream().GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatalf("get msg 1 after a clean close: %v", err)
	}
	if got, want := string(msg.Data), "batched"; got != want {
		t.Errorf("data = %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  bus.Config
		want []string // substrings, one per expected problem; none means valid
	}{
		{name: "zero value with a DataDir", cfg: bus.Config{DataDir: "/tmp/x"}},
		{name: "defaults with a DataDir", cfg: withOpts(bus.DefaultConfig(), func(c *bus.Config) { c.DataDir = "/tmp/x" })},
		{name: "url only", cfg: bus.Config{URL: "nats://127.0.0.1:4222", Replicas: 3}},
		{name: "sync interval", cfg: bus.Config{DataDir: "/tmp/x", Sync: bus.SyncInterval, SyncInterval: time.Second}},
		{name: "listen", cfg: bus.Config{DataDir: "/tmp/x", Listen: "127.0.0.1:0", Secret: fixtures.NATSSecret}},
		{name: "listen without a secret", cfg: bus.Config{DataDir: "/tmp/x", Listen: "127.0.0.1:0", Secret: "short"},
			want: []string{"needs a Secret of at least 32 characters"}},
		{name: "remote listen", cfg: bus.Config{DataDir: "/tmp/x", Listen: "0.0.0.0:4222", Secret: fixtures.NATSSecret},
			want: []string{`Listen "0.0.0.0:4222" is reachable from other hosts`}},
		{name: "remote listen allowed", cfg: bus.Config{DataDir: "/tmp/x", Listen: "0.0.0.0:4222", Secret: fixtures.NATSSecret, AllowRemote: true}},
		{name: "remote cluster listen", cfg: bus.Config{DataDir: "/tmp/x", Secret: fixtures.NATSSecret, Cluster: bus.ClusterConfig{Name: "aj", Listen: "0.0.0.0:6222"}},
			want: []string{`Cluster.Listen "0.0.0.0:6222" is reachable from other hosts`}},
		{
			name: "several problems",
			cfg:  bus.Config{Replicas: -1, Sync: "sometimes", StreamName: "a.b"},
			want: []string{
				"no DataDir and no URL",
				`unknown Sync "sometimes" (want "always" or "interval")`,
				"Replicas -1 is negative (want 1 or more",
				`StreamName "a.b"`,
			},
		},
		{
			name: "embedded replicas and listen",
			cfg:  bus.Config{DataDir: "/tmp/x", Replicas: 3, Listen: "4222", SyncInterval: -time.Second, Secret: fixtures.NATSSecret},
			want: []string{
				"Replicas 3 needs a NATS cluster",
				`Listen "4222"`,
				"SyncInterval -1s is negative",
			},
		},
		{
			name: "listen with url",
			cfg:  bus.Config{URL: "nats://h:4222", Listen: "127.0.0.1:0", ServerName: "a b"},
			want: []string{"Listen \"127.0.0.1:0\" is set together with URL", `ServerName "a b"`},
		},
		{
			name: "cluster",
			cfg: bus.Config{DataDir: "/tmp/x", Replicas: 3, Secret: fixtures.NATSSecret, Cluster: bus.ClusterConfig{
				Name: "aj", Listen: "127.0.0.1:6222", Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://10.0.0.2:6222"}}},
		},
		{
			name: "cluster problems",
			cfg: bus.Config{URL: "nats://h:4222", Cluster: bus.ClusterConfig{
				Listen: "6222", Routes: []string{"http://h:6222", "nats-route://h", "nats-route://h:0"}}},
			want: []string{
				"Cluster is set together with URL",
				"Cluster has Listen or Routes but no Name",
				`Cluster.Listen "6222"`,
				`Cluster.Routes "http://h:6222": scheme "http" is not nats-route`,
				`Cluster.Routes "nats-route://h": no host and port`,
				`Cluster.Routes "nats-route://h:0": port 0 names no listener`,
			},
		},
		{
			name: "cluster without listen",
			cfg:  bus.Config{DataDir: "/tmp/x", Replicas: 3, Secret: fixtures.NATSSecret, Cluster: bus.ClusterConfig{Name: "a.b"}},
			want: []string{`Cluster.Name "a.b"`, "Cluster has no Listen"},
		},
		{
			name: "bad port",
			cfg:  bus.Config{DataDir: "/tmp/x", Listen: "127.0.0.1:99999", Secret: fixtures.NATSSecret},
			want: []string{"port \"99999\" is not a number from 0 to 65535"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %d problems", len(tt.want))
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestOpenRejectsInvalidConfig(t *testing.T) {
	_, err := bus.Open(t.Context(), bus.Config{})
	if err == nil || !strings.Contains(err.Error(), "no DataDir and no URL") {
		t.Fatalf("Open(Config{}) = %v, want the Validate error", err)
	}
}

func config(dir string) bus.Config {
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	cfg.Secret = fixtures.NATSSecret
	return cfg
}

func withOpts(cfg bus.Config, opts ...func(*bus.Config)) bus.Config {
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// checkLast fails the test unless the last record on testSubject, read
// through b (through names it in the failure), holds want.
func checkLast(t *testing.T, b *bus.Bus, through, want string) {
	t.Helper()
	msg, err := b.Stream().GetLastMsgForSubject(t.Context(), testSubject)
	if err != nil {
		t.Fatalf("read the last record through %s: %v", through, err)
	}
	if got := string(msg.Data); got != want {
		t.Errorf("last record through %s = %q, want %q", through, got, want)
	}
}

func publish(t *testing.T, js jetstream.JetStream, subject, data, id string) *jetstream.PubAck {
	t.Helper()
	// A clustered stream has no leader for a moment after a node leaves:
	// the publish is tried again, as the store's appends are, and the
	// message id keeps a retried publish from storing it twice.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ack, err := js.Publish(t.Context(), subject, []byte(data), jetstream.WithMsgID(id))
		if err == nil {
			return ack
		}
		if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) || time.Now().After(deadline) {
			t.Fatalf("publish to %s: %v", subject, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func assertLocked(t *testing.T, err error, dir string, pid int) {
	t.Helper()
	if !errors.Is(err, bus.ErrDataDirLocked) {
		t.Fatalf("open a locked dir: err = %v, want ErrDataDirLocked", err)
	}
	var le *bus.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("open a locked dir: err = %T, want *bus.LockedError", err)
	}
	if le.Dir != dir || le.PID != pid {
		t.Errorf("LockedError{Dir: %q, PID: %d}, want {Dir: %q, PID: %d}", le.Dir, le.PID, dir, pid)
	}
	for _, want := range []string{dir, strconv.Itoa(pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// waitGoroutines fails the test if the goroutine count does not return to
// what it was before the bus opened.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	var now int
	for range 100 {
		if now = runtime.NumGoroutine(); now <= before {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Errorf("%d goroutines after Close, want at most %d:\n%s", now, before, buf[:runtime.Stack(buf, true)])
}
