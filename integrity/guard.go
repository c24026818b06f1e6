package integrity

import (
	"fmt"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Guard holds what the checks found, for the store to refuse writes to the
// damaged journals (Refuse, as eventstore.JetStreamConfig.Refuse) and for
// the health probe to report. The zero Guard holds nothing; it is safe for
// concurrent use. A journal once found damaged stays so until the daemon
// restarts on a restored log.
type Guard struct {
	mu    sync.Mutex
	found findings
}

// Add takes findings in, merged with those held.
func (g *Guard) Add(fs ...Finding) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.found == nil {
		g.found = findings{}
	}
	for _, f := range fs {
		g.found.add(f)
	}
}

// Findings returns what the guard holds, the log's finding first.
func (g *Guard) Findings() []Finding {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.found.list()
}

// Damaged returns the finding on the execution's journal, if there is one.
func (g *Guard) Damaged(agentExecutionID string) (Finding, bool) {
	if agentExecutionID == "" {
		return Finding{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.found[agentExecutionID]
	if !ok {
		return Finding{}, false
	}
	return *f, true
}

// Refuse refuses a write to a journal found damaged with a *DamageError.
func (g *Guard) Refuse(ref eventstore.Reference) error {
	if f, ok := g.Damaged(ref.AgentExecutionID); ok {
		return &DamageError{Finding: f}
	}
	return nil
}

// DamageError is a write refused because its journal lost records; it
// matches eventstore.ErrDamaged.
type DamageError struct{ Finding Finding }

func (e *DamageError) Error() string {
	return fmt.Sprintf("this journal takes no writes: it lost records, and a new one would take a lost record's sequence; %s", e.Finding)
}

// Is makes a *DamageError match eventstore.ErrDamaged.
func (e *DamageError) Is(target error) bool { return target == eventstore.ErrDamaged }
