package api

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/narrative"
)

var narrativeFormats = []string{"md", "html", "json"}

// executionNarrative: GET /v1/executions/{id}/narrative?format=md|html|json&audit=true|false
func (s *Server) executionNarrative(w http.ResponseWriter, r *http.Request) error {
	return s.narrative(w, r, false)
}

// sessionNarrative: GET /v1/sessions/{sessionId}/narrative?format=md|html|json&audit=true|false
func (s *Server) sessionNarrative(w http.ResponseWriter, r *http.Request) error {
	return s.narrative(w, r, true)
}

func (s *Server) narrative(w http.ResponseWriter, r *http.Request, session bool) error {
	if err := checkQuery(r, "format", "audit"); err != nil {
		return err
	}
	format, err := enumParam(r, "format", narrativeFormats)
	if err != nil {
		return err
	}
	// audit=true gives the line form, every line on its record, instead
	// of the story told turn by turn.
	audit, err := enumParam(r, "audit", []string{"true", "false"})
	if err != nil {
		return err
	}
	if format == "" {
		format = "md"
	}
	var n *narrative.Narrative
	if session {
		id := r.PathValue("sessionId")
		n, err = narrative.Session(r.Context(), s.cfg.Store, id)
		if errors.Is(err, eventstore.ErrJournalNotFound) || errors.Is(err, eventstore.ErrInvalidID) {
			return notFound("no session %q", clip(id, maxFieldLen))
		}
	} else {
		id := r.PathValue("id")
		if _, err := s.lookup(r.Context(), id); err != nil {
			return err
		}
		n, err = narrative.Execution(r.Context(), s.cfg.Store, id)
	}
	if err != nil {
		return err
	}
	// Rendered whole before the status is written, so a failure is
	// answered as an error, not as half a document.
	var doc bytes.Buffer
	if err := narrative.Render(&doc, n, format, audit == "true"); err != nil {
		return err
	}
	w.Header().Set("Content-Type", narrative.Formats[format])
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if format == "html" {
		// The page needs its inline style and nothing else.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	}
	_, err = w.Write(doc.Bytes())
	return err
}
