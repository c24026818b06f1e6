package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestAnswerByNumberOrChoice: a permission request's choices are shown
// allow, allow-always, deny; `send --answer REQ 2` answers allow-always,
// and the API's answer "DENY" answers deny: the journal records the choice
// named, and the agent gets the option of that kind, not a denial with
// the reason "2".
func TestAnswerByNumberOrChoice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)
	cl := client.New(url, token)
	t.Cleanup(func() { cl.Close() })
	ctx := context.Background()
	l, err := cl.Launch(ctx, client.LaunchRequest{OwnerEntity: "Task", OwnerID: "answers", Agent: "acp",
		Command: []string{fixtures.ACPAgentBinary(t)}, Prompt: "ask c1\nask c2", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id := l.Reference.AgentExecutionID
	awaitRequest := func(req string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ex, err := cl.Execution(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if ex.CurrentInputRequestID == req {
				if want := []string{"allow", "allow-always", "deny"}; !slices.Equal(ex.LastInputRequest.Choices, want) {
					t.Fatalf("request %s: choices %v, want %v", req, ex.LastInputRequest.Choices, want)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %s never opened: %+v", req, ex)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	awaitRequest("c1")
	if out := mustRun(t, dir, "send", id, "--answer", "c1", "2"); !strings.Contains(out, "delivered") {
		t.Fatalf("send --answer c1 2 printed %q, want it delivered", out)
	}
	awaitRequest("c2")
	payload, _ := json.Marshal(map[string]string{"requestId": "c2", "text": "DENY"})
	if _, err := cl.SendMessage(ctx, id, client.Message{Type: "answer", Payload: payload}); err != nil {
		t.Fatal(err)
	}

	var answers, said []string
	deadline := time.Now().Add(60 * time.Second)
	for len(said) < 2 {
		answers, said = nil, nil
		records, _, err := cl.Records(ctx, id, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			switch r := r.(type) {
			case *eventstore.MessageAccepted:
				if r.MessageType == "answer" {
					text, _ := r.Text()
					answers = append(answers, text)
				}
			case *eventstore.Observation:
				if m, ok := r.Signal.Payload.(*eventstore.MessageSignal); ok && r.Signal != nil && strings.HasPrefix(m.Text, "permission: ") {
					said = append(said, m.Text)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent said %v, want two permission outcomes", said)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := []string{"allow-always", "deny"}; !slices.Equal(answers, want) {
		t.Errorf("answers recorded %q, want %q", answers, want)
	}
	if want := []string{"permission: always", "permission: no"}; !slices.Equal(said, want) {
		t.Errorf("the agent chose %q, want %q", said, want)
	}
}
