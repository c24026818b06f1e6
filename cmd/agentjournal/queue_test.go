package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestQueueThroughTheDaemon: with --max-running 1, launch --dispatch-mode
// queued waits behind a running agent, queue lists it (plain and --json),
// and after the daemon restarts on the same data directory, with the
// running agent gone, it starts.
func TestQueueThroughTheDaemon(t *testing.T) {
	dir := t.TempDir()
	agent := fixtures.AgentBinary(t)
	_, _, stop := startServe(t, dir, "--max-running", "1")
	first := launched(t, dir, "--", agent, "sleep:60s")
	awaitState(t, dir, first, "first running", func(st execution.State) bool { return st.Lifecycle == eventstore.LifecycleRunning })
	queued := launched(t, dir, "--dispatch-mode", "queued", "--origin-surface", "web",
		"--origin-product", "claw-cowork", "--prompt", "hello", "--", agent, "echo:1")

	plain := mustRun(t, dir, "queue")
	if !strings.Contains(plain, "running 1 (limit 1), waiting 1") || !strings.Contains(plain, queued) ||
		!strings.Contains(plain, "queued") || !strings.Contains(plain, "web/claw-cowork") {
		t.Fatalf("queue printed:\n%s\nwant %s queued from web/claw-cowork behind the one running", plain, queued)
	}
	var q client.Queue
	if err := json.Unmarshal([]byte(mustRun(t, dir, "queue", "--json")), &q); err != nil {
		t.Fatal(err)
	}
	if len(q.Queued) != 1 || q.Queued[0].AgentExecutionID != queued || q.Queued[0].Position != 1 ||
		q.Queued[0].DispatchContext.OriginSurface != eventstore.OriginWeb {
		t.Fatalf("queue --json: %+v, want %s at position 1 from web", q, queued)
	}
	awaitState(t, dir, queued, "queued and waiting", func(st execution.State) bool {
		return st.Lifecycle == eventstore.LifecycleStarting && strings.HasPrefix(st.LifecycleReason, "queued")
	})

	// The daemon stops its agents (--on-stop=stop); the queued run stays
	// queued in the data directory.
	if r := stop(); r.code != exitOK {
		t.Fatalf("serve stopped: exit %d\n%s", r.code, r.stderr)
	}
	startServe(t, dir, "--max-running", "1")
	st := awaitState(t, dir, queued, "the queued run completed after the restart", func(st execution.State) bool { return st.Lifecycle.Final() })
	if st.Lifecycle != eventstore.LifecycleCompleted || st.DispatchContext == nil || st.DispatchContext.OriginProductID != "claw-cowork" {
		t.Fatalf("queued run ended %s (%s), dispatch %+v; want completed, from claw-cowork", st.Lifecycle, st.LifecycleReason, st.DispatchContext)
	}
	if out := mustRun(t, dir, "queue"); !strings.Contains(out, "waiting 0") {
		t.Fatalf("queue after the start:\n%s\nwant none waiting", out)
	}
}

func TestDispatchUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"launch", "--dispatch-mode", "later", "--", "x"}, "--dispatch-mode"},
		{[]string{"launch", "--origin-surface", "fax", "--", "x"}, "--origin-surface"},
		{[]string{"launch", "--origin-product", "no spaces", "--", "x"}, "--origin-product"},
		{[]string{"launch", "--scheduled-for", "tomorrow", "--", "x"}, "--scheduled-for"},
		{[]string{"launch", "--dispatch-mode", "queued", "--scheduled-for", "1h", "--", "x"}, "--scheduled-for"},
		{[]string{"serve", "--max-running", "-1"}, "--max-running"},
		{[]string{"queue", "extra"}, "extra"},
	} {
		r := run(t, t.TempDir(), tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.flag) {
			t.Errorf("%s: exit %d, want %d naming %s; stderr:\n%s", strings.Join(tc.args, " "), r.code, exitUsage, tc.flag, r.stderr)
		}
	}
}
