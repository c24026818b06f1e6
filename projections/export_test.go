package projections

import "time"

// SetMaxLinger sets how long a busy projection may wait for more of the log
// until the test ends.
func SetMaxLinger(t interface{ Cleanup(func()) }, d time.Duration) {
	old := maxLinger
	maxLinger = d
	t.Cleanup(func() { maxLinger = old })
}
