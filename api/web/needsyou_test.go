package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

// An execution that waits for a person is on the list however many
// executions were updated after it: seven waiting or blocked ones, then
// 2,000 completed runs. A fresh tab shows all seven, says "7 need you" on
// the page and in its title, counts the whole list and pages the rest.
func TestListKeepsWhatNeedsYou(t *testing.T) {
	b := newBrowser(t)
	st := apitest.Start(t, apitest.Options{})
	s := stackOf(st)

	seed := func(id string, lifecycle eventstore.Lifecycle, attention eventstore.Attention) {
		fixtures.WriteJournal(t, st.Store, id, nil, false, &eventstore.StateChanged{
			Base:      eventstore.Base{RecordID: eventstore.RecordID(id, eventstore.KindStateChanged, "seed")},
			Lifecycle: lifecycle, Attention: attention})
	}
	var waiting []string
	for i := range 7 {
		id, attention := fmt.Sprintf("waiting-%d", i), eventstore.AttentionAwaitingOperator
		if i%2 == 1 {
			id, attention = fmt.Sprintf("blocked-%d", i), eventstore.AttentionBlocked
		}
		seed(id, eventstore.LifecycleRunning, attention)
		waiting = append(waiting, id)
	}
	const runs = 2000
	start := time.Now()
	for i := range runs {
		seed(fmt.Sprintf("run-%04d", i), eventstore.LifecycleCompleted, eventstore.AttentionNone)
	}
	t.Logf("%d journals written in %s", runs+len(waiting), time.Since(start).Round(time.Millisecond))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := st.Views.List(projections.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == runs+len(waiting) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read model holds %d executions, want %d", len(list), runs+len(waiting))
		}
		time.Sleep(50 * time.Millisecond)
	}

	b.signIn(t, s)
	b.waitFor(t, 30*time.Second, "the list's first page", `document.querySelectorAll('#executions-body tr').length > 0`)
	for _, id := range waiting {
		b.waitFor(t, 10*time.Second, id+" on the list", fmt.Sprintf(`!!document.querySelector('#executions-body tr[data-id=%q]')`, id))
	}
	if title := eval[string](t, b, `document.title`); !strings.Contains(title, "7 need you") {
		t.Errorf("title %q, want it to say 7 need you", title)
	}
	if got := b.text(t, "#needs-you"); got != "7 need you" {
		t.Errorf("the page says %q, want 7 need you", got)
	}
	// The waiting ones come first, and the first page holds 500 others.
	first := eval[[]string](t, b, `[...document.querySelectorAll('#executions-body tr')].slice(0, 7).map((r) => r.dataset.id)`)
	for _, id := range first {
		if !strings.HasPrefix(id, "waiting-") && !strings.HasPrefix(id, "blocked-") {
			t.Errorf("the first rows are %q, want the seven that need the operator", first)
			break
		}
	}
	shown := eval[int](t, b, `document.querySelectorAll('#executions-body tr').length`)
	if shown != 500+len(waiting) {
		t.Errorf("%d rows on first load, want the first page of 500 and the %d waiting", shown, len(waiting))
	}
	if got, want := b.text(t, "#executions-count"), fmt.Sprintf("%d of %d shown", shown, runs+len(waiting)); got != want {
		t.Errorf("the count says %q, want %q", got, want)
	}

	// Show more pages through the rest: each page 500 more, until all are
	// loaded and the button goes.
	for want := 2*500 + len(waiting); ; want += 500 {
		want = min(want, runs+len(waiting))
		b.click(t, "#executions-more")
		b.waitFor(t, 20*time.Second, fmt.Sprintf("%d rows", want), fmt.Sprintf(`document.querySelectorAll('#executions-body tr').length === %d`, want))
		if want == runs+len(waiting) {
			break
		}
	}
	b.waitFor(t, 5*time.Second, "Show more to go", `document.getElementById('executions-more').hidden`)
	if got, want := b.text(t, "#executions-count"), fmt.Sprintf("%d of %d shown", runs+len(waiting), runs+len(waiting)); got != want {
		t.Errorf("the count says %q, want %q", got, want)
	}
	if got := eval[int](t, b, `new Set([...document.querySelectorAll('#executions-body tr')].map((r) => r.dataset.id)).size`); got != runs+len(waiting) {
		t.Errorf("%d distinct executions listed, want %d", got, runs+len(waiting))
	}
	b.checkNoExceptions(t)
}
