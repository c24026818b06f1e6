package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
)

// TestSendAnswersOnlyTheOpenRequest: `send --answer` to a request that is
// not open exits 1 naming the open one, instead of printing "delivered";
// the answer to the open one reaches the agent.
func TestSendAnswersOnlyTheOpenRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	id := launched(t, dir, "--", fixtures.AgentBinary(t), "ask:q1:Which branch?", "wait")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, st := call(t, "GET", url+"/v1/executions/"+id, token, nil)
		if st["currentInputRequestId"] == "q1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("q1 never opened: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := run(t, dir, "send", id, "--answer", "q9", "yes")
	if r.code != exitError || !strings.Contains(r.stderr, "q9") || !strings.Contains(r.stderr, "open input request") || !strings.Contains(r.stderr, "q1") {
		t.Fatalf("send --answer q9: exit %d, stdout %q, stderr %q; want exit 1 naming q9 and the open q1", r.code, r.stdout, r.stderr)
	}
	if out := mustRun(t, dir, "send", id, "--answer", "q1", "main"); !strings.Contains(out, "delivered") {
		t.Fatalf("send --answer q1 printed %q, want it delivered", out)
	}
}
