package runtime

import "time"

// SetACPTimeout shortens the ACP client's waits for a test; the returned
// func restores them.
func SetACPTimeout(d time.Duration) (restore func()) {
	old := acpTimeout
	acpTimeout = d
	return func() { acpTimeout = old }
}
