package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route, served at GET
// /v1/openapi.yaml. A test holds it to the routes the server registers and
// to the answers of a running server.
//
//go:embed openapi.yaml
var openAPIDocument []byte

// openAPI: GET /v1/openapi.yaml, without a token: it describes the routes
// and holds no data, and tools fetch it before they have a token.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
	return nil
}
