package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestACPSlashCommands: the ACP server tells the editor the commands the
// execution offers, and carries a Mission-native slash command typed in the
// editor out through the daemon (no turn of the agent), answering with its
// result; a bad one is refused with the shape expected.
func TestACPSlashCommands(t *testing.T) {
	dir := t.TempDir()
	cl := serveClient(t, dir)
	agent := fixtures.ACPAgentBinary(t)
	lines := runACPClient(t, dir, []map[string]any{
		{"op": "initialize"},
		{"op": "new", "cwd": t.TempDir()},
		{"op": "waitUpdate", "kind": "available_commands_update"},
		{"op": "prompt", "text": "/checkpoint from the editor"},
		{"op": "prompt", "text": "/blocked"},
	}, "--agent", "acp", "--", agent)
	l, _ := response(t, lines, 1)
	id := acpResult[struct {
		SessionID string `json:"sessionId"`
	}](t, l).SessionID
	l, _ = response(t, lines, 3)
	if got := acpResult[struct {
		StopReason string `json:"stopReason"`
	}](t, l).StopReason; got != "end_turn" {
		t.Fatalf("/checkpoint: stopReason %q, want end_turn", got)
	}
	var advertised, answered bool
	for _, u := range lines {
		if u.Type != "update" {
			continue
		}
		var raw struct {
			Update struct {
				Kind     string `json:"sessionUpdate"`
				Commands []struct {
					Name string `json:"name"`
				} `json:"availableCommands"`
				Content *struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if err := json.Unmarshal(u.Params, &raw); err != nil {
			t.Fatal(err)
		}
		for _, c := range raw.Update.Commands {
			advertised = advertised || c.Name == "checkpoint"
		}
		if c := raw.Update.Content; c != nil && strings.HasPrefix(c.Text, "execution.checkpoint: checkpoint cp-") {
			answered = true
		}
	}
	if !advertised || !answered {
		t.Errorf("updates: commands advertised %v, checkpoint answered %v; want both", advertised, answered)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cps, err := cl.Checkpoints(ctx, id)
	if err != nil || len(cps) != 1 || cps[0].StateSummary.Title != "from the editor" || cps[0].Source != string(eventstore.SourceOperator) {
		t.Errorf("checkpoints %+v, %v; want the editor's", cps, err)
	}
	if l, _ := response(t, lines, 4); l.Error == nil || !strings.Contains(l.Error.Message, "/blocked <reason>") {
		t.Errorf("/blocked without a reason: %+v, want an error naming the shape", l)
	}
}
