package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
)

// TestDaemonOnAFullDisk runs the daemon on a small disk and fills it: a
// write is answered 507 disk_full, saying where and how much space is
// missing, the CLI prints that, /healthz reports it; once the filler is
// removed, writes are taken again by the same daemon and /healthz is ok.
// Nothing stored before the disk filled is lost: the journal reads back
// whole, with every sequence.
func TestDaemonOnAFullDisk(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := fixtures.MountTmpfs(t, 64<<20)
	id := demoID(t, dir, "disk-full")
	url, token, stop := startServe(t, dir)
	h := waitHealth(t, url, token, func(h map[string]any) bool { return h["status"] == "ok" && h["lag"] == float64(0) })
	storage, _ := h["storage"].(map[string]any)
	if storage == nil || storage["full"] != false || storage["dataDir"] != dir {
		t.Fatalf("healthz storage before the disk filled = %v, want not full, dataDir %s", h["storage"], dir)
	}

	send := func(msgID string) (int, map[string]any) {
		return call(t, "POST", url+"/v1/executions/"+id+"/messages", token,
			map[string]any{"messageId": msgID, "type": "prompt", "payload": map[string]any{"text": msgID}})
	}
	var sent []string
	for i := range 5 {
		msgID := fmt.Sprintf("before-%d", i)
		if code, body := send(msgID); code != 200 {
			t.Fatalf("message %s before the disk filled: %d %v, want 200", msgID, code, body)
		}
		sent = append(sent, msgID)
	}
	records := recordLines(t, url, token, id)

	filler := fixtures.FillDisk(t, filepath.Join(dir, "filler"))
	h = waitHealth(t, url, token, func(h map[string]any) bool { return h["status"] == "disk_full" })
	storage, _ = h["storage"].(map[string]any)
	free, _ := storage["freeBytes"].(float64)
	reserve, _ := storage["reserveBytes"].(float64)
	if storage["full"] != true || free >= reserve || reserve <= 0 {
		t.Errorf("healthz storage on a full disk = %v, want full, freeBytes below a reserveBytes above 0", storage)
	}

	code, body := send("while-full")
	e, _ := body["error"].(map[string]any)
	msg := fmt.Sprint(e["message"])
	if code != 507 || e["code"] != "disk_full" {
		t.Fatalf("message on a full disk: %d %v, want 507 code disk_full", code, body)
	}
	t.Logf("507: %s", msg)
	for _, want := range []string{"the disk holding the data directory " + dir + " is full", "free", "free at least", "writes resume by themselves", "no restart"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the 507 message %q does not say %q", msg, want)
		}
	}
	r := run(t, dir, "send", id, "from the CLI")
	if r.code != exitError || !strings.Contains(r.stderr, "disk_full: the disk holding the data directory "+dir+" is full") {
		t.Errorf("send on a full disk: exit %d, stderr %q; want exit 1 printing the disk_full message", r.code, r.stderr)
	}
	t.Logf("send prints: %s", r.stderr)
	// Reads go on.
	if code, body := call(t, "GET", url+"/v1/executions/"+id, token, nil); code != 200 {
		t.Errorf("read on a full disk: %d %v, want 200", code, body)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, url, token, func(h map[string]any) bool {
		s, _ := h["storage"].(map[string]any)
		return h["status"] == "ok" && s != nil && s["full"] == false
	})
	if code, body := send("after-full"); code != 200 {
		t.Fatalf("message once space was freed: %d %v, want 200 from the same daemon", code, body)
	}
	sent = append(sent, "after-full")

	// Every record from before is there, unchanged, and the journal's
	// sequence has no hole: the refused writes left nothing behind.
	after := recordLines(t, url, token, id)
	if len(after) <= len(records) {
		t.Fatalf("the journal has %d records after the write that followed the full disk, want more than the %d before", len(after), len(records))
	}
	for i, line := range records {
		if after[i] != line {
			t.Errorf("record %d changed across the full disk:\n%s\nwas:\n%s", i+1, after[i], line)
		}
	}
	for i, line := range after {
		var rec struct {
			Sequence uint64 `json:"sequence"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Sequence != uint64(i+1) {
			t.Errorf("record %d of the journal has sequence %d (%v), want %d: %s", i+1, rec.Sequence, err, i+1, line)
		}
	}
	all := strings.Join(after, "\n")
	for _, m := range sent {
		if !strings.Contains(all, `"messageId":"`+m+`"`) {
			t.Errorf("message %s is not in the journal", m)
		}
	}
	for _, m := range []string{"while-full", "from the CLI"} {
		if strings.Contains(all, m) {
			t.Errorf("the refused message %q is in the journal", m)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the test ran past its deadline: %v", ctx.Err())
	}
	if r := stop(); r.code != 0 {
		t.Fatalf("serve exit %d after the full disk: %s", r.code, r.stderr)
	}
	// And the log as a whole reads back without a hole.
	mustRun(t, dir, "journal", "verify")
}

// recordLines is the journal of execution id as the daemon serves it, one
// record's JSON a line.
func recordLines(t *testing.T, url, token, id string) []string {
	t.Helper()
	var lines []string
	for _, r := range journalRecords(t, url, token, id) {
		lines = append(lines, mustJSON(r))
	}
	return lines
}
