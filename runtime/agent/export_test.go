package agent

// SetLine moves a stream's line counter, to reach its longest ids.
func SetLine(s *Stream, n uint64) { s.line = n }

// Memory is what a stream remembers, for the bounds test.
type Memory struct {
	Open, Steps, Closed, Seen, Unknowns, Plans int
	// OpenKeys are the keys of the open calls.
	OpenKeys []string
}

// Remembered is what s remembers.
func Remembered(s *Stream) Memory {
	m := Memory{Open: len(s.open), Steps: len(s.steps.m), Closed: len(s.closed.m), Seen: len(s.seenIDs.m),
		Unknowns: len(s.unknowns.m), Plans: len(s.plans.m)}
	for k := range s.open {
		m.OpenKeys = append(m.OpenKeys, k)
	}
	return m
}

// Bounds the test checks against.
const (
	MaxRemembered   = maxRemembered
	MaxPendingPlans = maxPendingPlans
)
