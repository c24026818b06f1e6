package api

import (
	"fmt"
	"net/http"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/execution/provider"
)

// listAgents: GET /v1/agents, the agents this daemon launches and what
// each one's CLI does itself. The console takes its launch list and its
// fork and resume notes from it.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	agents, err := agentCatalog()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.AgentCatalog{Agents: agents})
	return nil
}

// agentCatalog describes every adapter, in the order execution.Adapters
// lists them. The wire type is the client's, so that server and client
// read one declaration.
func agentCatalog() ([]client.Agent, error) {
	ids := execution.Adapters()
	out := make([]client.Agent, 0, len(ids))
	for _, id := range ids {
		a, err := execution.NewAdapter(id)
		if err != nil {
			return nil, fmt.Errorf("describe agent %s: %w", id, err)
		}
		shapes := a.Shapes()
		if shapes == nil {
			shapes = []eventstore.SessionShape{}
		}
		var shape eventstore.SessionShape
		if len(shapes) > 0 {
			shape = shapes[0]
		}
		// A driver is only built here, never started: it is how an
		// adapter says whether its turns share one process's stdin.
		onStdin := a.NewDriver(nil, shape).TurnsOnStdin()
		fork, resume := execution.Native(id)
		out = append(out, client.Agent{
			ID:           id,
			Provider:     a.Provider(),
			Protocol:     protocolOf(a.Provider(), onStdin),
			NativeResume: resume,
			NativeFork:   fork,
			TurnsOnStdin: onStdin,
			Approvals:    a.Approvals() != nil,
			Shapes:       shapes,
		})
	}
	return out, nil
}

// protocolOf names how the daemon speaks to an agent's CLI, from its
// output parser and whether one process takes every turn: ACP is its own
// parser; a CLI started once per turn is exec; of those that keep one
// process, the one without a parser takes text lines (generic), the
// others a JSON stream.
func protocolOf(parser string, turnsOnStdin bool) string {
	switch {
	case parser == provider.ACP:
		return client.ProtocolACP
	case !turnsOnStdin:
		return client.ProtocolExec
	case parser == "":
		return client.ProtocolStdin
	default:
		return client.ProtocolStreamJSON
	}
}
