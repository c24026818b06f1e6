package search_test

import (
	"errors"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/follower/followertest"
	"github.com/agentjournal/agentjournal/search"
)

// TestFollowerContract runs the follower's contract suite against a bleve
// index, its index batches made small so that the suite's logs take
// several.
func TestFollowerContract(t *testing.T) {
	search.SetCatchUpBatch(t, 100)
	followertest.Run(t, func(path string) (followertest.Subject, error) {
		x, err := search.Open(path)
		if err != nil {
			return nil, err
		}
		return indexSubject{x}, nil
	})
}

// indexSubject is an Index as the contract suite drives it.
type indexSubject struct{ *search.Index }

// Holds says whether the record's document is in the index: a hit for its
// text, in its execution, at its sequence.
func (x indexSubject) Holds(e eventstore.Entry) (bool, error) {
	b := e.Record.RecordBase()
	text := search.Text(e.Record)
	if text == "" {
		return false, errors.New("the record has no text to look for")
	}
	res, err := x.Search(search.Query{Text: text, Executions: []string{b.AgentExecutionID}, Limit: search.MaxLimit})
	if err != nil {
		return false, err
	}
	for _, h := range res.Hits {
		if h.Sequence == b.Sequence {
			return true, nil
		}
	}
	return false, nil
}
