package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

// The fork and resume commands, the API routes behind them, and replay
// through a fork's link, with the fixture agent.
func TestForkAndResumeCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	agent := fixtures.AgentBinary(t)
	work := t.TempDir()

	parent := launched(t, dir, "--dir", work, "--prompt", "prompt one", "--", agent,
		"echo:1", `signal:{"type":"message","payload":{"text":"answer one"}}`,
		"echo:1", `signal:{"type":"message","payload":{"text":"answer two"}}`)
	awaitState(t, dir, parent, "answer one", func(st execution.State) bool { return hasText(st, "answer one") })
	mustRun(t, dir, "send", parent, "prompt two")
	awaitState(t, dir, parent, "completion", func(st execution.State) bool { return st.Lifecycle == "completed" })
	var at float64
	for _, r := range journalRecords(t, url, token, parent) {
		if sig, ok := r["signal"].(map[string]any); ok && strings.Contains(mustJSON(sig), "answer one") {
			at = r["sequence"].(float64)
		}
	}
	journals := func() []string {
		code, out := call(t, "GET", url+"/v1/journals", token, nil)
		if code != 200 {
			t.Fatalf("journals: %d %v", code, out)
		}
		var ids []string
		for _, j := range out["journals"].([]any) {
			ids = append(ids, j.(map[string]any)["agentExecutionId"].(string))
		}
		slices.Sort(ids)
		return ids
	}
	before := journals()

	// Refused input: a clear error, nothing written.
	for _, tc := range []struct {
		name   string
		path   string
		body   map[string]any
		code   int
		saying string
	}{
		{"past the end", parent + "/fork", map[string]any{"at": 1000, "prompt": "p"}, 400, "want 1 to"},
		{"no at", parent + "/fork", map[string]any{"prompt": "p"}, 400, "at"},
		{"bad workspace", parent + "/fork", map[string]any{"at": at, "workspace": "copy", "prompt": "p"}, 400, "keep"},
		{"snapshot of a plain directory", parent + "/fork", map[string]any{"at": at, "workspace": "snapshot", "prompt": "p"}, 400, "keep or discard"},
		{"no prompt to follow the retelling", parent + "/fork", map[string]any{"at": at}, 400, "needs a prompt"},
		{"no such execution", "ae-000000000000000000000000/fork", map[string]any{"at": 1, "prompt": "p"}, 404, "no execution"},
		{"resume of no such execution", "ae-000000000000000000000000/resume", map[string]any{"prompt": "p"}, 404, "no execution"},
	} {
		code, out := call(t, "POST", url+"/v1/executions/"+tc.path, token, tc.body)
		if code != tc.code || !strings.Contains(mustJSON(out), tc.saying) {
			t.Errorf("%s: %d %v, want %d saying %q", tc.name, code, out, tc.code, tc.saying)
		}
		// A fork refused for its workspace is still journaled, as a
		// failed fork the error names; nothing else is.
		if m := regexp.MustCompile(`journaled as execution (ae-[0-9a-f]+), failed`).FindStringSubmatch(mustJSON(out)); m != nil {
			if tc.name != "snapshot of a plain directory" {
				t.Errorf("%s: journaled as %s", tc.name, m[1])
			}
			before = append(before, m[1])
			slices.Sort(before)
		} else if tc.name == "snapshot of a plain directory" {
			t.Errorf("%s: %v names no journaled failed fork", tc.name, out)
		}
	}
	if r := run(t, dir, "fork", parent, "--at", "1000", "--prompt", "p"); r.code != exitError || !strings.Contains(r.stderr, "want 1 to") {
		t.Errorf("fork past the end: exit %d %q, want 1 naming the sequences accepted", r.code, r.stderr)
	}
	if after := journals(); !slices.Equal(after, before) {
		t.Fatalf("journals after refused forks %v, want %v", after, before)
	}

	// A fork at the end of turn one, in a new empty directory.
	fork := strings.TrimSpace(mustRun(t, dir, "fork", parent, "--at", strings.TrimSuffix(mustJSON(at), ".0"), "--workspace", "discard", "--prompt", "prompt three"))
	if !strings.HasPrefix(fork, "ae-") || fork == parent {
		t.Fatalf("fork printed %q, want a new execution id", fork)
	}
	recs := journalRecords(t, url, token, fork)
	link, _ := recs[0]["forkedFrom"].(map[string]any)
	if link["agentExecutionId"] != parent || link["sequence"] != at || link["history"] != "reconstructed" || recs[0]["workingDirectory"] == work {
		t.Fatalf("fork's header %v, want forkedFrom %s at %v, reconstructed, in a new directory", recs[0], parent, at)
	}
	// replay shows the fork with its parent's prefix.
	var replayed struct{ State execution.State }
	if err := json.Unmarshal([]byte(mustRun(t, dir, "replay", fork, "--json")), &replayed); err != nil {
		t.Fatal(err)
	}
	var inherited []string
	for _, it := range replayed.State.Timeline {
		if it.Inherited && it.ExecutionID == parent {
			inherited = append(inherited, it.Text)
		}
	}
	if !slices.Contains(inherited, "prompt one") || !slices.Contains(inherited, "answer one") || slices.Contains(inherited, "answer two") {
		t.Errorf("replay of the fork: inherited %q, want turn one of %s and not turn two", inherited, parent)
	}
	code, out := call(t, "GET", url+"/v1/executions/"+fork+"/replay", token, nil)
	if code != 200 || !strings.Contains(mustJSON(out["state"]), `"inherited": true`) && !strings.Contains(mustJSON(out["state"]), `"inherited":true`) {
		t.Errorf("GET replay of the fork: %d, want its state with the inherited prefix: %v", code, out["state"])
	}

	// A resume of the parent: same session, a new run, the parent untouched.
	if r := run(t, dir, "resume", fork, "--prompt", "p"); r.code != exitError || !strings.Contains(r.stderr, "still running") {
		t.Errorf("resume of a running fork: exit %d %q, want it refused as still running", r.code, r.stderr)
	}
	resumed := strings.TrimSpace(mustRun(t, dir, "resume", parent, "--prompt", "prompt three"))
	rrecs := journalRecords(t, url, token, resumed)
	link, _ = rrecs[0]["resumes"].(map[string]any)
	if link["agentExecutionId"] != parent || rrecs[0]["sessionId"] != parent || rrecs[0]["workingDirectory"] != work {
		t.Fatalf("resumed run's header %v, want resumes %s, sessionId %s, directory %s", rrecs[0], parent, parent, work)
	}
	if st := showState(t, dir, parent); st.Lifecycle != "completed" {
		t.Errorf("the resumed execution is %s, want it left completed", st.Lifecycle)
	}
}

func hasText(st execution.State, text string) bool {
	for _, it := range st.Timeline {
		if it.Text == text {
			return true
		}
	}
	return false
}
