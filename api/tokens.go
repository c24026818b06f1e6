package api

import (
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
)

// scopedTokenAllows is what a scoped token may do; authenticate refuses
// it everywhere else.
var scopedTokenAllows = []string{
	"POST /v1/executions/{id}/observations for this execution",
	"MCP at /mcp as this execution's agent",
}

// mintToken: POST /v1/executions/{id}/token. The token is the one the
// execution's agent got at launch: it is derived from the execution id and
// the daemon's secret, so minting it again gives the same token and stores
// nothing.
func (s *Server) mintToken(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeRequest(w, r, &struct{}{}, true); err != nil {
		return err
	}
	ref, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	id := ref.AgentExecutionID
	writeJSON(w, http.StatusOK, wire.ScopedToken{AgentExecutionID: id, Token: s.ScopedToken(id), Allows: scopedTokenAllows})
	return nil
}
