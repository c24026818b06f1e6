package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// endedByTimeout checks that a journal keeps its limit in the header and
// ends with the interruption of that limit, then the final state.
func endedByTimeout(t *testing.T, recs []eventstore.Record, ms int64) {
	t.Helper()
	if h, ok := recs[0].(*eventstore.Header); !ok || h.TimeoutMs != ms {
		t.Fatalf("header %+v, want timeoutMs %d", recs[0], ms)
	}
	n := len(recs)
	if in, ok := recs[n-2].(*eventstore.Interruption); !ok || in.Reason != eventstore.InterruptTimeout {
		t.Fatalf("record before the last: %+v, want an interruption with reason timeout", recs[n-2])
	}
	if st, ok := recs[n-1].(*eventstore.StateChanged); !ok || !st.Lifecycle.Final() || !strings.HasPrefix(st.Reason, "timed out after") {
		t.Fatalf("last record: %+v, want the final state, timed out", recs[n-1])
	}
}

// TestRunTimeout: run --timeout stops the agent once it has run that long;
// run exits 1, the agent having been cancelled.
func TestRunTimeout(t *testing.T) {
	dir := t.TempDir()
	r := run(t, dir, "run", "--timeout", "300ms", "--", fixtures.AgentBinary(t), "sleep:60s")
	if r.code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitError, r.stderr)
	}
	endedByTimeout(t, journalOf(t, dir, launchedID(t, r.stderr)), 300)
}

// TestLaunchTimeout: launch --timeout reaches the daemon, which stops the
// agent at the limit.
func TestLaunchTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServe(t, dir)
	id := launched(t, dir, "--timeout", "300ms", "--", fixtures.AgentBinary(t), "sleep:60s")
	awaitState(t, dir, id, "the end at the time limit", func(st execution.State) bool { return st.Lifecycle.Final() })
	endedByTimeout(t, journalOf(t, dir, id), 300)
}

func TestTimeoutUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--timeout", "-1s", "--", "x"},
		{"run", "--timeout", "200h", "--", "x"},
		{"launch", "--timeout", "-1s", "--", "x"},
		{"launch", "--timeout", "30d", "--", "x"},
	} {
		r := run(t, t.TempDir(), args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--timeout") {
			t.Errorf("%s: exit %d, want %d naming --timeout; stderr:\n%s", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
}
