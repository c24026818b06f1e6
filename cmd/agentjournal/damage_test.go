package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	url, _, stop := startServe(t, dir)
	waitHealth(t, url, func(h map[string]any) bool { return h["lag"] == float64(0) && h["status"] == "ok" })
	stop()

	blocks, err := filepath.Glob(filepath.Join(dir, "nats", "jetstream", "*", "streams", "*", "msgs", "*.blk"))
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

	url, _, _ = startServe(t, dir)
	h := waitHealth(t, url, func(h map[string]any) bool { return h["status"] == "damaged" })
	damaged, _ := h["damaged"].([]any)
	var named int
	for _, d := range damaged {
		for _, id := range ids {
			if strings.Contains(d.(string), id) {
				named++
			}
		}
	}
	if named == 0 {
		t.Fatalf("healthz %v names none of the journals %v", h, ids)
	}
}

// waitHealth polls /healthz until ok holds for its answer.
func waitHealth(t *testing.T, url string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, h := call(t, "GET", url+"/healthz", "", nil)
		if code == 200 && ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz: %d %v", code, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
