package api

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/transcript"
)

// transcriptFormats are the format parameter's values: the entries as
// JSON (the default), or rendered as plain text or Markdown.
var transcriptFormats = []string{"json", string(transcript.FormatText), string(transcript.FormatMarkdown)}

// executionTranscript: GET /v1/executions/{id}/transcript?format=json|text|markdown,
// the execution's own journal told as a transcript (package transcript);
// a tool call still running is told as open.
func (s *Server) executionTranscript(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "format"); err != nil {
		return err
	}
	format, err := enumParam(r, "format", transcriptFormats)
	if err != nil {
		return err
	}
	ref, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var records []eventstore.Record
	for e, err := range s.cfg.Store.ReadJournal(r.Context(), ref, 1) {
		if err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		records = append(records, e.Record)
	}
	entries := transcript.Entries(records)
	if format == "" || format == "json" {
		writeJSON(w, http.StatusOK, wire.Transcript{AgentExecutionID: ref.AgentExecutionID, Entries: entries})
		return nil
	}
	// Rendered whole before the status is written, so a failure is
	// answered as an error, not as half a document.
	var doc bytes.Buffer
	if err := transcript.Render(&doc, entries, transcript.Options{Format: transcript.Format(format)}); err != nil {
		return err
	}
	contentType := "text/plain; charset=utf-8"
	if format == string(transcript.FormatMarkdown) {
		contentType = "text/markdown; charset=utf-8"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, err = w.Write(doc.Bytes())
	return err
}
