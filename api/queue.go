package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
)

// queue: GET /v1/queue. The queued and scheduled launches of this daemon
// that have not started, in the order they will.
func (s *Server) queue(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	queued := s.cfg.Runtime.Queue()
	q := wire.Queue{Queued: make([]wire.QueuedRun, len(queued)), MaxRunning: s.cfg.Runtime.MaxRunning(), Running: s.cfg.Runtime.Running()}
	for i, run := range queued {
		q.Queued[i] = wire.QueuedRun(run)
	}
	writeJSON(w, http.StatusOK, q)
	return nil
}
