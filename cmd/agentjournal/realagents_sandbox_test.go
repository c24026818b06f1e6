//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
)

// TestRealAgentSandboxed runs the real Claude Code, Codex and Copilot CLI
// under launch --sandbox through a daemon (Claude Code's supervisor
// outside the sandbox, the others' turns each sandboxed): the model has
// it read the daemon's API token, write in its working directory and outside
// it. The CLI runs (its state directory writable, the model server
// reached on loopback) and its run completes with its usage; the token is
// not there, the write outside fails, the one inside lands.
func TestRealAgentSandboxed(t *testing.T) {
	t.Parallel()
	eachCLI(t, testRealAgentSandboxed)
}

func testRealAgentSandboxed(t *testing.T, c realCLI) {
	h := newSandboxHost(t)
	url, token, _ := startServe(t, h.data)
	command := "cat " + filepath.Join(h.data, "api-token") + "; echo inside > made-in-sandbox; echo x > " + filepath.Join(h.outside, "escaped")
	sc := modelserver.Scenario{Turns: []modelserver.Turn{
		{Text: "I will run a command.", ToolCalls: []modelserver.ToolCall{c.shell("toolu_sandbox_1", command)},
			Usage: modelserver.Usage{InputTokens: 200, OutputTokens: 30, CacheReadInputTokens: 100}},
		{Text: "Finished.", Usage: modelserver.Usage{InputTokens: 260, OutputTokens: 12}},
	}}
	srv := modelserver.Start(t, sc)
	args := append([]string{"launch", "--sandbox", "--agent", c.agent, "--shape", "one-shot", "--prompt", "Run the command"},
		agentArgs(t, c, srv.URL(), h.work)...)
	if c.agent == "copilot" {
		// Copilot CLI asks no one under a daemon: its tools, and paths
		// outside its directory, are allowed on its command line, or it
		// denies them before the sandbox is tried.
		args = append(args, "--allow-all-tools", "--allow-all-paths")
	}
	id := strings.TrimSpace(mustRunReal(t, h.data, args...))
	st := awaitReal(t, h.data, id, "the permission request", func(st execution.State) bool { return st.AwaitingInput() || st.Lifecycle.Final() })
	if st.AwaitingInput() {
		mustRunReal(t, h.data, "send", id, "--answer", st.LastInputRequest.RequestID, eventstore.AnswerAllow)
	}
	st = awaitReal(t, h.data, id, "the end", func(st execution.State) bool { return st.Lifecycle.Final() })
	r := &realRun{cli: c, srv: srv, sc: sc, work: h.work, records: readJournalAPI(t, url, token, id)}
	if st.Lifecycle != eventstore.LifecycleCompleted {
		r.failf(t, "ended %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	r.checkUsage(t)
	if msgs := messageTexts(r.records); !slices.Contains(msgs, "Finished.") {
		r.failf(t, "messages %q, want the model's last answer", msgs)
	}
	h0, ok := r.records[0].(*eventstore.Header)
	if !ok || h0.Sandbox == nil || !slices.Contains(h0.Sandbox.Hidden, h.data) {
		r.failf(t, "the header does not say the agent ran sandboxed with %s hidden: %+v", h.data, r.records[0])
	}
	conv := srv.Conversation()
	if len(conv) < 2 {
		r.failf(t, "the CLI made %d conversation requests, want the tool's result sent back", len(conv))
	}
	res, _ := conv[1].ToolResult("toolu_sandbox_1")
	for _, want := range []string{"api-token: No such file or directory", "Read-only file system"} {
		if !strings.Contains(res.Content, want) {
			r.failf(t, "the tool's result %q, want it to say %q", res.Content, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(h.work, "made-in-sandbox")); err != nil || strings.TrimSpace(string(data)) != "inside" {
		r.failf(t, "the file written in the working directory: %q, %v; want inside", data, err)
	}
	if fileExists(filepath.Join(h.outside, "escaped")) {
		r.failf(t, "the agent wrote outside its working directory")
	}
}
