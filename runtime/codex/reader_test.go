package codex

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestReader runs the contract every agent's reader keeps on this one's
// captures.
func TestReader(t *testing.T) { agenttest.TestReader(t, Agent{}) }

func BenchmarkParseCodex(b *testing.B) { agenttest.BenchmarkReader(b, Agent{}) }

func FuzzParseCodex(f *testing.F) {
	agenttest.FuzzReader(f, Agent{},
		`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":""}]}}`,
		`{"type":"error","message":"{\"error\":{\"message\":\"x\"}}"}`+"\n"+`{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"x\"}}"}}`,
		`{"type":"item.updated","item":{"id":"i","type":"todo_list","items":[{"text":"a","completed":true},{"text":""}]}}`,
		`{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"x","aggregated_output":"\xff\xfe","exit_code":-9,"status":"failed"}}`,
		`{"type":"item.started","item":{"id":"w","type":"web_search","action":{"type":"open_page","url":"u"}}}`,
	)
}
