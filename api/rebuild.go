package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/projections"
)

// rebuild: POST /v1/projections/rebuild builds a fresh projection file from
// offset 1 of the log beside the live one, checks it and swaps it in,
// while every other request keeps reading the live one. The answer is
// application/x-ndjson: a wire.RebuildProgress after each transaction of the build,
// then a last one. A rebuild already running is a conflict; a client that
// goes away cancels the rebuild and leaves the live file as it was.
func (s *Server) rebuild(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	var last wire.RebuildProgress
	started := false
	send := func(l wire.RebuildProgress) {
		if !started {
			// Headers go with the first line, so that an error before it
			// gets its own status.
			setContentType(w, "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		_ = enc.Encode(l) // the client is gone if this fails, and so is the rebuild's context
		_ = rc.Flush()
	}
	err := projections.Rebuild(r.Context(), s.cfg.Store, s.cfg.Views, func(done, total uint64) {
		last = wire.RebuildProgress{Done: done, Total: total}
		send(last)
	})
	if err == nil && s.cfg.Search != nil {
		// The search index is a projection of the same log: rebuilt
		// after the read models, before the last line, without progress
		// lines of its own.
		err = s.cfg.Search.Rebuild(r.Context(), s.cfg.Store, nil)
	}
	if err == nil {
		var list []projections.Summary
		if list, err = s.cfg.Views.List(projections.Filter{}); err == nil {
			n := len(list)
			last.Executions = &n
			send(last)
			return nil
		}
	}
	if errors.Is(err, projections.ErrRebuilding) {
		err = conflict("a rebuild of the projection is already running; wait for it to finish")
	}
	if !started {
		return err
	}
	ae := s.answer(r, err)
	if ae.code == wire.CodeInternal && r.Context().Err() == nil {
		s.log.Error("rebuild failed", logKeyErr, err)
	}
	last.Error = &wire.ErrorDetail{Code: ae.code, Message: ae.message}
	send(last)
	return nil
}
