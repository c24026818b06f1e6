package search

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/agentjournal/agentjournal/api/wire"
)

// MaxLimit bounds Query.Limit.
const MaxLimit = 1000

// DefaultLimit is the number of hits of a Query without a Limit.
const DefaultLimit = 20

// Query is one search: Text in the query string syntax (words, "phrases",
// +required, -excluded, prefix*, field:value), narrowed by the filters
// that are set.
type Query struct {
	Text string
	// OwnerEntity and OwnerID narrow to one owner; OwnerID needs
	// OwnerEntity.
	OwnerEntity string
	OwnerID     string
	Agent       string
	// Executions, when not nil, narrows to these executions; an empty,
	// non-nil list matches nothing (a lifecycle filter no execution has).
	Executions []string
	// Since and Until bound the records' time, Since included, Until
	// excluded; zero is unbounded.
	Since, Until time.Time
	// Limit is the most hits returned, DefaultLimit when 0.
	Limit int
}

// Hit is one matching record, and Result a query's hits, best first, and
// the number of matches: the API answers them as they are, so they are
// declared once, as the wire form.
type (
	Hit    = wire.SearchHit
	Result = wire.SearchResult
)

// BadQueryError is a query the index cannot run: its text does not parse
// or a filter is out of range.
type BadQueryError struct{ Problem string }

func (e *BadQueryError) Error() string { return e.Problem }

// Search runs q.
func (x *Index) Search(q Query) (*Result, error) {
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, &BadQueryError{Problem: "the query is empty; give words to search for"}
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return nil, &BadQueryError{Problem: fmt.Sprintf("limit %d is out of range: 1 to %d", q.Limit, MaxLimit)}
	}
	if q.OwnerID != "" && q.OwnerEntity == "" {
		return nil, &BadQueryError{Problem: "an owner id needs its entity (ENTITY/ID)"}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return nil, &BadQueryError{Problem: "until must be after since"}
	}
	if q.Executions != nil && len(q.Executions) == 0 {
		return &Result{Hits: []Hit{}}, nil
	}
	qs := bleve.NewQueryStringQuery(text)
	if _, err := qs.Parse(); err != nil {
		return nil, &BadQueryError{Problem: fmt.Sprintf("the query does not parse (%v); write words, \"a phrase\", +required, -excluded, prefix*", err)}
	}
	must := []query.Query{qs}
	term := func(field, v string) {
		t := bleve.NewTermQuery(v)
		t.SetField(field)
		must = append(must, t)
	}
	if q.OwnerEntity != "" {
		term(fieldOwnerEntity, q.OwnerEntity)
	}
	if q.OwnerID != "" {
		term(fieldOwnerID, q.OwnerID)
	}
	if q.Agent != "" {
		term(fieldAgent, q.Agent)
	}
	if q.Executions != nil {
		any := make([]query.Query, 0, len(q.Executions))
		for _, id := range q.Executions {
			t := bleve.NewTermQuery(id)
			t.SetField(fieldExecution)
			any = append(any, t)
		}
		must = append(must, bleve.NewDisjunctionQuery(any...))
	}
	if !q.Since.IsZero() || !q.Until.IsZero() {
		yes, no := true, false
		r := bleve.NewDateRangeInclusiveQuery(q.Since, q.Until, &yes, &no)
		r.SetField(fieldTime)
		must = append(must, r)
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(must...), limit, 0, false)
	req.Fields = []string{fieldExecution, fieldSequence, fieldKind, fieldTime}
	req.Highlight = bleve.NewHighlightWithStyle("html")
	req.Highlight.AddField(fieldText)
	req.SortBy([]string{"-_score", "-" + fieldTime})

	x.mu.RLock()
	res, err := x.idx.Search(req)
	x.mu.RUnlock()
	if err != nil {
		var bad *BadQueryError
		if errors.As(err, &bad) {
			return nil, err
		}
		return nil, fmt.Errorf("search: %w", err)
	}
	out := &Result{Total: res.Total, Hits: make([]Hit, 0, len(res.Hits))}
	for _, h := range res.Hits {
		hit := Hit{Score: h.Score}
		hit.Execution, _ = h.Fields[fieldExecution].(string)
		kind, _ := h.Fields[fieldKind].(string)
		hit.Kind = kind
		if s, ok := h.Fields[fieldSequence].(float64); ok {
			hit.Sequence = uint64(s)
		}
		if s, ok := h.Fields[fieldTime].(string); ok {
			hit.Time, _ = time.Parse(time.RFC3339Nano, s)
		}
		if frags := h.Fragments[fieldText]; len(frags) > 0 {
			hit.Snippet = strings.Join(frags, " … ")
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}
