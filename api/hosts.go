package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
)

// listHosts: GET /v1/hosts, the hosts of the fleet sharing this daemon's
// log, with their labels, capacity, what runs on each and when each was
// last heard from.
func (s *Server) listHosts(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	if s.cfg.Fleet == nil {
		return unavailable("this daemon is not a host of a fleet (it was started without one)")
	}
	out := wire.Hosts{Self: s.cfg.Fleet.Name(), Hosts: []wire.Host{}}
	for _, m := range s.cfg.Fleet.Members() {
		running := m.Running
		if running == nil {
			running = []string{}
		}
		out.Hosts = append(out.Hosts, wire.Host{
			Name: m.Name, State: string(m.State), Self: m.Self, Labels: m.Labels, Profiles: m.Profiles,
			Started: m.Started, LastHeard: m.Heard.UTC(), LeaseMs: m.LeaseMs,
			MaxRunning: m.Capacity.MaxRunning, Running: m.Capacity.Running, Queued: m.Capacity.Queued,
			MemoryFree: m.Capacity.MemoryFree, MemoryTotal: m.Capacity.MemoryTotal, Executions: running,
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
