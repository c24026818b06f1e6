package fleet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fleet"
)

// join makes a member named name on b's log, over a connection of its own
// as another daemon's would be.
func join(t *testing.T, b *bus.Bus, name string, edit func(*fleet.Config)) *fleet.Fleet {
	t.Helper()
	nc, js := fixtures.ConnectJetStream(t, b, "")
	cfg := fleet.Config{Conn: nc, JS: js, Stream: b.StreamName(), Name: name, Lease: time.Second}
	if edit != nil {
		edit(&cfg)
	}
	f, err := fleet.Join(t.Context(), cfg)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

// waitMember waits until f sees host name in state.
func waitMember(t *testing.T, f *fleet.Fleet, name string, state fleet.State) fleet.Member {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, ok := f.Member(name)
		if ok && m.State == state {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never saw host %s %s (last: %+v, known %v)", f.Name(), name, state, m, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostsSeeEachOther(t *testing.T) {
	b := fixtures.StartNATS(t)
	a := join(t, b, "alpha", func(c *fleet.Config) { c.Labels = map[string]string{"os": "linux"} })
	beta := join(t, b, "beta", func(c *fleet.Config) {
		c.Labels = map[string]string{"gpu": "1"}
		c.Status = func() fleet.Status {
			return fleet.Status{Capacity: fleet.Capacity{MaxRunning: 4, Running: 1}, Running: []string{"ae-1"}}
		}
	})
	m := waitMember(t, a, "beta", fleet.Live)
	if m.Labels["gpu"] != "1" || m.Capacity.MaxRunning != 4 || m.Capacity.Running != 1 || len(m.Running) != 1 || m.Running[0] != "ae-1" || m.Self {
		t.Fatalf("alpha sees beta as %+v", m)
	}
	if self := waitMember(t, beta, "beta", fleet.Live); !self.Self {
		t.Fatalf("beta does not see itself as self: %+v", self)
	}
	if got := waitMember(t, beta, "alpha", fleet.Live); got.Labels["os"] != "linux" {
		t.Fatalf("beta sees alpha as %+v", got)
	}
	if err := beta.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitMember(t, a, "beta", fleet.Left)
}

func TestAHostThatStopsBeatingIsLost(t *testing.T) {
	b := fixtures.StartNATS(t)
	a := join(t, b, "alpha", nil)
	// gamma's connection closes without a last heartbeat, as when its
	// process dies.
	nc, js := fixtures.ConnectJetStream(t, b, "")
	if _, err := fleet.Join(t.Context(), fleet.Config{Conn: nc, JS: js, Stream: b.StreamName(), Name: "gamma", Lease: 500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	waitMember(t, a, "gamma", fleet.Live)
	nc.Close()
	lost := waitMember(t, a, "gamma", fleet.Lost)
	if since := time.Since(lost.Heard); since < 500*time.Millisecond {
		t.Fatalf("gamma taken for lost %s after its last heartbeat, before its lease of 500ms", since)
	}
	// Its name is free again once its lease is over.
	join(t, b, "gamma", nil)
	waitMember(t, a, "gamma", fleet.Live)
}

func TestALiveHostsNameIsRefused(t *testing.T) {
	b := fixtures.StartNATS(t)
	join(t, b, "alpha", func(c *fleet.Config) { c.Lease = time.Minute })
	nc, js := fixtures.ConnectJetStream(t, b, "")
	_, err := fleet.Join(t.Context(), fleet.Config{Conn: nc, JS: js, Stream: b.StreamName(), Name: "alpha"})
	if err == nil || !strings.Contains(err.Error(), "held by a live daemon") {
		t.Fatalf("second alpha joined: %v", err)
	}
	// The same host's next process (same home) takes the name over from
	// a previous one that died.
	nc2, js2 := fixtures.ConnectJetStream(t, b, "")
	home := func(c *fleet.Config) { c.Home, c.Lease = "machine-1", time.Minute }
	cfg := fleet.Config{Conn: nc2, JS: js2, Stream: b.StreamName(), Name: "delta"}
	home(&cfg)
	if _, err := fleet.Join(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	nc2.Close()
	join(t, b, "delta", home)
	for _, bad := range []string{"", "a.b", "-x", strings.Repeat("x", fleet.MaxNameLength+1), "a b"} {
		if _, err := fleet.Join(t.Context(), fleet.Config{Conn: nc, JS: js, Stream: b.StreamName(), Name: bad}); err == nil || !strings.Contains(err.Error(), "want 1 to") {
			t.Fatalf("host name %q: %v, want it refused with what is accepted", bad, err)
		}
	}
}

func TestForwardReachesTheHost(t *testing.T) {
	b := fixtures.StartNATS(t)
	a := join(t, b, "alpha", nil)
	seen := make(chan *http.Request, 1)
	join(t, b, "beta", func(c *fleet.Config) {
		c.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			seen <- r
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"got":`+string(body)+`}`)
		})
	})
	req, _ := http.NewRequest("POST", "http://alpha/v1/executions/ae-1/messages?x=1", nil)
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Idempotency-Key", "k-1")
	ans, err := a.Forward(t.Context(), "beta", req, []byte(`{"type":"answer"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != http.StatusAccepted || string(ans.Body) != `{"got":{"type":"answer"}}` ||
		ans.Header.Get("Content-Type") != "application/json" || ans.Header.Get(fleet.HostHeader) != "beta" {
		t.Fatalf("answer %d %q %v", ans.Status, ans.Body, ans.Header)
	}
	r := <-seen
	if r.Method != "POST" || r.URL.RequestURI() != "/v1/executions/ae-1/messages?x=1" || r.Header.Get("Idempotency-Key") != "k-1" {
		t.Fatalf("beta got %s %s %v", r.Method, r.URL.RequestURI(), r.Header)
	}
	if r.Header.Get("Authorization") != "" {
		t.Fatal("the caller's credentials travelled to the host")
	}
	if _, has := r.Context().Deadline(); !has {
		t.Fatal("the forwarded request has no deadline")
	}
	// A host no daemon answers for.
	if _, err := a.Forward(t.Context(), "nobody", req, nil); !errors.Is(err, fleet.ErrUnreachable) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("forward to a host nobody answers for: %v", err)
	}
}

func TestParseLabel(t *testing.T) {
	for _, tc := range []struct {
		in, key, value string
		ok             bool
	}{
		{"gpu=1", "gpu", "1", true},
		{"os=linux", "os", "linux", true},
		{"zone=eu-west.1a", "zone", "eu-west.1a", true},
		{"empty=", "empty", "", true},
		{"novalue", "", "", false},
		{"=x", "", "", false},
		{"sp ace=x", "", "", false},
		{"k=a\nb", "", "", false},
	} {
		k, v, err := fleet.ParseLabel(tc.in)
		if (err == nil) != tc.ok || k != tc.key || v != tc.value {
			t.Errorf("ParseLabel(%q) = %q, %q, %v", tc.in, k, v, err)
		}
		if err != nil && !strings.Contains(err.Error(), "want key=value") {
			t.Errorf("ParseLabel(%q): %v does not say what is accepted", tc.in, err)
		}
	}
}

func TestDefaultNameIsStableAndValid(t *testing.T) {
	a, b := fleet.DefaultName("/data/one"), fleet.DefaultName("/data/two")
	if a == b || a != fleet.DefaultName("/data/one") {
		t.Fatalf("default names %q %q", a, b)
	}
	for _, n := range []string{a, b} {
		if err := fleet.ValidName(n); err != nil {
			t.Fatal(err)
		}
	}
}
