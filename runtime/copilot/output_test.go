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
	t.Run("shell", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/shell.jsonl"], []string{"hello-from-tool"})
	})
	t.Run("failures", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/toolfail.jsonl"], []string{"about to fail", ""})
	})
}
