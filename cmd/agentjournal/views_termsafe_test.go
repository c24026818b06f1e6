package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

// hostile clears the screen, retitles the window, returns the cursor,
// breaks the line, reverses the text after it and ends with NUL and a C1
// CSI: what an agent could put in an id or a text to rewrite the operator's
// terminal.
const (
	hostile = "\x1b[2J\x1b]0;pwned\x07\r\n\u202e\x00\u009b1m"
	// escaped is how human output shows it.
	escaped = `\x1b[2J\x1b]0;pwned\a\r\n\u202e\x00\u009b1m`
	// clipped is how it shows in clipped text, where white space,
	// line breaks among it, is folded into single spaces.
	clipped = `\x1b[2J\x1b]0;pwned\a \u202e\x00\u009b1m`
	// forged is a line the agent tries to add to the output.
	forged = "\nFORGED: all checks passed"
)

// rawInOutput lists what must never reach the terminal as it is.
var rawInOutput = []string{"\x1b", "\x07", "\r", "\x00", "\u202e", "\u009b"}

// writeHostileJournal writes a journal whose ids and texts carry hostile,
// straight through the store, and returns its execution id.
func writeHostileJournal(t *testing.T, dir string) (execID, ownerID string) {
	t.Helper()
	execID, ownerID = "ae-"+hostile, "t-"+hostile
	ref, err := eventstore.NewReference(eventstore.OwnerTask, ownerID, execID)
	if err != nil {
		t.Fatal(err)
	}
	b := demoBuilder{ref: ref, at: time.Now().Add(-time.Minute).Truncate(time.Millisecond)}
	b.add(0, &eventstore.Header{AgentID: "agent-" + hostile,
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredInteractive},
		WorkingDirectory:   "/src/" + hostile})
	b.state(time.Millisecond, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning,
		Attention: eventstore.AttentionAutonomous, Activity: eventstore.ActivityIdle, Reason: "started " + hostile})
	b.message(time.Millisecond, "msg-"+hostile, map[string]any{"text": "fix it " + hostile + " café 日本 🚀"})
	b.observe(time.Millisecond, "obs-1", eventstore.ObservedMCP, &eventstore.StatusSignal{Summary: "status " + hostile})
	b.add(time.Millisecond, &eventstore.Decision{DecisionID: "dec-obs-1", ObservationID: "obs-1", Action: eventstore.ActionRecordOnly, Reason: "reason " + hostile})
	b.observe(time.Millisecond, "obs-2", eventstore.ObservedMCP, &eventstore.MessageSignal{Text: "say" + forged})
	b.add(time.Millisecond, &eventstore.Decision{DecisionID: "dec-obs-2", ObservationID: "obs-2", Action: eventstore.ActionEmitMessage, Reason: "shown" + forged})
	b.observe(time.Millisecond, "obs-3", eventstore.ObservedMCP, &eventstore.NeedsInputSignal{
		RequestID: "req-" + hostile, Question: "ask " + hostile})
	b.add(time.Millisecond, &eventstore.Decision{DecisionID: "dec-obs-3", ObservationID: "obs-3", Action: eventstore.ActionUpdateState, Reason: "waits"})
	b.state(time.Millisecond, &eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator,
		CurrentInputRequestID: eventstore.SetInputRequest("req-" + hostile), Reason: "needs_input"})
	b.activity(time.Millisecond, &eventstore.ActivityUpdated{Activity: eventstore.ActivityEditing,
		CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: "file-" + hostile},
		Telemetry:     &eventstore.Telemetry{ActiveToolName: "tool-" + hostile}})

	bus := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, bus)
	if _, err := writeDemo(t.Context(), s, ref, b.records); err != nil {
		t.Fatal(err)
	}
	closeBus(t, bus)
	return execID, ownerID
}

