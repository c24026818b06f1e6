package daemon_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
)

// hostOf is the host:port of a daemon's URL.
func hostOf(t *testing.T, d *daemon.Daemon) string {
	t.Helper()
	u, err := url.Parse(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// rawGet sends GET path with the Host header host over conn, keeping the
// connection alive, and returns the answer's status.
func rawGet(t *testing.T, conn net.Conn, br *bufio.Reader, host, path, token string) int {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, host, auth); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A request whose Host header names another site (a page that pointed its
// own DNS name at the daemon) is refused, saying what is accepted; loopback
// names and addresses, and the names given, are answered.
func TestHostHeaderChecked(t *testing.T) {
	d := openDaemon(t, func(c *daemon.Config) {
		c.Listen, c.AllowedHosts = "127.0.0.1:0", []string{"aj.internal"}
		c.NoSearch, c.NoPolicy = true, true
	})
	addr := hostOf(t, d)
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		host string
		want int
	}{
		{addr, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"localhost", http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"aj.internal:" + port, http.StatusOK},
		{"AJ.internal", http.StatusOK},
		{"evil.example", http.StatusMisdirectedRequest},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"localhost.evil.example", http.StatusMisdirectedRequest},
		{"10.9.8.7:" + port, http.StatusMisdirectedRequest},
	} {
		req, err := http.NewRequest("GET", d.URL()+"/v1/executions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		req.Header.Set("Authorization", "Bearer "+d.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s: got %d %s, want %d", tc.host, resp.StatusCode, body, tc.want)
			continue
		}
		if tc.want != http.StatusOK && (!strings.Contains(string(body), "--allowed-host") || !strings.Contains(string(body), `"forbidden"`)) {
			t.Errorf("Host %s: refusal %s, want the API's error shape naming --allowed-host", tc.host, body)
		}
	}
}

// The configuration refuses an allowed host that is not a name.
func TestAllowedHostsChecked(t *testing.T) {
	cfg := daemon.DefaultConfig(t.TempDir())
	cfg.AllowedHosts = []string{"aj.internal:7600", "http://aj", ""}
	cfg.IdleTimeout, cfg.MaxConns = -1, -1
	err := cfg.Validate()
	for _, want := range []string{`"aj.internal:7600" is not a host name`, `"http://aj" is not a host name`, "an empty name", "IdleTimeout -1ns is negative", "MaxConns -1 is negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %s", err, want)
		}
	}
}

// closedByServer reports whether the server closes conn within a long
// bound (the assertion is that it closes, not how fast).
func closedByServer(conn net.Conn, br *bufio.Reader) error {
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := br.ReadByte()
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), err != nil && strings.Contains(err.Error(), "reset by peer"):
		return nil
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("still open after 30s")
	case err == nil:
		return errors.New("the server sent a byte unasked")
	}
	return err
}

// Connections that stay idle are closed: those that sent one request and
// then nothing after IdleTimeout, those that never sent a whole request
// after ReadHeaderTimeout.
func TestIdleConnectionsClosed(t *testing.T) {
	d := openDaemon(t, func(c *daemon.Config) {
		c.Listen = "127.0.0.1:0"
		c.IdleTimeout, c.ReadHeaderTimeout = 200*time.Millisecond, 200*time.Millisecond
		c.NoSearch, c.NoPolicy = true, true
	})
	addr := hostOf(t, d)
	const n = 40
	type held struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var conns []held
	for i := range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		h := held{conn, bufio.NewReader(conn)}
		switch i % 3 {
		case 0: // one request, then idle
			if code := rawGet(t, conn, h.br, addr, "/healthz", ""); code != http.StatusOK {
				t.Fatalf("GET /healthz: %d", code)
			}
		case 1: // half a request
			fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n", addr)
		}
		conns = append(conns, h)
	}
	for i, h := range conns {
		if err := closedByServer(h.conn, h.br); err != nil {
			t.Errorf("connection %d (kind %d): %v, want it closed by the daemon", i, i%3, err)
		}
	}
}

// Beyond MaxConns a connection is not served until another closes.
func TestConnectionsCapped(t *testing.T) {
	d := openDaemon(t, func(c *daemon.Config) {
		c.Listen, c.MaxConns = "127.0.0.1:0", 3
		c.NoSearch, c.NoPolicy = true, true
	})
	addr := hostOf(t, d)
	var first net.Conn
	for i := range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if code := rawGet(t, conn, bufio.NewReader(conn), addr, "/healthz", ""); code != http.StatusOK {
			t.Fatalf("connection %d: GET /healthz: %d", i, code)
		}
		if i == 0 {
			first = conn
		}
	}
	extra, err := net.Dial("tcp", addr) // the kernel takes it; the daemon does not accept it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	br := bufio.NewReader(extra)
	fmt.Fprintf(extra, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a fourth connection was answered while three were held, want it to wait")
	}
	first.Close()
	extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the fourth connection once one closed: %v %v, want 200", resp, err)
	}
	resp.Body.Close()
}

// The read timeout bounds reading a request, not a handler that runs
// long: the event stream still delivers well after it.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	d := openDaemon(t, func(c *daemon.Config) {
		c.Listen, c.ReadTimeout = "127.0.0.1:0", 100*time.Millisecond
		c.NoSearch, c.NoPolicy = true, true
	})
	req, err := http.NewRequestWithContext(t.Context(), "GET", d.URL()+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events: %d", resp.StatusCode)
	}
	time.Sleep(500 * time.Millisecond) // five read timeouts
	ref := fixtures.WriteJournal(t, d.Store(), "ae-late", nil, false)
	got := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ref.AgentExecutionID) {
				got <- nil
				return
			}
		}
		got <- fmt.Errorf("the stream ended: %v", sc.Err())
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event of the new journal on the stream")
	}
}
