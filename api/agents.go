package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
)

// listAgents: GET /v1/agents, the agents this daemon launches and what
// each one's CLI does itself. The console takes its launch list and its
// fork and resume notes from it.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.AgentCatalog{Agents: agentCatalog()})
	return nil
}

// agentCatalog is the runtime's registry of agents, in its order, in the
// wire form server and client share.
func agentCatalog() []client.Agent {
	infos := runtime.Agents()
	out := make([]client.Agent, len(infos))
	for i, a := range infos {
		shapes := a.Shapes
		if shapes == nil {
			shapes = []eventstore.SessionShape{}
		}
		out[i] = client.Agent{
			ID:           a.ID,
			Provider:     a.Provider,
			Protocol:     string(a.Protocol),
			NativeResume: a.NativeResume,
			NativeFork:   a.NativeFork,
			TurnsOnStdin: a.TurnsOnStdin,
			Approvals:    a.Approvals != nil,
			Shapes:       shapes,
		}
	}
	return out
}