// Human output shows hostile ids and texts escaped, and keeps ordinary
// Unicode.
func TestHumanOutputEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id, _ := writeHostileJournal(t, dir)

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"ls", []string{"ls"}, []string{"ae-" + escaped, "Task/t-"}},
		{"show", []string{"show", id}, []string{
			"ae-" + escaped + " (Task/t-" + escaped + ", agent agent-" + escaped + ")",
			"req-" + escaped + ` "ask ` + escaped + `"`,
			"target=file:file-" + escaped,
			"status " + clipped,
		}},
		{"timeline", []string{"timeline", id}, []string{"status " + clipped, "ask " + clipped}},
		{"journal cat", []string{"journal", "cat", id}, []string{
			"agent-" + escaped, "cwd=/src/" + escaped,
			`"fix it ` + escaped + ` café 日本 🚀" [msg-` + escaped + "]",
			`status "status ` + escaped + `"`,
			"(obs-1) reason " + escaped,
			`message "say\nFORGED: all checks passed"`,
			`(obs-2) shown\nFORGED: all checks passed`,
			"needs_input req-" + escaped + ` "ask ` + escaped + `"`,
			"input=req-" + escaped,
			"tool=tool-" + escaped,
		}},
		{"journal ls", []string{"journal", "ls"}, []string{"ae-" + escaped, "Task/t-" + escaped}},
		{"log", []string{"log"}, []string{"ae-" + escaped, "[msg-" + escaped + "]"}},
		{"replay", []string{"replay", id}, []string{"ae-" + escaped + " (Task/t-" + escaped, "[msg-" + escaped + "]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustRun(t, dir, tc.args...)
			for _, raw := range rawInOutput {
				if i := strings.Index(out, raw); i >= 0 {
					t.Errorf("output holds %q raw at %d:\n%q", raw, i, out)
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "FORGED") {
					t.Errorf("got the line %q, which the agent forged", line)
				}
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output does not show %q:\n%s", want, out)
				}
			}
		})
	}

}

// JSON output is exact, the ids decode as written, and holds no raw control
// or bidi character: those encoding/json leaves raw are \u escapes.
func TestJSONOutputEscapesBidi(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id, owner := writeHostileJournal(t, dir)
	var sum projections.Summary
	if err := json.Unmarshal([]byte(jsonRun(t, dir, "ls", "--json")), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.ID != id || sum.OwnerID != owner {
		t.Errorf("ls --json: got id %q owner %q, want %q and %q", sum.ID, sum.OwnerID, id, owner)
	}
	var st execution.State
	if err := json.Unmarshal([]byte(jsonRun(t, dir, "show", id, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if want := "req-" + hostile; st.CurrentInputRequestID != want {
		t.Errorf("show --json: got input request %q, want %q", st.CurrentInputRequestID, want)
	}
	records := decodeLines(t, jsonRun(t, dir, "journal", "cat", id, "--json"))
	if got := records[0].(*eventstore.Header).AgentID; got != "agent-"+hostile {
		t.Errorf("journal cat --json: got agent %q, want %q", got, "agent-"+hostile)
	}
	for _, args := range [][]string{{"timeline", id, "--json"}, {"log", "--json"}, {"replay", id, "--json"}, {"journal", "ls", "--json"}} {
		out := jsonRun(t, dir, args...)
		if !strings.Contains(out, `\u202e`) {
			t.Errorf("%q: got no \\u202e escape, want the bidi override written as one:\n%s", args, out)
		}
	}
}

// jsonRun runs a command with JSON output and checks that the output holds
// no raw control or bidi character and that each line is JSON.
func jsonRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out := mustRun(t, dir, args...)
	for _, raw := range rawInOutput {
		if i := strings.Index(out, raw); i >= 0 {
			t.Errorf("%q: output holds %q raw at %d:\n%q", args, raw, i, out)
		}
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if args[0] == "show" || args[0] == "replay" {
			break // indented: one value over many lines
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("%q: line %d is not JSON: %s", args, i+1, line)
		}
	}
	return out
}
