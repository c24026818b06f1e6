package client_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// ListPage pages a filter's executions with offset and limit: every page
// tells the same total, the pages together are the whole list in its
// order, each execution once, and an offset past the end is an empty page.
func TestListPage(t *testing.T) {
	t.Parallel()
	s, c := start(t)
	ctx := testContext(t)
	const n = 7
	for i := range n {
		id := fmt.Sprintf("page-%d", i)
		fixtures.WriteJournal(t, s.Store, id, nil, false, &eventstore.StateChanged{
			Base:      eventstore.Base{RecordID: eventstore.RecordID(id, eventstore.KindStateChanged, "done")},
			Lifecycle: eventstore.LifecycleCompleted})
	}
	var all []client.Summary
	for deadline := time.Now().Add(time.Minute); len(all) != n; time.Sleep(20 * time.Millisecond) {
		var err error
		if all, err = c.List(ctx, client.ExecutionFilter{Lifecycle: eventstore.LifecycleCompleted}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d completed executions listed, want %d", len(all), n)
		}
	}

	var paged []client.Summary
	for offset := 0; offset < n; offset += 3 {
		page, err := c.ListPage(ctx, client.ExecutionFilter{Lifecycle: eventstore.LifecycleCompleted, Limit: 3}, offset)
		if err != nil {
			t.Fatalf("page at %d: %v", offset, err)
		}
		if want := min(3, n-offset); page.Total != n || len(page.Executions) != want {
			t.Fatalf("page at %d: %d executions of total %d, want %d of %d", offset, len(page.Executions), page.Total, want, n)
		}
		paged = append(paged, page.Executions...)
	}
	if got, want := ids(paged), ids(all); !slices.Equal(got, want) {
		t.Errorf("the pages hold %q, want the list %q", got, want)
	}

	past, err := c.ListPage(ctx, client.ExecutionFilter{Lifecycle: eventstore.LifecycleCompleted}, n+5)
	if err != nil || len(past.Executions) != 0 || past.Total != n {
		t.Errorf("a page past the end: %d executions of total %d, %v; want none of %d", len(past.Executions), past.Total, err, n)
	}
	if _, err := c.ListPage(ctx, client.ExecutionFilter{}, -1); !errors.Is(err, client.ErrInvalidField) || !client.HasCode(err, client.CodeInvalidField) {
		t.Errorf("a negative offset: %v, want ErrInvalidField", err)
	}
}

func ids(list []client.Summary) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}
