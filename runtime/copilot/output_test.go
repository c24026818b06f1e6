package copilot

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestCopilotToolOutput: a call's end carries its result's content, without
// the shell status note Copilot CLI appends (the exit code says it), from
// real captures; a call that failed with an error and no result has none.
func TestCopilotToolOutput(t *testing.T) {
	caps := agenttest.CapturesByName(t)
	for _, c := range []struct {
		capture string
		want    []string
	}{
		{"real/shell.jsonl", []string{"hello-from-tool"}},
		{"real/toolfail.jsonl", []string{"about to fail", ""}},
	} {
		t.Run(c.capture, func(t *testing.T) {
			ends := agenttest.ToolEnds(agenttest.Parse(t, Agent{}, caps[c.capture]...))
			if len(ends) != len(c.want) {
				t.Fatalf("%d calls ended, want %d", len(ends), len(c.want))
			}
			for i, e := range ends {
				if e.Output != c.want[i] {
					t.Errorf("call %d (%s) output %q, want %q", i, e.Name, e.Output, c.want[i])
				}
			}
		})
	}
}
