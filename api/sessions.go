package api

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/runtime"
)

func nativeResume(agent string) bool {
	_, resume := runtime.Native(agent)
	return resume
}

// session builds the AgentSession of runs, with the session of the run
// its first run forks.
func (s *Server) session(runs []*contract.Run) contract.AgentSession {
	parent := ""
	if f := runs[0].ForkedFrom; f != "" {
		if p, err := s.cfg.Views.Run(f); err == nil {
			parent = p.SessionID
		}
	}
	return contract.Session(runs, nativeResume, parent)
}

// listSessions: GET /v1/sessions
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "status", "limit"); err != nil {
		return err
	}
	status, err := enumParam(r, "status", contract.SessionStatuses)
	if err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	ids, err := s.cfg.Views.SessionIDs()
	if err != nil {
		return err
	}
	// Only the sessions answered, and those passed over by the status
	// filter, have their runs read in full.
	out := []contract.AgentSession{}
	for _, id := range ids {
		if limit > 0 && len(out) == int(limit) {
			break
		}
		runs, err := s.cfg.Views.SessionRuns(id)
		if errors.Is(err, projections.ErrNotFound) {
			// Gone since the list was read: the read models were rebuilt.
			continue
		}
		if err != nil {
			return err
		}
		if sess := s.session(runs); status == "" || sess.Status == status {
			out = append(out, sess)
		}
	}
	writeJSON(w, http.StatusOK, wire.Sessions{Sessions: out})
	return nil
}

// readSession: GET /v1/sessions/{sessionId}
func (s *Server) readSession(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id := r.PathValue("sessionId")
	runs, err := s.cfg.Views.SessionRuns(id)
	if errors.Is(err, projections.ErrNotFound) {
		// Perhaps only just written: read again once the projection
		// has caught up.
		s.settle(r.Context())
		runs, err = s.cfg.Views.SessionRuns(id)
	}
	if errors.Is(err, projections.ErrNotFound) {
		// An execution's id names its session too.
		if run, rerr := s.cfg.Views.Run(id); rerr == nil {
			runs, err = s.cfg.Views.SessionRuns(run.SessionID)
		}
	}
	if errors.Is(err, projections.ErrNotFound) {
		return notFound("no session %q (name a session by its id, which is its first run's unless the runs' headers name another, or by any of its executions' ids)", id)
	}
	if err != nil {
		return err
	}
	v := wire.Session{Session: s.session(runs), Runs: []contract.AgentRun{}, Tasks: contract.Tasks(runs),
		Todos: []contract.AgentTodo{}, Approvals: []contract.AgentApprovalCheckpoint{}, Checkpoints: []contract.AgentCheckpoint{}}
	for _, run := range runs {
		v.Runs = append(v.Runs, run.AgentRun())
		v.Todos = append(v.Todos, run.Todos...)
		v.Approvals = append(v.Approvals, run.Approvals...)
		v.Checkpoints = append(v.Checkpoints, run.Checkpoints...)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// projectedRun reads an execution's contract run from the projection.
func (s *Server) projectedRun(r *http.Request) (*contract.Run, error) {
	id := r.PathValue("id")
	var run *contract.Run
	err := s.projected(r.Context(), id, func() (err error) {
		run, err = s.cfg.Views.Run(id)
		return err
	})
	return run, err
}

// executionRun: GET /v1/executions/{id}/run
func (s *Server) executionRun(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	run, err := s.projectedRun(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run.AgentRun())
	return nil
}

// executionCheckpoints: GET /v1/executions/{id}/checkpoints
func (s *Server) executionCheckpoints(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	run, err := s.projectedRun(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Checkpoints{Checkpoints: orEmpty(run.Checkpoints)})
	return nil
}

// createCheckpoint: POST /v1/executions/{id}/checkpoints. It answers with
// the checkpoint once the projection holds it.
func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request) error {
	var in wire.CheckpointRequest
	if err := s.decodeRequest(w, r, &in, true); err != nil {
		return err
	}
	id := r.PathValue("id")
	var ce *runtime.CheckpointError
	c, err := s.cfg.Runtime.Checkpoint(r.Context(), runtime.CheckpointRequest{Execution: id, ID: in.ID,
		Source: eventstore.SourceOperator, Title: in.Title, Summary: in.Summary})
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return notFound("%v", err)
	case errors.As(err, &ce):
		return invalidField(ce.Field, nil, "%v", err)
	case err != nil:
		return err
	}
	s.settle(r.Context())
	run, err := s.cfg.Views.Run(id)
	if err != nil {
		return err
	}
	for _, cp := range run.Checkpoints {
		if cp.CheckpointID == c.CheckpointID {
			w.Header().Set("Location", "/v1/executions/"+url.PathEscape(id)+"/checkpoints")
			writeJSON(w, http.StatusCreated, cp)
			return nil
		}
	}
	return errors.New("the checkpoint was recorded but the projection does not hold it yet")
}
