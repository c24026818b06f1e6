//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// TestRealAgentResumeUsage: the pinned Claude Code and Codex, a
// conversation of two turns, then a resume of its session in a new
// execution. The first execution counts exactly what the server sent for
// its two turns, never less after a later turn; the resumed one counts
// what the server sent for its own turn only, though Codex reports the
// thread's totals and Claude Code's modelUsage counts the session's
// earlier process. Each header names the CLI's version.
func TestRealAgentResumeUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	for _, c := range realCLIs {
		if c.agent != "claude-code" && c.agent != "codex" {
			continue
		}
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			sc := modelserver.Scenario{Turns: []modelserver.Turn{
				{Text: "First answer.", Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: "Second answer.", Usage: modelserver.Usage{InputTokens: 150, OutputTokens: 20}},
				{Text: "Resumed answer.", Usage: modelserver.Usage{InputTokens: 70, OutputTokens: 6}},
			}}
			srv := modelserver.Start(t, sc)
			work := t.TempDir()
			// One environment for both runs: the CLI's session files are
			// in its home.
			env := c.env(t, srv.URL())
			var envArgs []string
			for _, kv := range env {
				envArgs = append(envArgs, "--env", kv)
			}
			launch := append(append([]string{"launch", "--agent", c.agent, "--prompt", "First question", "--dir", work}, envArgs...), "--", realagent.Bin(t, c.name))
			id := strings.TrimSpace(mustRunReal(t, dir, launch...))
			awaitReal(t, dir, id, "the wait after turn 1", func(st execution.State) bool {
				return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 1
			})
			mustRunReal(t, dir, "send", id, "Second", "question")
			awaitReal(t, dir, id, "the wait after turn 2", func(st execution.State) bool {
				return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, id)) == 2
			})
			mustRunReal(t, dir, "stop", id)
			awaitReal(t, dir, id, "the end", func(st execution.State) bool { return st.Lifecycle.Final() })
			first := &realRun{cli: c, srv: srv, sc: sc, records: readJournalAPI(t, url, token, id)}
			first.checkUsage(t)
			checkVersion(t, first, realagent.Versions()[c.name])

			resume := append([]string{"resume", id, "--prompt", "Third question"}, envArgs...)
			rid := strings.TrimSpace(mustRunReal(t, dir, resume...))
			awaitReal(t, dir, rid, "the resumed run's wait after its turn", func(st execution.State) bool {
				return waitingForOperator(st) && turnsEnded(readJournalAPI(t, url, token, rid)) == 1
			})
			mustRunReal(t, dir, "stop", rid)
			awaitReal(t, dir, rid, "the resumed run's end", func(st execution.State) bool { return st.Lifecycle.Final() })
			resumed := &realRun{cli: c, srv: srv, sc: sc, records: readJournalAPI(t, url, token, rid)}
			checkVersion(t, resumed, realagent.Versions()[c.name])
			var in, out int64
			turns := 0
			for _, req := range srv.Conversation() {
				if req.Turn == 2 {
					u := c.usage(sc.Turns[2].Usage)
					in, out, turns = in+*u.InputTokens, out+*u.OutputTokens, turns+1
				}
			}
			if turns == 0 {
				resumed.failf(t, "the server answered no request of the resumed run")
			}
			steps := usageSteps(t, resumed.records)
			if len(steps) == 0 {
				resumed.failf(t, "the resumed run recorded no usage; the server sent in %d out %d for it", in, out)
			}
			total := in + out
			want := execution.Usage{InputTokens: &in, OutputTokens: &out, TotalTokens: &total}
			if got := steps[len(steps)-1]; fmtUsage(got) != fmtUsage(want) {
				resumed.failf(t, "the resumed run counts %s, want only its own turn's %s", fmtUsage(got), fmtUsage(want))
			}
			// The first execution is left as it was.
			if again := usageSteps(t, readJournalAPI(t, url, token, id)); fmtUsage(again[len(again)-1]) != fmtUsage(usageSteps(t, first.records)[len(again)-1]) {
				first.failf(t, "the resumed execution's totals changed after the resume")
			}
		})
	}
}

// checkVersion asserts that the run's header names the CLI's version.
func checkVersion(t *testing.T, r *realRun, want string) {
	t.Helper()
	h, ok := r.records[0].(*eventstore.Header)
	if !ok {
		r.failf(t, "the journal does not start with its header")
	}
	if h.AgentVersion != want {
		r.failf(t, "header agentVersion %q, want the pinned %q", h.AgentVersion, want)
	}
}
