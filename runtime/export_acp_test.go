package runtime

import (
	"time"

	"github.com/agentjournal/agentjournal/runtime/acp"
)

// SetACPTimeout shortens the ACP client's waits for a test; the returned
// func restores them.
func SetACPTimeout(d time.Duration) (restore func()) {
	old := acp.Timeout
	acp.Timeout = d
	return func() { acp.Timeout = old }
}
