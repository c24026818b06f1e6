package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/policy"
)

// writeDecided writes a journal to the data directory dir: a running
// execution, then each observation with the policy's decision on it, as a
// daemon would have.
func writeDecided(t *testing.T, dir, id string, observations ...*eventstore.Observation) {
	t.Helper()
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, DataDir: dir}
	ctx := context.Background()
	err := env.withStore(ctx, func(s eventstore.Store) error {
		ref, err := eventstore.NewReference(eventstore.OwnerTask, "t-attention", id)
		if err != nil {
			return err
		}
		if _, err := s.EnsureJournal(ctx, ref, &eventstore.Header{AgentID: "generic",
			ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless, Signals: eventstore.SurfacedSignalTypes()}}); err != nil {
			return err
		}
		running := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleRunning, Attention: eventstore.AttentionAutonomous, Reason: "process 1 started"}
		running.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindStateChanged, "lifecycle:running")
		if _, err := s.Append(ctx, ref, running); err != nil {
			return err
		}
		for _, o := range observations {
			if _, err := s.Append(ctx, ref, o); err != nil {
				return err
			}
			var recs []eventstore.Record
			for e, err := range s.ReadJournal(ctx, ref, 1) {
				if err != nil {
					return err
				}
				recs = append(recs, e.Record)
			}
			st, err := execution.Replay(recs)
			if err != nil {
				return err
			}
			out := policy.Decide(st, o)
			for _, r := range append([]eventstore.Record{out.Decision}, out.Records...) {
				if _, err := s.Append(ctx, ref, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func signalled(id string, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
}

// TestShowAndTimelineSayWhatTheAgentWaitsFor: show prints what blocks the
// agent and what would unblock it, and the open question with its choices
// numbered; timeline prints them on their items; the JSON carries them
// under the names the console reads.
func TestShowAndTimelineSayWhatTheAgentWaitsFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeDecided(t, dir, "ae-blocked",
		signalled("o-1", &eventstore.BlockedSignal{Reason: "no credentials for the registry", Needs: "a read token in NPM_TOKEN"}))
	writeDecided(t, dir, "ae-asking",
		signalled("o-1", &eventstore.NeedsInputSignal{RequestID: "req-7", Question: "Which branch?", Choices: []string{"main", "release/2.x"}}))
	writeDecided(t, dir, "ae-permission",
		signalled("o-1", &eventstore.NeedsInputSignal{RequestID: "perm-1", Question: "Run rm -rf build?", Kind: "permission",
			Tool: &eventstore.ToolUse{Name: "Bash"}, Choices: []string{"allow", "deny", "allow-always"}}))

	show := mustRun(t, dir, "show", "ae-blocked")
	for _, want := range []string{"attention:         blocked", `blocked by:        "no credentials for the registry"`, `needs:             "a read token in NPM_TOKEN"`} {
		if !strings.Contains(show, want) {
			t.Errorf("show of a blocked execution lacks %q:\n%s", want, show)
		}
	}
	timeline := mustRun(t, dir, "timeline", "ae-blocked")
	if !strings.Contains(timeline, "no credentials for the registry — needs: a read token in NPM_TOKEN") {
		t.Errorf("timeline of a blocked execution lacks the blocked item's needs:\n%s", timeline)
	}
	var st struct {
		Blocked map[string]string `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "show", "ae-blocked", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocked["reason"] != "no credentials for the registry" || st.Blocked["needs"] != "a read token in NPM_TOKEN" {
		t.Errorf("show --json blocked = %v, want its reason and needs", st.Blocked)
	}
	var page struct {
		Items []execution.TimelineItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "timeline", "ae-blocked", "--json")), &page); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range page.Items {
		found = found || it.Kind == execution.ItemBlocked && it.Reason == "no credentials for the registry" && it.Needs == "a read token in NPM_TOKEN"
	}
	if !found {
		t.Errorf("timeline --json items %+v: no blocked item with its reason and needs", page.Items)
	}

	show = mustRun(t, dir, "show", "ae-asking")
	for _, want := range []string{"attention:         awaiting-operator", `input request:     req-7 "Which branch?"`, "\n  1. main\n  2. release/2.x\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("show of an execution asking lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "blocked by:") {
		t.Errorf("show of an execution that is not blocked says what blocks it:\n%s", show)
	}
	show = mustRun(t, dir, "show", "ae-permission")
	if want := `input request:     perm-1 "Run rm -rf build?" (permission to run Bash)` + "\n  1. allow\n  2. deny\n  3. allow-always\n"; !strings.Contains(show, want) {
		t.Errorf("show of a permission request lacks %q:\n%s", want, show)
	}
	timeline = mustRun(t, dir, "timeline", "ae-asking")
	if !strings.Contains(timeline, "Which branch? [req-7] — choices: 1. main | 2. release/2.x") {
		t.Errorf("timeline lacks the question's request and choices:\n%s", timeline)
	}
	var asking struct {
		LastInputRequest struct {
			Choices []string `json:"choices"`
		} `json:"lastInputRequest"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "show", "ae-asking", "--json")), &asking); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asking.LastInputRequest.Choices, ","); got != "main,release/2.x" {
		t.Errorf("show --json lastInputRequest.choices = %q, want main,release/2.x", got)
	}
}
