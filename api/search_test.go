package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/projections"
)

func TestSearchRoute(t *testing.T) {
	r := startRig(t, false, apitest.WithSearch(t))
	ctx := context.Background()
	done := storetest.Ref(eventstore.OwnerTask, "t-9", "exec-done")
	live := storetest.Ref(eventstore.OwnerMission, "m-9", "exec-live")
	for _, ref := range []eventstore.Reference{done, live} {
		if _, err := r.store.EnsureJournal(ctx, ref, storetest.Header("agent-"+ref.OwnerID)); err != nil {
			t.Fatal(err)
		}
	}
	appendRec := func(ref eventstore.Reference, rec eventstore.Record) {
		t.Helper()
		if _, err := r.store.Append(ctx, ref, rec); err != nil {
			t.Fatal(err)
		}
	}
	appendRec(done, storetest.Message("m1", "migrate the capybara schema"))
	fin := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleCompleted, Attention: eventstore.AttentionNone}
	fin.RecordID = eventstore.RecordID(done.JournalID, eventstore.KindStateChanged, "finish")
	appendRec(done, fin)
	appendRec(live, storetest.Message("m1", "capybara dashboards please"))

	cl := client.New(r.http.URL, testToken)
	var res *client.SearchResult
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if res, err = cl.Search(ctx, client.SearchRequest{Query: "capybara"}); err != nil {
			t.Fatal(err)
		}
		// The lifecycle filter reads the read models, which follow the
		// log on their own.
		if list, _ := r.views.List(projections.Filter{Lifecycle: eventstore.LifecycleCompleted}); res.Total == 2 && len(list) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("records never became searchable: %+v", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h := res.Hits[0]; !strings.Contains(h.Snippet, "<mark>capybara</mark>") || h.Sequence != 2 || h.Kind != "message.accepted" {
		t.Errorf("hit %+v: want sequence 2, a message, a marked snippet", h)
	}
	for _, c := range []struct {
		req  client.SearchRequest
		want string
	}{
		{client.SearchRequest{Query: "capybara", Lifecycle: "completed"}, "exec-done"},
		{client.SearchRequest{Query: "capybara", Owner: "Mission/m-9"}, "exec-live"},
		{client.SearchRequest{Query: "capybara", Agent: "agent-t-9"}, "exec-done"},
		{client.SearchRequest{Query: "capybara -schema", Since: "1h"}, "exec-live"},
	} {
		got, err := cl.Search(ctx, c.req)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != 1 || got.Hits[0].Execution != c.want {
			t.Errorf("Search(%+v) = %+v, want one hit in %s", c.req, got.Hits, c.want)
		}
	}

	for _, c := range []struct{ query, field string }{
		{"q=", "q"},
		{"q=%22unclosed", "q"},
		{"q=a&lifecycle=sleeping", "lifecycle"},
		{"q=a&owner=Planet", "owner"},
		{"q=a&since=yesterday", "since"},
		{"q=a&limit=0", "limit"},
		{"q=a&bogus=1", "bogus"},
	} {
		e := r.fail(t, http.MethodGet, "/v1/search?"+c.query, nil, testToken, http.StatusBadRequest, "invalid_field", c.field)
		if e.Error.Message == "" {
			t.Errorf("%s: an error without a message", c.query)
		}
	}
}
