package wire

import "time"

// SearchResult answers GET /v1/search: the best hits first and the number
// of matches. It is search.Result, the index's own answer.
type SearchResult struct {
	// Total counts every match; Hits are the best of them, up to the
	// limit asked.
	Total uint64      `json:"total"`
	Hits  []SearchHit `json:"hits"`
}

// SearchHit is one matching record (search.Hit).
type SearchHit struct {
	Execution string    `json:"executionId"`
	Sequence  uint64    `json:"sequence"`
	Kind      string    `json:"kind"`
	Time      time.Time `json:"time"`
	// Snippet is the text around the matches, which are in <mark> tags;
	// the rest of the text is HTML-escaped.
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
}
