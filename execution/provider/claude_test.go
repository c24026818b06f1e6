package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestClaudeCaptures(t *testing.T) {
	c := capturesByName(t, ClaudeCode)
	join := func(names ...string) [][]byte {
		var out [][]byte
		for _, n := range names {
			if c[n] == nil {
				t.Fatalf("no capture %s", n)
			}
			out = append(out, c[n]...)
		}
		return out
	}
	tests := []struct {
		name  string
		lines [][]byte
		want  []string
	}{{
		name:  "basic query",
		lines: join("gleam/basic_query.ndjson"),
		want: []string{
			"message: 4",
			"usage + in=21580 out=5 total=21585", // 10 + 21570 cache creation + 0 cache read
			"usage = in=21580 out=25 total=21605",
			"completed: 4",
		},
	}, {
		name:  "tool call and its result in one session",
		lines: join("gleam/system_message.json", "gleam/assistant_message.json", "gleam/user_message.json", "gleam/result_success.json"),
		want: []string{
			"activity executing command:ls -la tool=Bash active=true",
			"usage + in=20820 out=4 total=20824",
			"activity active=false",
			"usage = in=42339 out=424 total=42763",
			"completed: Here are the files in the current directory.",
		},
	}, {
		name:  "result without a call is only a claim",
		lines: join("gleam/user_message.json"),
		want:  nil,
	}, {
		name:  "error result",
		lines: join("gleam/result_error.json"),
		want: []string{
			"usage = in=50 out=10 total=60",
			"failed: Claude Code ended the turn with error_during_execution",
		},
	}, {
		name:  "claude-code-action sample turns",
		lines: join("claude-code-action/sample-turns.json"),
		want: []string{
			"message: I'll help you with this task. Let me start by examining the file to understand what needs to be changed.",
			"activity reviewing file:/path/to/sample/file.py tool=Read active=true",
			"usage + in=150 out=75 total=225",
			"activity active=false",
			"message: I can see the debug print statement that needs to be removed. Let me fix this by editing the file.",
			"activity editing file:/path/to/sample/file.py tool=Edit active=true",
			"usage + in=300 out=50 total=350",
			"activity active=false",
			"message: Perfect! I've successfully removed the debug print statement from the function. Let me now create a pull request comment to document this change.",
			"activity executing tool:mcp__github__add_pull_request_review_comment tool=mcp__github__add_pull_request_review_comment active=true",
			"usage + in=225 out=80 total=305",
			"activity active=false",
			"message: Great! I've successfully completed the requested task:\n\n1. ✅ Located the debug print statement in the file\n2. ✅ Removed the print statement while preserving the function logic\n3. ✅ Added a review comment documenting the change\n\nThe debug print statement has been removed as requested by the reviewers.",
			"usage + in=270 out=60 total=330",
			"completed: Successfully removed debug print statement from file and added review comment to document the change.",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeAll(parse(t, ClaudeCode, tt.lines...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaudeBasicQueryExact pins whole events of the basic query capture.
func TestClaudeBasicQueryExact(t *testing.T) {
	evs := parse(t, ClaudeCode, capturesByName(t, ClaudeCode)["gleam/basic_query.ndjson"]...)
	obs := func(id string, p eventstore.SignalPayload) Event {
		return Event{Observation: &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedProviderOutput,
			Confidence: eventstore.ConfidenceHigh, Signal: eventstore.NewSignal(p)}}
	}
	want := []Event{
		obs("launch-1-2-0", &eventstore.MessageSignal{Text: "4", Format: "markdown"}),
		obs("launch-1-2-1", &eventstore.UsageSignal{InputTokens: ptr[int64](21580), OutputTokens: ptr[int64](5), TotalTokens: ptr[int64](21585)}),
		obs("launch-1-3-0", &eventstore.UsageSignal{InputTokens: ptr[int64](21580), OutputTokens: ptr[int64](25), TotalTokens: ptr[int64](21605), Cumulative: true}),
		obs("launch-1-3-1", &eventstore.CompletedClaimSignal{Summary: "4"}),
	}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestClaudeSynthetic(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{{
		// Three calls in one message, sent as two lines of the same step (as
		// Claude Code does, one line per content block, usage repeated),
		// answered out of order in two user lines.
		name: "parallel tool calls",
		lines: []string{
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/r/a.go"}},{"type":"tool_use","id":"b","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100,"output_tokens":20}}}`,
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"c","name":"Grep","input":{"pattern":"x","path":"/r"}}],"usage":{"input_tokens":100,"output_tokens":20}}}`,
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/r/a.go"}}],"usage":{"input_tokens":100,"output_tokens":20}}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b","content":"ok"}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","content":"x"},{"type":"tool_result","tool_use_id":"a","content":"package a"}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"again"}]}}`,
		},
		want: []string{
			"activity reviewing file:/r/a.go tool=Read active=true",
			"activity executing command:go test ./... tool=Bash active=true",
			"usage + in=100 out=20 total=120",
			"activity reviewing tool:Grep tool=Grep active=true",
			"activity active=false",
		},
	}, {
		name: "edit and write tools target their file",
		lines: []string{
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Write","input":{"file_path":"/r/new.go","content":"x"}},{"type":"tool_use","id":"b","name":"MultiEdit","input":{"file_path":"/r/old.go","edits":[]}},{"type":"tool_use","id":"c","name":"TodoWrite","input":{"todos":[]}},{"type":"tool_use","id":"d","name":"Edit","input":{}}]}}`,
		},
		want: []string{
			"activity editing file:/r/new.go tool=Write active=true",
			"activity editing file:/r/old.go tool=MultiEdit active=true",
			"activity planning tool:TodoWrite tool=TodoWrite active=true",
			"activity editing tool:Edit tool=Edit active=true",
		},
	}, {
		// The step's output count grows on later lines; the result totals
		// replace the increments; a second query adds to the first.
		name: "usage is never double counted",
		lines: []string{
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
			`{"type":"assistant","uuid":"u2","message":{"id":"m1","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
			`{"type":"assistant","uuid":"u3","message":{"id":"m1","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":9}}}`,
			`{"type":"result","subtype":"success","uuid":"r1","result":"done","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":9}}`,
			`{"type":"result","subtype":"success","uuid":"r1","result":"done","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":9}}`,
			`{"type":"assistant","uuid":"u4","message":{"id":"m2","content":[{"type":"text","text":"c"}],"usage":{"input_tokens":20,"output_tokens":4}}}`,
			`{"type":"result","subtype":"success","uuid":"r2","result":"done again","usage":{"input_tokens":20,"output_tokens":4}}`,
		},
		want: []string{
			"message: a",
			"usage + in=15 out=1 total=16",
			"message: b",
			"usage + in=- out=8 total=8",
			"usage = in=15 out=9 total=24",
			"completed: done",
			"message: c",
			"usage + in=20 out=4 total=24",
			"usage = in=35 out=13 total=48",
			"completed: done again",
		},
	}, {
		name: "subagent lines report tool calls only",
		lines: []string{
			`{"type":"assistant","parent_tool_use_id":"task1","message":{"id":"s1","content":[{"type":"text","text":"inner"},{"type":"tool_use","id":"x","name":"Glob","input":{"pattern":"*"}}],"usage":{"input_tokens":5,"output_tokens":5}}}`,
		},
		want: []string{"activity reviewing tool:Glob tool=Glob active=true"},
	}, {
		name: "error results",
		lines: []string{
			`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`,
			`{"type":"result","subtype":"error_max_turns","is_error":false}`,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"","errors":["tool crashed","and again"]}`,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[""]}`,
		},
		want: []string{
			"failed: Invalid API key · Please run /login",
			"failed: Claude Code ended the turn with error_max_turns",
			"failed: tool crashed | and again",
			"failed: claude-code reported a failure without a reason",
		},
	}, {
		name: "success without a result text",
		lines: []string{
			`{"type":"result","subtype":"success","result":"  "}`,
		},
		want: []string{"completed: Claude Code finished the turn without a result text"},
	}, {
		name: "metadata, thinking and partial events yield nothing",
		lines: []string{
			`{"type":"system","subtype":"init","session_id":"s","tools":["Bash"]}`,
			`{"type":"system","subtype":"compact_boundary"}`,
			`{"type":"stream_event","event":{"type":"content_block_delta"}}`,
			`{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"\n\n"}]}}`,
			`{"type":"user","message":{"role":"user","content":"run the tests"}}`,
		},
		want: nil,
	}, {
		name: "unknown content block and bad shapes",
		lines: []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"hologram"}]}}`,
			`{"type":"assistant","message":{"id":"m","content":{"type":"text"}}}`,
			`{"type":"assistant"}`,
			`{"type":"result","usage":"lots"}`,
			`{"type":"result","usage":{"input_tokens":-5,"output_tokens":3},"result":"ok"}`,
		},
		want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"usage = in=- out=3 total=-",
			"completed: ok",
		},
	}, {
		name: "duplicate lines are read once",
		lines: []string{
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"once"}]}}`,
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"once"}]}}`,
		},
		want: []string{"message: once"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeAll(parse(t, ClaudeCode, lines(tt.lines...)...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
