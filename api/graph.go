package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/lineage"
)

// graph: GET /v1/graph?execution=ID…&format=json|dot
func (s *Server) graph(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "execution", "format"); err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = lineage.FormatJSON
	}
	if !slices.Contains(lineage.Formats, format) {
		return invalidField("format", lineage.Formats, "%q is not accepted", clip(format, maxFieldLen))
	}
	ids := r.URL.Query()["execution"]
	g, err := lineage.Build(r.Context(), s.cfg.Store, ids...)
	if err != nil {
		return lineageError(err)
	}
	if format == lineage.FormatDOT {
		setContentType(w, "text/vnd.graphviz; charset=utf-8")
		return lineage.WriteDOT(w, g)
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}

// executionLineage: GET /v1/executions/{id}/lineage?at=RFC3339
func (s *Server) executionLineage(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "at"); err != nil {
		return err
	}
	at := time.Now().UTC()
	if v := r.URL.Query().Get("at"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return invalidField("at", nil, "%q is not accepted (want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z)", clip(v, maxFieldLen))
		}
		at = t
	}
	ctx, id := r.Context(), r.PathValue("id")
	// The descendants index is a scan of the headers (docs/lineage.md).
	idx, err := lineage.ScanIndex(ctx, s.cfg.Store)
	if err != nil {
		return lineageError(err)
	}
	fam, err := lineage.Family(ctx, s.cfg.Store, idx, id)
	if err != nil {
		return lineageError(err)
	}
	h, err := lineage.History(ctx, s.cfg.Store, id)
	if err != nil {
		return lineageError(err)
	}
	// Snapshots of the working directory are recorded by the executions
	// that ran in it: this one and its relatives.
	g, err := lineage.Build(ctx, s.cfg.Store, append([]string{fam.Root}, fam.Tree.Descendants()...)...)
	if err != nil {
		return lineageError(err)
	}
	view := wire.Lineage{Lineage: *fam, History: h.Items, ToolCalls: h.ToolCalls, Snapshots: wire.Snapshots{At: at, Items: []lineage.Snapshot{}}}
	if n, ok := g.Node(lineage.RunNodeID(id)); ok && n.Attrs["workingDirectory"] != "" {
		view.Snapshots.Resource = n.Attrs["workingDirectory"]
		view.Snapshots.Items = g.SnapshotsOf(view.Snapshots.Resource, at)
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

// eventOrigin: GET /v1/events/{eventId}/origin?execution=ID
func (s *Server) eventOrigin(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "execution"); err != nil {
		return err
	}
	o, err := lineage.FindOrigin(r.Context(), s.cfg.Store, r.PathValue("eventId"), r.URL.Query().Get("execution"))
	if err != nil {
		return lineageError(err)
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// lineageError answers the lineage package's errors: an unknown execution
// or event is not found, a malformed event id is a bad field, and a link
// that cannot be followed is damage in the journals, not in the request.
func lineageError(err error) error {
	switch {
	case errors.Is(err, lineage.ErrUnknownExecution), errors.Is(err, lineage.ErrUnknownEvent):
		return notFound("%s", clip(err.Error(), maxLogValue))
	case errors.Is(err, lineage.ErrBadEventID):
		return invalidField("eventId", nil, "%s", clip(err.Error(), maxLogValue))
	case errors.Is(err, lineage.ErrBrokenLink):
		return &apiError{status: http.StatusInternalServerError, code: wire.CodeDamaged, message: err.Error()}
	}
	return fmt.Errorf("lineage: %w", err)
}
