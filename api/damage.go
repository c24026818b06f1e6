package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/projections"
)

// maxDamageListed bounds the damaged journals /healthz names.
const maxDamageListed = 100

// checkDamage compares, once at start, what the log holds for each journal
// with what the read model applied from it: a log that holds fewer records
// of a journal than the read model saw has lost records (a damaged or
// truncated file), whether from the middle of the journal or from its end,
// which no read of the journal alone can tell. Each finding is logged and
// reported by /healthz, and the journal takes no more writes: its next
// append would reuse the sequence of a lost record.
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
	s.damageMu.Lock()
	s.damage = found
	s.damageMu.Unlock()
}

func (s *Server) findDamage(ctx context.Context) (map[string]string, error) {
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
	found := map[string]string{}
	for _, sum := range sums {
		if n := held[sum.ID]; n < sum.LastSequence {
			found[sum.ID] = fmt.Sprintf("execution %s: the log holds %d of its records, the read model applied %d: restore it from an export, or run 'agentjournal journal verify' for details",
				clip(sum.ID, maxFieldLen), n, sum.LastSequence)
		}
	}
	return found, nil
}

// damaged is what checkDamage found, sorted and bounded for /healthz.
func (s *Server) damaged() []string {
	s.damageMu.Lock()
	list := slices.Collect(maps.Values(s.damage))
	s.damageMu.Unlock()
	slices.Sort(list)
	if len(list) > maxDamageListed {
		list = append(list[:maxDamageListed], fmt.Sprintf("… and %d more", len(list)-maxDamageListed))
	}
	return list
}

// refuseDamaged answers a write to a journal checkDamage found damaged.
func (s *Server) refuseDamaged(id string) error {
	s.damageMu.Lock()
	d, ok := s.damage[id]
	s.damageMu.Unlock()
	if !ok {
		return nil
	}
	return &apiError{status: http.StatusInternalServerError, code: wire.CodeDamaged,
		message: "this journal takes no writes: it lost records, and a new one would reuse a lost record's sequence; " + d}
}
