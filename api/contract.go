package api

import (
	"fmt"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
)

// executionTodos: GET /v1/executions/{id}/todos
func (s *Server) executionTodos(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.contractRecords(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Todos{Todos: orEmpty(contract.Todos(recs))})
	return nil
}

// executionApprovals: GET /v1/executions/{id}/approvals
func (s *Server) executionApprovals(w http.ResponseWriter, r *http.Request) error {
	recs, err := s.contractRecords(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Approvals{Approvals: orEmpty(contract.Approvals(recs))})
	return nil
}

// contractRecords reads the execution's own journal; a fork's inherited
// prefix stays its parent's, read there.
func (s *Server) contractRecords(r *http.Request) ([]eventstore.Record, error) {
	if err := checkQuery(r); err != nil {
		return nil, err
	}
	ref, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	var recs []eventstore.Record
	for e, err := range s.cfg.Store.ReadJournal(r.Context(), ref, 1) {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		recs = append(recs, e.Record)
	}
	return recs, nil
}
