package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/search"
)

// search: GET /v1/search?q=&owner=Entity[/id]&agent=&lifecycle=&since=&until=&limit=
// runs a full-text query over the executions' texts. The lifecycle is an
// execution's current one: the read models list the executions that have
// it and the index is narrowed to them, since the index does not follow
// lifecycles.
func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "q", "owner", "agent", "lifecycle", "since", "until", "limit"); err != nil {
		return err
	}
	if s.cfg.Search == nil {
		return unavailable("this daemon keeps no search index")
	}
	qv := r.URL.Query()
	q := search.Query{Text: strings.TrimSpace(qv.Get("q")), Agent: qv.Get("agent")}
	if q.Text == "" {
		return invalidField("q", nil, "the query is empty; give words to search for (\"a phrase\", +required, -excluded, prefix*)")
	}
	if owner := qv.Get("owner"); owner != "" {
		entity, id, _ := strings.Cut(owner, "/")
		if !slices.Contains(eventstore.OwnerEntities, eventstore.OwnerEntity(entity)) {
			return invalidField("owner", strs(eventstore.OwnerEntities), "owner entity %q is not accepted (write Entity or Entity/id)", entity)
		}
		q.OwnerEntity, q.OwnerID = entity, id
	}
	lc, err := enumParam(r, "lifecycle", eventstore.Lifecycles)
	if err != nil {
		return err
	}
	if q.Since, err = timeParam(r, "since"); err != nil {
		return err
	}
	if q.Until, err = timeParam(r, "until"); err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", search.DefaultLimit, 1, search.MaxLimit)
	if err != nil {
		return err
	}
	q.Limit = int(limit)
	if lc != "" {
		list, err := s.cfg.Views.List(projections.Filter{Lifecycle: lc})
		if err != nil {
			return err
		}
		q.Executions = make([]string, 0, len(list))
		for _, e := range list {
			q.Executions = append(q.Executions, e.ID)
		}
	}
	res, err := s.cfg.Search.Search(q)
	var bad *search.BadQueryError
	if errors.As(err, &bad) {
		field := "q"
		if strings.Contains(bad.Problem, "until") {
			field = "until"
		}
		return invalidField(field, nil, "%s", bad.Problem)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// timeParam reads an RFC 3339 time, or a duration that means that long
// ago ("24h"); zero when absent.
func timeParam(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, invalidField(name, nil, "%q is not a time: write RFC 3339 (2026-01-02T15:04:05Z) or a duration before now (24h)", v)
}
