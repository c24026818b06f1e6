package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/runtime"
)

// queueView answers GET /v1/queue.
type queueView struct {
	// Queued lists the runs waiting to start, the next one first.
	Queued []runtime.QueuedRun `json:"queued"`
	// MaxRunning is the daemon's limit of running agents.
	MaxRunning int `json:"maxRunning"`
	// Running counts the executions live in this daemon.
	Running int `json:"running"`
}

// queue: GET /v1/queue. The queued and scheduled launches of this daemon
// that have not started, in the order they will.
func (s *Server) queue(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queueView{Queued: s.cfg.Runtime.Queue(), MaxRunning: s.cfg.Runtime.MaxRunning(), Running: s.cfg.Runtime.Running()})
	return nil
}
