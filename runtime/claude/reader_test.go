package claude

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
	"github.com/google/go-cmp/cmp"
)

// TestReader runs the contract every agent's reader keeps on this one's
// captures.
func TestReader(t *testing.T) { agenttest.TestReader(t, Agent{}) }

func BenchmarkParseClaudeCode(b *testing.B) { agenttest.BenchmarkReader(b, Agent{}) }

func FuzzParseClaudeCode(f *testing.F) {
	agenttest.FuzzReader(f, Agent{},
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/x"}}],"usage":{"input_tokens":-1,"output_tokens":9223372036854775807}}}`+"\n"+
			`{"type":"result","usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807},"model_usage_since_last_result":{"a":{"inputTokens":9223372036854775807,"outputTokens":-4},"b":{"inputTokens":9223372036854775807}}}`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"TodoWrite","input":{"todos":[{"content":"a","status":"in_progress"},{"content":"","status":7}]}}]}}`+"\n"+
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"Exit code 99999999999999999999\n"}]}]}}`,
		`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"q","options":[{"label":"a"},{"label":""}]}]},"permission_suggestions":[{}]}}`,
		`{"type":"stream_event","api_message_id":"m","event":{"type":"message_start","message":{"id":"m","usage":{"input_tokens":7}}}}`+"\n"+
			`{"type":"stream_event","api_message_id":"m","event":{"type":"message_delta","usage":{"output_tokens":5}}}`,
		`{"type":"system","subtype":"permission_denied","message":"needs approval","tool_name":"Bash"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":-1}}`,
		`{"type":"tool_progress","tool_name":"Bash","tool_use_id":"t"}`,
	)
}

// TestIDs pins the id scheme: "<prefix>-<line>-<index>" for observations,
// eventstore.RecordID(prefix, activity.updated, "<line>-<index>") for
// activity updates, lines counted from 1 with blank lines included.
func TestIDs(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, agenttest.Lines(
		``,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2}}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}`,
		`{"type":"result","subtype":"success","result":"ok","usage":{"input_tokens":1,"output_tokens":2}}`,
	)...)
	var got []string
	for _, e := range evs {
		got = append(got, agenttest.ID(e))
	}
	want := []string{
		"launch-1-2-0",
		eventstore.RecordID(agenttest.Prefix, eventstore.KindActivity, "2-1"),
		eventstore.RecordID(agenttest.Prefix, eventstore.KindActivity, "3-0"),
		"launch-1-4-0", // usage
		"launch-1-4-1", // the claim
		"",             // the turn end is not appended
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
}

// TestTooManyEvents: one line cannot flood the journal.
func TestTooManyEvents(t *testing.T) {
	var blocks []string
	for i := range 200 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"t%d"}`, i))
	}
	line := `{"type":"assistant","message":{"id":"m","content":[` + strings.Join(blocks, ",") + `]}}`
	evs := agenttest.Parse(t, Agent{}, []byte(line))
	if len(evs) != agent.MaxEventsPerLine+1 {
		t.Fatalf("got %d events, want %d", len(evs), agent.MaxEventsPerLine+1)
	}
	if got := agenttest.Describe(evs[len(evs)-1]); got != "diagnostic too-many-events" {
		t.Errorf("last event %q, want the too-many-events diagnostic", got)
	}
}

// TestLongText: long assistant text and commands are clipped to fit a record.
func TestLongText(t *testing.T) {
	text := strings.Repeat("\u0001", 300<<10) // six bytes each in JSON: a 3.6 MB line
	line, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
		map[string]any{"type": "text", "text": text},
		map[string]any{"type": "tool_use", "id": "t", "name": "Bash", "input": map[string]any{"command": text}},
	}}})
	evs := agenttest.Parse(t, Agent{}, line) // parse checks the encoded size
	if n := len(evs[0].Observation.Signal.Payload.(*eventstore.MessageSignal).Text); n > agent.MaxTextBytes {
		t.Errorf("message text is %d bytes, want at most %d", n, agent.MaxTextBytes)
	}
}

// TestAdvertisedCommands: Claude Code's init slash_commands (a real
// capture) become one Commands event, sent again only when the list
// changes.
func TestAdvertisedCommands(t *testing.T) {
	c := agenttest.CapturesByName(t)
	todo, ok := c["real/todo.jsonl"]
	if !ok {
		t.Fatal("no capture real/todo.jsonl")
	}
	// The init line read twice (Claude Code prints one per turn) is one
	// advertisement.
	got := agenttest.Advertised(agenttest.Parse(t, Agent{}, append([][]byte{todo[0]}, todo...)...))
	if len(got) != 1 || len(got[0]) != 44 {
		t.Fatalf("Claude Code advertised %d lists (%v), want one of 44 commands", len(got), got)
	}
	names := []string{}
	for _, c := range got[0] {
		names = append(names, c.Name)
	}
	for _, want := range []string{"compact", "context", "doctor", "security-review", "verify"} {
		if !slices.Contains(names, want) {
			t.Errorf("advertised %v lacks %q", names, want)
		}
	}

}
