package contract

import (
	"fmt"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// TestTodosDropWhatALaterPlanRemoves: a plan is the whole list each time,
// so a todo a later plan no longer lists is dropped, as the execution's
// plan no longer shows it; one done before stays done; and one listed
// again takes the status it is listed with.
func TestTodosDropWhatALaterPlanRemoves(t *testing.T) {
	item := func(text string, st eventstore.PlanItemStatus) eventstore.PlanItem {
		return eventstore.PlanItem{Text: text, Status: st}
	}
	recs := journal(t,
		plan("p1", item("read code", eventstore.PlanItemDone), item("write tests", eventstore.PlanItemInProgress), item("ship", eventstore.PlanItemOpen)),
		plan("p2", item("write tests", eventstore.PlanItemInProgress)),
		plan("p3", item("write tests", eventstore.PlanItemDone), item("ship", eventstore.PlanItemOpen)),
	)
	var got []string
	for _, td := range Todos(recs) {
		var trail []string
		for _, h := range td.History {
			trail = append(trail, string(h.Status))
		}
		got = append(got, td.TodoID+"="+string(td.Status)+" "+fmt.Sprint(trail))
	}
	want := []string{"read code=done [done]", "write tests=done [in-progress done]", "ship=open [open dropped open]"}
	if len(got) != len(want) {
		t.Fatalf("todos %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("todo %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
