package codex

import (
	"fmt"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// turns runs each process's lines through one driver, as the runtime runs
// the turns of one execution, and returns every event.
func turns(t *testing.T, version string, before agent.Tokens, processes ...[][]byte) []agent.Event {
	t.Helper()
	d := Agent{}.NewDriver(nil, eventstore.ShapeConversation).(*Driver)
	d.SetAgentVersion(version)
	if before != (agent.Tokens{}) {
		d.CountedBefore(before)
	}
	var evs []agent.Event
	for i, lines := range processes {
		evs = append(evs, agenttest.Process(t, d, fmt.Sprintf("out%d", i+1), lines)...)
	}
	agenttest.CheckEvents(t, evs)
	return evs
}

// TestCodexUsageByVersion: an execution's totals over the processes of a
// two-turn conversation, by what the version's turn.completed counts. They
// never go down.
func TestCodexUsageByVersion(t *testing.T) {
	c := agenttest.CapturesByName(t)
	thread := [][][]byte{c["real/resume-1.jsonl"], c["real/resume-2.jsonl"]}
	perProcess := [][][]byte{c["written/per-process-1.jsonl"], c["written/per-process-2.jsonl"]}
	for _, tc := range []struct {
		name, version string
		processes     [][][]byte
		trail         []string
	}{
		// 0.169.0: the thread's totals, the second process's included.
		{"thread totals", "0.169.0", thread, []string{"in=100 out=4 total=104", "in=280 out=9 total=289"}},
		// 0.150: each process's own usage, which adds up.
		{"per process", "0.150.1", perProcess, []string{"in=133712 out=937 total=134649", "in=156616 out=965 total=157581"}},
		// Unknown: read as thread totals until a total goes down, which
		// only a per-process count does.
		{"per process, version unknown", "", perProcess, []string{"in=133712 out=937 total=134649", "in=156616 out=965 total=157581"}},
		{"thread totals, version unknown", "", thread, []string{"in=100 out=4 total=104", "in=280 out=9 total=289"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := agenttest.UsageTrail(turns(t, tc.version, agent.Tokens{}, tc.processes...))
			if len(got) != len(tc.trail) || got[len(got)-1] != tc.trail[len(tc.trail)-1] {
				t.Fatalf("totals after each usage %q, want %q", got, tc.trail)
			}
			for i := range got {
				if got[i] != tc.trail[i] {
					t.Errorf("totals after usage %d: %s, want %s", i+1, got[i], tc.trail[i])
				}
			}
		})
	}
}

// TestCodexResumedExecutionCountsItsOwn: a new execution resuming a thread
// counts only its own process's tokens, not the thread's turns that the
// resumed execution counted already.
func TestCodexResumedExecutionCountsItsOwn(t *testing.T) {
	c := agenttest.CapturesByName(t)
	for _, tc := range []struct {
		name, version string
		before        agent.Tokens
		lines         [][]byte
		want          string
	}{
		// resume-2 reports the thread's 280/9, of which 100/4 were the
		// resumed execution's.
		{"thread totals", "0.169.0", agent.Tokens{Input: 100, Output: 4}, c["real/resume-2.jsonl"], "in=180 out=5 total=185"},
		{"per process", "0.150.1", agent.Tokens{Input: 133712, Output: 937}, c["written/per-process-2.jsonl"], "in=22904 out=28 total=22932"},
		{"per process, version unknown", "", agent.Tokens{Input: 133712, Output: 937}, c["written/per-process-2.jsonl"], "in=22904 out=28 total=22932"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := agenttest.FinalUsage(turns(t, tc.version, tc.before, tc.lines)).String(); got != tc.want {
				t.Errorf("the resumed execution's totals %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCodexFailedMCPCallError: a failed MCP call whose error is in its
// result is recorded with that text as its error.
func TestCodexFailedMCPCallError(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, agenttest.CapturesByName(t)["written/mcp-failed.jsonl"]...)
	ends := agenttest.ToolEnds(evs)
	if len(ends) != 1 || ends[0].Status != eventstore.ToolCallFailed || ends[0].Error != "search failed: index not built" {
		t.Fatalf("tool call ends %+v, want docs.search failed with the result's text as its error", ends)
	}
}

func TestCodexPerProcessVersions(t *testing.T) {
	for v, want := range map[string]bool{"0.147.0": true, "0.150.1": true, "0.151.0": false, "0.169.0": false, "0.146.9": false, "": false} {
		if got := agent.InRange(v, perProcessUsage[0], perProcessUsage[1]); got != want {
			t.Errorf("%q reports per process: %v, want %v", v, got, want)
		}
	}
}
