package projections_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/follower/followertest"
	"github.com/agentjournal/agentjournal/projections"
)

// TestFollowerContract runs the follower's contract suite against a
// projection file, in transactions of 100 entries so that the suite's logs
// take several.
func TestFollowerContract(t *testing.T) {
	followertest.Run(t, openSubject)
}

// openSubject opens the projection file at path, in transactions of 100
// entries.
func openSubject(path string) (followertest.Subject, error) {
	db, err := projections.Open(projections.Config{Path: path, BatchSize: 100})
	if err != nil {
		return nil, err
	}
	return dbSubject{db}, nil
}

// dbSubject is a DB as the contract suite drives it.
type dbSubject struct{ *projections.DB }

func (s dbSubject) Follow(ctx context.Context, src projections.Source) error {
	return s.Project(ctx, src)
}

func (s dbSubject) CatchUp(ctx context.Context, src projections.Source) error {
	return s.DB.CatchUp(ctx, src, nil)
}

func (s dbSubject) Rebuild(ctx context.Context, src projections.Source, progress func(done, total uint64)) error {
	return projections.Rebuild(ctx, src, s.DB, progress)
}

// Holds says whether the record is folded into its execution's state.
func (s dbSubject) Holds(e eventstore.Entry) (bool, error) {
	b := e.Record.RecordBase()
	st, err := s.Execution(b.AgentExecutionID)
	if errors.Is(err, projections.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.Journal.LastSequence >= b.Sequence, nil
}
