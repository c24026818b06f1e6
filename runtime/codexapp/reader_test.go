package codexapp

import (
	"testing"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestReader runs the contract every agent's reader keeps on this one's
// captures.
func TestReader(t *testing.T) { agenttest.TestReader(t, Agent{}) }

func FuzzParseCodexApp(f *testing.F) {
	agenttest.FuzzReader(f, Agent{},
		`{"method":"item/completed","params":{"turnId":"t","item":{"id":"i","type":"fileChange","changes":[{"path":"","kind":{"type":"add"}}],"status":"completed"}}}`,
		`{"method":"item/commandExecution/requestApproval","id":0,"params":{"turnId":"t","itemId":""}}`,
		`{"method":"turn/completed","params":{"turn":{"id":"t","status":"failed","error":{"message":"{\"error\":{\"message\":\"x\"}}"}}}}`,
		`{"id":"x","result":{"thread":{"id":""}}}`,
	)
}
