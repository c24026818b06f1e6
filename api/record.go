package api

import (
	"context"
	"fmt"

	"github.com/agentjournal/agentjournal/api/mcp"
	"github.com/agentjournal/agentjournal/eventstore"
)

var _ mcp.Recorder = (*Server)(nil)

// RecordObservation records an observation for an execution and waits for
// the policy's decision on it: the path MCP tool calls take, so a signal sent
// through MCP and the same signal sent as a stdout marker end in equivalent
// records.
func (s *Server) RecordObservation(ctx context.Context, agentExecutionID string, o *eventstore.Observation) (mcp.Decision, error) {
	if err := s.refuseDamaged(agentExecutionID); err != nil {
		return mcp.Decision{}, err
	}
	pushed, release := s.decisions.wait(agentExecutionID, o.ObservationID)
	defer release()
	// The observation is durable once its decision is (awaitDecision).
	e, dup, err := s.cfg.Runtime.RecordObservationPending(ctx, agentExecutionID, o)
	if err != nil {
		return mcp.Decision{}, err
	}
	b := e.Record.RecordBase()
	ref := eventstore.Reference{JournalID: b.JournalID, OwnerEntity: b.Scope, OwnerID: b.OwnerID, AgentExecutionID: b.AgentExecutionID}
	decided, err := s.awaitDecision(ctx, ref, o.ObservationID, b.Sequence, pushed, dup)
	if err != nil {
		if derr := s.observationDurable(ctx, o.ObservationID); derr != nil {
			return mcp.Decision{}, derr
		}
		return mcp.Decision{}, fmt.Errorf("observation %s is recorded, but no decision arrived: %w", o.ObservationID, err)
	}
	s.tell(ctx, decided.Through)
	d := decided.Decision
	return mcp.Decision{DecisionID: d.DecisionID, Action: string(d.Action), Reason: d.Reason, Duplicate: dup}, nil
}
