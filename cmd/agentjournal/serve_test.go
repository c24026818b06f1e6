package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"

	"github.com/agentjournal/agentjournal/fixtures"
)

// startServe runs serve on dir until the test ends and returns its address
// and token.
func startServe(t *testing.T, dir string, args ...string) (url, token string, stop func() result) {
	t.Helper()
	fixtures.KillSupervised(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	var stdout, stderr syncBuffer
	go func() {
		// The daemon logs from its request handlers while its main
		// goroutine prints too.
		m := Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" },
			HomeDir: func() (string, error) { return dir, nil }}
		serve := []string{"serve", "--listen", "127.0.0.1:0"}
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--on-stop") }) {
			// A test's daemon stops the agents it ran, unless the test is
			// about leaving them.
			serve = append(serve, "--on-stop=stop")
		}
		code := m.Run(ctx, append([]string{"--data", dir}, append(serve, args...)...))
		done <- result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}()
	stopped := false
	stop = func() result {
		if stopped {
			return result{}
		}
		stopped = true
		cancel()
		select {
		case r := <-done:
			return r
		case <-time.After(60 * time.Second):
			t.Fatal("serve did not stop")
		}
		return result{}
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, err := os.ReadFile(daemon.Layout{Dir: dir}.DaemonInfo())
		if err == nil {
			var info daemon.Info
			if json.Unmarshal(data, &info) == nil {
				tok, err := os.ReadFile(info.TokenFile)
				if err != nil {
					t.Fatal(err)
				}
				return info.URL, strings.TrimSpace(string(tok)), stop
			}
		}
		select {
		case r := <-done:
			t.Fatalf("serve exited: %d\n%s", r.code, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not write daemon.json; stderr so far:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, url, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestServeRunsTheWholeDaemon(t *testing.T) {
	dir := t.TempDir()
	url, token, stop := startServe(t, dir)
	if info, err := os.Stat(daemon.Layout{Dir: dir}.TokenFile()); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", info, err)
	}
	if code, _ := call(t, "GET", url+"/healthz", "", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if code, _ := call(t, "GET", url+"/v1/executions", "", nil); code != 401 {
		t.Fatalf("list without a token: %d, want 401", code)
	}
	agent := fixtures.AgentBinary(t)
	code, out := call(t, "POST", url+"/v1/executions", token, map[string]any{
		"ownerEntity": "Task", "ownerId": "t-1", "agent": "generic",
		"command": []string{agent, `signal:{"type":"needs_input","payload":{"requestId":"r1","question":"go?"}}`, "wait"}})
	if code != 201 {
		t.Fatalf("launch: %d %v", code, out)
	}
	ref := out["reference"].(map[string]any)
	id := ref["agentExecutionId"].(string)
	// The policy decides, the projection shows the open request.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, st := call(t, "GET", url+"/v1/executions/"+id, token, nil)
		if code == 200 && strings.Contains(mustJSON(st), `"currentInputRequestId":"r1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input request never showed: %d %s", code, mustJSON(st))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := stop()
	if r.code != 0 {
		t.Fatalf("serve exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(daemon.Layout{Dir: dir}.DaemonInfo()); !os.IsNotExist(err) {
		t.Fatalf("daemon.json left behind: %v", err)
	}
}

func TestServeRefusesAnOpenListenWithoutToken(t *testing.T) {
	r := run(t, t.TempDir(), "serve", "--listen", "0.0.0.0:0")
	if r.code != 2 || !strings.Contains(r.stderr, "token-file") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// rebuild with a daemon running asks the daemon, which rebuilds while it
// keeps serving; without one it would find the data directory locked.
func TestRebuildThroughTheDaemon(t *testing.T) {
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	code, out := call(t, "POST", url+"/v1/executions", token, map[string]any{
		"ownerEntity": "Task", "ownerId": "t-rebuild", "agent": "generic", "command": []string{agent}})
	if code != 201 {
		t.Fatalf("launch: %d %v", code, out)
	}
	id := out["reference"].(map[string]any)["agentExecutionId"].(string)
	var before string
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := run(t, dir, "show", id, "--json")
		// The state's own lifecycle, not a timeline item's: show may read
		// the timeline a record ahead of the state.
		var st execution.State
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &st) == nil && st.Lifecycle == eventstore.LifecycleCompleted {
			before = r.stdout
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the execution never completed: %d %s %s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := run(t, dir, "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, "The daemon rebuilt") || !strings.Contains(r.stdout, "1 executions") {
		t.Fatalf("rebuild with a daemon running: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if after := mustRun(t, dir, "show", id, "--json"); after != before {
		t.Fatalf("the daemon serves another state after the rebuild:\n%s\nbefore:\n%s", after, before)
	}
}
