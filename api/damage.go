package api

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentjournal/agentjournal/projections"
)

// maxDamageListed bounds the damaged journals /healthz names.
const maxDamageListed = 100

// checkDamage compares, once at start, what the log holds for each journal
// with what the read model applied from it: a log that holds fewer records
// of a journal than the read model saw has lost records (a damaged or
// truncated file), whether from the middle of the journal or from its end,
// which no read of the journal alone can tell. Each finding is logged and
// reported by /healthz.
func (s *Server) checkDamage(ctx context.Context) {
	found, err := s.findDamage(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("check the log for damage", logKeyErr, err)
		}
		return
	}
	for _, d := range found {
		s.log.Error("damaged journal: records the read model applied are missing from the log", "damage", d)
	}
	if len(found) > maxDamageListed {
		found = append(found[:maxDamageListed], fmt.Sprintf("… and %d more", len(found)-maxDamageListed))
	}
	s.damageMu.Lock()
	s.damage = found
	s.damageMu.Unlock()
}

func (s *Server) findDamage(ctx context.Context) ([]string, error) {
	// The read model first: the log only grows, so counted after it, it
	// holds at least what the read model applied unless records were lost,
	// even while the policy and the runtime append.
	sums, err := s.cfg.Views.List(projections.Filter{})
	if err != nil {
		return nil, err
	}
	refs, err := s.cfg.Store.Journals(ctx)
	if err != nil {
		return nil, err
	}
	held := make(map[string]uint64, len(refs))
	for _, r := range refs {
		held[r.AgentExecutionID] = r.RecordCount
	}
	var found []string
	for _, sum := range sums {
		if n := held[sum.ID]; n < sum.LastSequence {
			found = append(found, fmt.Sprintf("execution %s: the log holds %d of its records, the read model applied %d: restore it from an export, or run 'agentjournal journal verify' for details",
				clip(sum.ID, maxFieldLen), n, sum.LastSequence))
		}
	}
	slices.Sort(found)
	return found, nil
}

// damaged is what checkDamage found.
func (s *Server) damaged() []string {
	s.damageMu.Lock()
	defer s.damageMu.Unlock()
	return slices.Clone(s.damage)
}
