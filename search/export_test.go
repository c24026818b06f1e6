package search

// SetCatchUpBatch sets how many log entries an index batch takes while
// catching up, for the indexes opened until the test ends.
func SetCatchUpBatch(t interface{ Cleanup(func()) }, n int) {
	old := catchUpBatch
	catchUpBatch = n
	t.Cleanup(func() { catchUpBatch = old })
}
