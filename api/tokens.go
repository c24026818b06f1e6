package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
)

// DefaultScopedTokenGrace is how long a scoped token outlives its
// execution's end when Config.ScopedTokenGrace is 0: long enough for an
// agent's last observations and a hook that reports after the process
// exits, short enough that a token left in a script, a log or a process
// listing stops working soon after.
const DefaultScopedTokenGrace = 10 * time.Minute

// scopedTokenAllows is what a scoped token may do; authenticate refuses
// it everywhere else.
var scopedTokenAllows = []string{
	"POST /v1/executions/{id}/observations for this execution",
	"MCP at /mcp as this execution's agent",
}

// scopeLive refuses a scoped token whose execution ended more than
// Config.ScopedTokenGrace ago. The token itself is derived from the id and
// cannot carry an expiry, so the end is read from the read models; an
// execution they do not hold yet has just been launched and is live.
func (s *Server) scopeLive(id string) error {
	st, err := s.cfg.Views.Execution(id)
	if err != nil || !st.Lifecycle.Final() {
		return nil
	}
	ended := st.UpdatedAt
	if st.EndedAt != nil {
		ended = *st.EndedAt
	}
	if time.Since(ended) <= s.cfg.ScopedTokenGrace {
		return nil
	}
	return &apiError{status: http.StatusUnauthorized, code: wire.CodeUnauthorized,
		message: fmt.Sprintf("this token was scoped to execution %s, which ended at %s (%s); a scoped token ends %s after its execution: use the API token, or the token of a live execution",
			id, ended.UTC().Format(time.RFC3339), st.Lifecycle, s.cfg.ScopedTokenGrace)}
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
