package projections

import (
	"context"
	"errors"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// lineageSource wraps the source's journal reads for an atomic pointer.
type lineageSource struct{ src execution.JournalSource }

// useLineage lets the projection fold the prefix of the forks it meets
// when the source can read journals (the JetStream store can).
func (db *DB) useLineage(src Source) {
	if js, ok := src.(execution.JournalSource); ok {
		db.lineage.Store(&lineageSource{src: js})
	}
}

// inherit folds a fork's prefix into its state as its header is applied:
// the parent's journal up to the fork's sequence, read from the store and
// folded by execution.ReplayPrefix, exactly as ReplayLineage folds it.
//
// Reading the prefix from the store, rather than keeping every parent's
// state at every sequence, costs one read of the parent's prefix per fork,
// paid once when the header is applied; forks are rare, keeping states per
// sequence would cost on every record. It is deterministic, so a rebuild
// gives the same state: the prefix is immutable, and the store refuses a
// fork header whose parent record does not exist yet, so in log order the
// prefix is always there.
//
// The stored state takes the inherited plan and lineage; the timeline
// bucket keeps only the fork's own items (their sequences are the fork's,
// and an inherited item's are its parent's), so Timeline pages the fork's
// own items and ReplayLineage gives the inherited ones.
func (a *applier) inherit(s *execution.State, h *eventstore.Header) error {
	l := a.db.lineage.Load()
	if l == nil {
		a.db.log.Warn("fork prefix not folded: the log source cannot read journals",
			logKeyExecution, h.AgentExecutionID, logKeyRecord, h.RecordID)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix, err := execution.ReplayPrefix(ctx, l.src, h.ForkedFrom)
	var bad *eventstore.OffsetError
	if errors.Is(err, execution.ErrLineage) || errors.Is(err, eventstore.ErrGap) || errors.As(err, &bad) {
		// A broken link, or a damaged parent, stays so: the fork is
		// projected without its prefix, as replaying it alone gives it,
		// and the projector goes on.
		a.db.log.Warn("fork prefix not folded", logKeyExecution, h.AgentExecutionID, logKeyErr, err)
		return nil
	}
	if err != nil {
		// A read that failed may succeed next time: the batch fails and is
		// applied again, so the state does not depend on the failure.
		return err
	}
	own := s.Timeline
	if err := s.Inherit(prefix); err != nil {
		a.db.log.Warn("fork prefix not folded", logKeyExecution, h.AgentExecutionID, logKeyErr, err)
		return nil
	}
	s.Timeline = own
	return nil
}
