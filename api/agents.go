package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/runtime"
)

// listAgents: GET /v1/agents, the agents this daemon launches and what
// each one's CLI does itself. The console takes its launch list and its
// fork and resume notes from it.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.AgentCatalog{Agents: agentCatalog()})
	return nil
}

// agentCatalog is the runtime's registry of agents, in its order, in the
// wire form server and client share.
func agentCatalog() []wire.Agent {
	infos := runtime.Agents()
	out := make([]wire.Agent, len(infos))
	for i, a := range infos {
		out[i] = wire.Agent{
			ID:           a.ID,
			Provider:     a.Provider,
			Protocol:     string(a.Protocol),
			NativeResume: a.NativeResume,
			NativeFork:   a.NativeFork,
			TurnsOnStdin: a.TurnsOnStdin,
			Approvals:    a.Approvals != nil,
			Shapes:       orEmpty(a.Shapes),
		}
	}
	return out
}
