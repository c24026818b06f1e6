package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

// closeTimeout bounds a test's Close: generous, since the machine may be
// loaded; what is asserted is that Close returns nil before it.
const closeTimeout = 2 * time.Minute

// The names are on users' disks and in their scripts: a change here is a
// change of format.
func TestLayoutNames(t *testing.T) {
	l := daemon.Layout{Dir: "/d"}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"bus", l.Bus(), "/d"},
		{"nats store", l.NATSStore(), "/d/nats"},
		{"server name", l.ServerName(), "/d/server-name"},
		{"nats secret", l.NATSSecret(), "/d/nats-secret"},
		{"token", l.TokenFile(), "/d/api-token"},
		{"scoped token secret", l.ScopedTokenSecret(), "/d/scoped-token.secret"},
		{"daemon info", l.DaemonInfo(), "/d/daemon.json"},
		{"projections", l.Projections(), "/d/projections/agentjournal.db"},
		{"search index", l.SearchIndex(), "/d/projections/search.bleve"},
		{"recordings", l.Recordings(), "/d/terminal-recordings"},
		{"output", l.Output(), "/d/agent-output"},
		{"hosted", l.Hosted(), "/d/hosted"},
		{"queue", l.Queue(), "/d/queue"},
		{"supervised", l.Supervised(), "/d/supervised"},
		{"workspaces", l.Workspaces(), "/d"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

// openDaemon opens a daemon on a fresh data directory with cfg's options
// and closes it when the test ends, if the test has not.
func openDaemon(t testing.TB, edit func(*daemon.Config)) *daemon.Daemon {
	t.Helper()
	cfg := daemon.DefaultConfig(t.TempDir())
	cfg.StopGrace = time.Second
	if edit != nil {
		edit(&cfg)
	}
	d, err := daemon.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

// What the bus keeps in the data directory is where the layout says.
func TestLayoutMatchesTheBus(t *testing.T) {
	d := openDaemon(t, func(c *daemon.Config) { c.NoSearch, c.NoPolicy = true, true })
	l := d.Layout()
	if info, err := os.Stat(l.NATSStore()); err != nil || !info.IsDir() {
		t.Errorf("the bus's store at %s: %v, want a directory", l.NATSStore(), err)
	}
	// A node's name is made on first asking.
	if _, err := d.Bus().NodeName(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.ServerName()); err != nil {
		t.Errorf("the bus's server name at %s: %v", l.ServerName(), err)
	}
	for _, path := range []string{l.Projections(), l.TokenFile(), l.ScopedTokenSecret()} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v, want it made by Open", path, err)
		}
	}
	if _, err := os.Stat(l.SearchIndex()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("search index at %s with NoSearch: %v, want none", l.SearchIndex(), err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*daemon.Config)
		want []string
	}{
		{"default", func(*daemon.Config) {}, nil},
		{"no data dir", func(c *daemon.Config) { c.DataDir = "" }, []string{"no DataDir"}},
		{"everything wrong at once", func(c *daemon.Config) {
			c.Listen, c.Secret, c.PolicyPartitions, c.StopGrace, c.MaxRunning, c.ShutdownTimeout = "7600", []byte("short"), 1, -1, -1, -1
		}, []string{`Listen "7600"`, "Secret is 5 bytes", "PolicyPartitions 1", "StopGrace -1ns", "MaxRunning -1", "ShutdownTimeout -1ns"}},
		{"bus", func(c *daemon.Config) { c.Bus.Sync = "sometimes" }, []string{`unknown Sync "sometimes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := daemon.DefaultConfig("/d")
			tc.edit(&cfg)
			benchtest.Mentions(t, cfg.Validate(), tc.want)
		})
	}
}

// A daemon that listens tells the client commands where in daemon.json,
// serves with its token, and takes the file away when it closes; a second
// Close answers as the first; nothing it started is left running.
func TestOpenServeClose(t *testing.T) {
	before := goruntime.NumGoroutine()
	d := openDaemon(t, func(c *daemon.Config) { c.Listen = "127.0.0.1:0" })
	info, err := d.Layout().ReadInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.URL != d.URL() || info.PID != os.Getpid() || info.TokenFile != d.Layout().TokenFile() {
		t.Errorf("daemon info %+v, want url %s, pid %d, token file %s", info, d.URL(), os.Getpid(), d.Layout().TokenFile())
	}
	token, err := os.ReadFile(info.TokenFile)
	if err != nil || strings.TrimSpace(string(token)) != d.Token() {
		t.Fatalf("token file holds %q (%v), want the daemon's token", token, err)
	}
	c := client.New(d.URL(), d.Token())
	if h, err := c.Health(t.Context()); err != nil || h.Status != "ok" {
		t.Fatalf("health: %+v, %v; want ok", h, err)
	}
	c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatalf("second Close: %v, want what the first returned (nil)", err)
	}
	if _, err := os.Stat(d.Layout().DaemonInfo()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("daemon info after Close: %v, want it removed", err)
	}
	benchtest.WaitGoroutines(t, before, 10*time.Second)
}

// A part that fails to open closes those opened before it: the data
// directory is free again and nothing is left running.
func TestOpenFailureClosesWhatItOpened(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	before := goruntime.NumGoroutine()
	cfg := daemon.DefaultConfig(t.TempDir())
	cfg.Listen = busy.Addr().String()
	if _, err := daemon.Open(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "listen on "+cfg.Listen) {
		t.Fatalf("Open on a busy address: %v, want the listen error", err)
	}
	benchtest.WaitGoroutines(t, before, 10*time.Second)
	cfg.Listen = ""
	d, err := daemon.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open again on the same data directory: %v", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Closing a daemon with agents running and requests in flight (messages,
// observations waiting for their decision, event streams, reads) returns
// nil within its context, and leaves nothing running.
func TestCloseUnderLoad(t *testing.T) {
	agent := fixtures.AgentBinary(t)
	before := goruntime.NumGoroutine()
	d := openDaemon(t, func(c *daemon.Config) { c.Listen = "127.0.0.1:0" })
	c := client.New(d.URL(), d.Token())
	defer c.Close()

	// Each agent signals 20 times a second until it is stopped: a load
	// the daemon keeps up with, so that what Close waits for is the
	// stopping, not a backlog of the agents' output (which the runtime
	// records to the last line before it lets an agent go).
	const agents, clients = 4, 8
	ids := make([]string, agents)
	for i := range ids {
		l, err := c.Launch(t.Context(), client.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: fmt.Sprint("t-load-", i),
			Agent: "generic", Command: []string{agent, "markers:100000:50ms", "wait"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = l.Reference.AgentExecutionID
	}

	load, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := 0
	done := func() {
		mu.Lock()
		answered++
		mu.Unlock()
	}
	for w := range clients {
		id := ids[w%agents]
		agentClient := client.New(d.URL(), d.Server().ScopedToken(id))
		defer agentClient.Close()
		wg.Go(func() {
			for n := 0; load.Err() == nil; n++ {
				var err error
				switch n % 3 {
				case 0:
					_, err = c.SendMessage(load, id, client.Message{Type: "prompt", Payload: json.RawMessage(`{"text":"more"}`)})
				case 1:
					_, err = agentClient.RecordObservation(load, id, client.Observation{ObservationID: fmt.Sprint("o-", w, "-", n),
						Source: eventstore.ObservedSDK, Confidence: eventstore.ConfidenceHigh,
						Signal: &client.Signal{Type: "progress", Payload: json.RawMessage(`{"summary":"step"}`)}})
				default:
					_, err = c.List(load, client.ExecutionFilter{})
				}
				if err == nil {
					done()
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for _, err := range c.Follow(load, client.EventsOptions{}) {
				if err != nil && load.Err() != nil {
					return
				}
			}
		})
	}
	// Close only once requests are being answered.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := answered
		mu.Unlock()
		if n >= 3*clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests answered in a minute, want %d before closing", n, 3*clients)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Close returned nil after its deadline")
	}
	stopLoad()
	wg.Wait()
	c.Close()
	benchtest.WaitGoroutines(t, before, 10*time.Second)
	// The agents were stopped, and their ends recorded before the log
	// closed: a daemon opened again finds none left running.
	var recovered []string
	again := daemon.DefaultConfig(d.Layout().Dir)
	again.Recovered = func(id string) { recovered = append(recovered, id) }
	again.NoSearch = true
	d2, err := daemon.Open(t.Context(), again)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close(context.Background())
	if len(recovered) > 0 {
		t.Errorf("executions left running by the closed daemon: %v, want none", recovered)
	}
	entries, _ := filepath.Glob(filepath.Join(d.Layout().Hosted(), "*"))
	if len(entries) > 0 {
		t.Errorf("hosted files left: %v, want none once every agent's end is recorded", entries)
	}
}
