package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/daemon"
)

// TestDaemonReportsATruncatedLog: a block file of the log cut to 60% loses
// records the read model had applied; the daemon started on it says so in
// /healthz, naming the journals.
func TestDaemonReportsATruncatedLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ids []string
	for i := range 6 {
		ids = append(ids, demoID(t, dir, "seed-"+string(rune('a'+i))))
	}
	url, token, stop := startServe(t, dir)
	waitHealth(t, url, token, func(h map[string]any) bool { return h["lag"] == float64(0) && h["status"] == "ok" })
	stop()

	blocks, err := filepath.Glob(filepath.Join(daemon.Layout{Dir: dir}.NATSStore(), "jetstream", "*", "streams", "*", "msgs", "*.blk"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no block files (%v)", err)
	}
	info, err := os.Stat(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blocks[0], info.Size()*6/10); err != nil {
		t.Fatal(err)
	}

	url, token, _ = startServe(t, dir)
	h := waitHealth(t, url, token, func(h map[string]any) bool { return h["status"] == "damaged" })
	damaged, _ := h["damaged"].([]any)
	var hit []string
	for _, d := range damaged {
		for _, id := range ids {
			if strings.Contains(d.(string), id) {
				hit = append(hit, id)
			}
		}
	}
	if len(hit) == 0 {
		t.Fatalf("healthz %v names none of the journals %v", h, ids)
	}

	// A damaged journal takes no writes: the next one would reuse the
	// sequence of a record that was lost.
	_, before := call(t, "GET", url+"/v1/executions/"+hit[0], token, nil)
	code, body := call(t, "POST", url+"/v1/executions/"+hit[0]+"/messages", token,
		map[string]any{"messageId": "after-damage", "type": "prompt", "payload": map[string]any{"text": "x"}})
	e, _ := body["error"].(map[string]any)
	if code != 500 || e["code"] != "damaged" || !strings.Contains(fmt.Sprint(e["message"]), "takes no writes") {
		t.Fatalf("message to damaged journal %s: %d %v, want 500 code damaged saying it takes no writes", hit[0], code, body)
	}
	_, after := call(t, "GET", url+"/v1/executions/"+hit[0], token, nil)
	if before["journal"] == nil || fmt.Sprint(before["journal"]) != fmt.Sprint(after["journal"]) {
		t.Fatalf("the refused write changed the journal: %v, then %v", before["journal"], after["journal"])
	}
}

// waitHealth polls /healthz, with the API token, until ok holds for its
// answer.
func waitHealth(t *testing.T, url, token string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, h := call(t, "GET", url+"/healthz", token, nil)
		if code == 200 && ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz: %d %v", code, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCommandBesideTheDaemon: a command that needs the data directory
// itself (run), run while the daemon serves it, says so and names what
// works instead, rather than the bare lock error. The commands that read
// or write journals go through the daemon instead (through_daemon_test.go).
func TestCommandBesideTheDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, _, _ := startServe(t, dir)
	r := run(t, dir, "run", "--", "/bin/true")
	if r.code != exitError {
		t.Fatalf("run beside the daemon: exit %d, want %d; stderr %q", r.code, exitError, r.stderr)
	}
	for _, want := range []string{"served by the agentjournal daemon at " + url, "launch runs an agent in the daemon as run does", "--nats-url"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
}
