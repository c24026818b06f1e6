package acp

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
	"github.com/google/go-cmp/cmp"
)

// TestReader runs the contract every agent's reader keeps on this one's
// captures.
func TestReader(t *testing.T) { agenttest.TestReader(t, Agent{}) }

// TestAdvertisedCommands: an ACP agent's available_commands_update becomes
// one Commands event, sent again only when the list changes.
func TestAdvertisedCommands(t *testing.T) {
	acpLines := agenttest.Lines(
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess-1"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"research","description":"Research the code base","input":{"hint":"what to research"}},{"name":"plan","description":"Make a plan"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"research","description":"Research the code base","input":{"hint":"what to research"}},{"name":"plan","description":"Make a plan"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"plan","description":"Make a plan"}]}}}`,
	)
	want := [][]agent.Command{
		{{Name: "research", Description: "Research the code base", Hint: "what to research"}, {Name: "plan", Description: "Make a plan"}},
		{{Name: "plan", Description: "Make a plan"}},
	}
	if diff := cmp.Diff(want, agenttest.Advertised(agenttest.Parse(t, Agent{}, acpLines...))); diff != "" {
		t.Errorf("ACP advertised (-want +got):\n%s", diff)
	}
}
