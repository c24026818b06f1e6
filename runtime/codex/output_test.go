package codex

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestCodexToolOutput: a command's end carries its aggregated output, a
// failed one's too; a file change's its paths; an MCP call's its text
// content. The first cases are real captures of the pinned Codex CLI.
func TestCodexToolOutput(t *testing.T) {
	caps := agenttest.CapturesByName(t)
	t.Run("commands", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/toolfail.jsonl"],
			[]string{"about to fail\n", "cat: does-not-exist.txt: No such file or directory\n"})
	})
	t.Run("file changes", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, caps["real/files.jsonl"],
			[]string{"add /tmp/capwd/codex-files/hello.txt", "update /tmp/capwd/codex-files/hello.txt"})
	})
	t.Run("mcp tool call", func(t *testing.T) {
		agenttest.CheckToolOutputs(t, Agent{}, agenttest.Lines(
			`{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"two hits"},{"type":"image","data":"…"},{"type":"text","text":"a.md, b.md"}],"structured_content":null},"status":"completed"}}`,
		), []string{"two hits\na.md, b.md"})
	})
}
