package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// SearchRequest is a full-text query; empty fields are not sent. Owner is
// Entity or Entity/id; Since and Until are RFC 3339 times or durations
// before now ("24h").
type SearchRequest struct {
	Query     string
	Owner     string
	Agent     string
	Lifecycle string
	Since     string
	Until     string
	Limit     int
}

// Search runs a full-text query over every execution's texts.
func (c *Client) Search(ctx context.Context, r SearchRequest) (*SearchResult, error) {
	q := url.Values{}
	q.Set("q", r.Query)
	for k, v := range map[string]string{"owner": r.Owner, "agent": r.Agent, "lifecycle": r.Lifecycle, "since": r.Since, "until": r.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if r.Limit != 0 {
		q.Set("limit", strconv.Itoa(r.Limit))
	}
	var out SearchResult
	if err := c.do(ctx, http.MethodGet, "/v1/search", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
