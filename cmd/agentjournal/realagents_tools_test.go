package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
)

// TestRealAgentToolOutput: a shell call's end carries its output as the
// CLI reported it, cut to its start and end when long, and the timeline
// shows the call as one item with that output, completed in place.
func TestRealAgentToolOutput(t *testing.T) {
	t.Parallel()
	eachCLI(t, func(t *testing.T, c realCLI) {
		// About 9 KB of output: more than the excerpt keeps, less than
		// any of the CLIs cuts on its own.
		command := "echo tool-output-start; seq 1 2000; echo tool-output-end"
		sc := modelserver.Scenario{Turns: []modelserver.Turn{
			{ToolCalls: []modelserver.ToolCall{c.shell("call_out_1", command)}, Usage: modelserver.Usage{InputTokens: 100, OutputTokens: 20}},
			{Text: "The command printed numbers.", Usage: modelserver.Usage{InputTokens: 140, OutputTokens: 8}},
		}}
		r := runScenario(t, c, sc, "Run the command", "--permissions", "allow")
		start, end := callEnd(r.records, "tool-output-start")
		if start == nil || end == nil {
			r.failf(t, "no tool call targeting the command, started and ended")
		}
		out := end.ToolCall
		if out.Status != eventstore.ToolCallSucceeded || !strings.HasPrefix(strings.TrimSpace(out.Output), "tool-output-start\n1\n2\n") ||
			!strings.HasSuffix(strings.TrimSpace(out.Output), "1999\n2000\ntool-output-end") || !strings.Contains(out.Output, " bytes left out …\n") {
			r.failf(t, "call ended %s with output %q; want succeeded with the output's start and end around the cut", out.Status, out.Output)
		}
		if out.OutputBytes < 8000 || len(out.Output) > eventstore.MaxToolOutputBytes+eventstore.MaxToolOutputMarker {
			r.failf(t, "excerpt of %d bytes cut from %d; want at most %d from the whole output (about 9 KB)",
				len(out.Output), out.OutputBytes, eventstore.MaxToolOutputBytes+eventstore.MaxToolOutputMarker)
		}

		// The timeline command shows the call as one item, at its start.
		var page struct {
			Items []execution.TimelineItem `json:"items"`
		}
		if err := json.Unmarshal([]byte(mustRunReal(t, r.dir, "timeline", r.id, "--json", "--limit", "1000")), &page); err != nil {
			t.Fatal(err)
		}
		var items []execution.TimelineItem
		for _, it := range page.Items {
			if it.Kind == execution.ItemTool && it.Tool.CallID == out.ID {
				items = append(items, it)
			}
		}
		if len(items) != 1 {
			r.failf(t, "%d timeline items of call %s, want one", len(items), out.ID)
		}
		it := items[0]
		if it.ID != start.RecordID || it.Tool.Status != eventstore.ToolCallSucceeded || it.Tool.Output != out.Output ||
			it.Tool.EndSequence != end.Sequence || it.Tool.DurationMs == nil || !strings.Contains(it.Text, "tool-output-start") ||
			!strings.Contains(it.Text, "— succeeded after ") {
			r.failf(t, "tool item %+v (%+v); want the start's item %s completed by sequence %d with the output and a duration", it, it.Tool, start.RecordID, end.Sequence)
		}
		text := mustRunReal(t, r.dir, "timeline", r.id)
		if !strings.Contains(text, "— tool-output-end") {
			r.failf(t, "timeline does not show the call's last line of output:\n%s", text)
		}
	})
}
