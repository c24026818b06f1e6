package execution

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// TestReplayShowsWhatBlocksAndWhatIsAsked: the state says what blocks the
// agent while it is blocked, and the timeline items carry the blocked
// signal's reason and needs and the question's choices.
func TestReplayShowsWhatBlocksAndWhatIsAsked(t *testing.T) {
	recs := journal(
		header(),
		&eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous},
		obs("o-1", &eventstore.BlockedSignal{Reason: "no credentials", Needs: "a registry token"}),
		&eventstore.Decision{DecisionID: "d-1", ObservationID: "o-1", Action: eventstore.ActionUpdateState},
		&eventstore.StateChanged{Attention: eventstore.AttentionBlocked, Reason: "no credentials"},
		obs("o-2", &eventstore.NeedsInputSignal{RequestID: "req-1", Question: "Which registry?", Choices: []string{"npm", "ghcr"}}),
		&eventstore.Decision{DecisionID: "d-2", ObservationID: "o-2", Action: eventstore.ActionUpdateState},
		&eventstore.StateChanged{Attention: eventstore.AttentionAwaitingOperator, CurrentInputRequestID: eventstore.SetInputRequest("req-1")},
	)
	blocked, err := Replay(recs[:5])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Blocked{Reason: "no credentials", Needs: "a registry token"}, blocked.Blocked); diff != "" {
		t.Fatalf("blocked (-want +got):\n%s", diff)
	}
	js, _ := json.Marshal(blocked)
	var shown struct {
		Blocked map[string]string `json:"blocked"`
	}
	if err := json.Unmarshal(js, &shown); err != nil || shown.Blocked["reason"] != "no credentials" || shown.Blocked["needs"] != "a registry token" {
		t.Fatalf("state JSON blocked = %v (%v), want reason and needs", shown.Blocked, err)
	}
	i := slices.IndexFunc(blocked.Timeline, func(it TimelineItem) bool { return it.Kind == ItemBlocked })
	if i < 0 || blocked.Timeline[i].Reason != "no credentials" || blocked.Timeline[i].Needs != "a registry token" {
		t.Fatalf("timeline %+v: want a blocked item with its reason and needs", blocked.Timeline)
	}

	asked, err := Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if asked.Blocked != nil {
		t.Errorf("blocked = %+v after the attention moved to %s, want none", asked.Blocked, asked.Attention)
	}
	js, _ = json.Marshal(asked)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["blocked"]; ok {
		t.Errorf("state JSON has blocked while not blocked: %s", raw["blocked"])
	}
	if got := asked.LastInputRequest.Choices; !slices.Equal(got, []string{"npm", "ghcr"}) {
		t.Errorf("last input request choices %v, want [npm ghcr]", got)
	}
	i = slices.IndexFunc(asked.Timeline, func(it TimelineItem) bool { return it.Kind == ItemNeedsInput })
	if i < 0 || !slices.Equal(asked.Timeline[i].Choices, []string{"npm", "ghcr"}) || asked.Timeline[i].RequestID != "req-1" {
		t.Fatalf("timeline %+v: want a needs-input item with its request and choices", asked.Timeline)
	}
}
