package claude

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestClaudeToolOutput: a call's end carries its tool_result content as
// the output excerpt, a failed call's too (without the tool_use_error
// wrapping), from real captures of Claude Code 2.1.328.
func TestClaudeToolOutput(t *testing.T) {
	caps := agenttest.CapturesByName(t)
	t.Run("tools unavailable", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/tools-unavailable.jsonl"], []string{
			"1\tvm\n2\t",
			"Exit code 2\nls: cannot access '/nonexistent-dir': No such file or directory",
			"Error: No such tool available: TodoWrite. TodoWrite is disabled for this session, in subagents as well as here.",
			"Error: No such tool available: Grep. Grep is not available in this session — search file contents with `grep` via the Bash tool instead.",
		})
	})
	t.Run("failures", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/toolfail.jsonl"], []string{
			"Exit code 3\nabout to fail",
			"File does not exist. Note: your current working directory is /tmp/capwd/claude-toolfail.",
		})
	})
}

// TestClaudeToolOutputCut: text blocks of a result are joined, and output
// longer than the cap keeps its start and its end.
func TestClaudeToolOutputCut(t *testing.T) {
	long := strings.Repeat("line of output\n", 1000)
	evs := agenttest.Parse(t, Agent{}, agenttest.Lines(
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"x"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"START\n`+strings.ReplaceAll(long, "\n", `\n`)+`"},{"type":"image","source":{}},{"type":"text","text":"END"}]}]}}`,
	)...)
	ends := agenttest.ToolEnds(evs)
	if len(ends) != 1 {
		t.Fatalf("%d calls ended, want 1", len(ends))
	}
	e := ends[0]
	whole := len("START\n") + len(long) + len("\nEND")
	if e.Status != eventstore.ToolCallSucceeded || !strings.HasPrefix(e.Output, "START\n") || !strings.HasSuffix(e.Output, "\nEND") ||
		e.OutputBytes != int64(whole) || len(e.Output) > eventstore.MaxToolOutputBytes+eventstore.MaxToolOutputMarker {
		t.Errorf("got %s, %d byte output of %d starting %.10q and ending %q; want succeeded, START…END cut from %d", e.Status, len(e.Output), e.OutputBytes, e.Output, e.Output[len(e.Output)-4:], whole)
	}
}
