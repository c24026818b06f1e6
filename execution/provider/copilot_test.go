package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCopilotCaptures(t *testing.T) {
	c := capturesByName(t, Copilot)
	tests := []struct {
		capture string
		want    []string
	}{{
		capture: "minions/copilot-output-sample-default.jsonl",
		want: []string{
			"message: pong",
			"usage + in=- out=52 total=-",
			"usage + in=- out=141 total=-",
			"activity executing tool:task_complete tool=task_complete active=true",
			"activity active=false",
			"completed: pong",
			// result: exit code 0, already claimed by session.task_complete.
		},
	}, {
		capture: "minions/copilot-output-sample-claude.jsonl",
		want: []string{
			"message: pong",
			"usage + in=- out=56 total=-",
			"usage + in=- out=146 total=-",
			"activity executing tool:task_complete tool=task_complete active=true",
			"activity active=false",
			`completed: Said "pong" as requested.`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			lines, ok := c[tt.capture]
			if !ok {
				t.Fatalf("no capture %s", tt.capture)
			}
			got := describeAll(parse(t, Copilot, lines...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCopilotSynthetic(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{{
		name: "parallel tool calls complete in any order",
		lines: []string{
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"c1","name":"view"},{"toolCallId":"c2","name":"bash"}],"outputTokens":30}}`,
			`{"type":"tool.execution_start","id":"e2","data":{"toolCallId":"c1","toolName":"view","arguments":{"path":"/r/README.md"}}}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":"c2","toolName":"bash","arguments":{"command":"make test","description":"run tests"}}}`,
			`{"type":"tool.execution_start","id":"e4","data":{"toolCallId":"c3","toolName":"edit","arguments":{"path":"/r/main.go","old_str":"a","new_str":"b"}}}`,
			`{"type":"tool.execution_complete","id":"e5","data":{"toolCallId":"c2","success":false,"result":{"content":"exit 2"}}}`,
			`{"type":"tool.execution_complete","id":"e6","data":{"toolCallId":"c3","success":true}}`,
			`{"type":"tool.execution_complete","id":"e7","data":{"toolCallId":"c1","success":true}}`,
		},
		want: []string{
			"usage + in=- out=30 total=-",
			"activity reviewing file:/r/README.md tool=view active=true",
			"activity executing command:make test tool=bash active=true",
			"activity editing file:/r/main.go tool=edit active=true",
			"activity active=false",
		},
	}, {
		name: "usage counted once per message and duplicate lines read once",
		lines: []string{
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"hello","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"hello","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e2","data":{"messageId":"m1","content":"","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e3","data":{"messageId":"m2","content":"bye","outputTokens":7}}`,
		},
		want: []string{
			"message: hello",
			"usage + in=- out=12 total=-",
			"message: bye",
			"usage + in=- out=7 total=-",
		},
	}, {
		name: "one-shot run: the result makes the claim",
		lines: []string{
			`{"type":"assistant.message_delta","id":"e1","data":{"messageId":"m1","deltaContent":"po"}}`,
			`{"type":"assistant.message","id":"e2","data":{"messageId":"m1","content":"pong"}}`,
			`{"type":"assistant.turn_end","id":"e3","data":{"turnId":"0"}}`,
			`{"type":"result","sessionId":"s","exitCode":0,"usage":{"premiumRequests":1}}`,
			`{"type":"result","sessionId":"s","exitCode":0}`,
		},
		want: []string{
			"message: pong",
			"completed: pong",
			"completed: Copilot ended the run with exit code 0",
		},
	}, {
		name: "failures",
		lines: []string{
			`{"type":"session.task_complete","id":"e1","data":{"summary":"could not build","success":false}}`,
			`{"type":"result","exitCode":0}`,
			`{"type":"result","exitCode":1}`,
		},
		want: []string{
			"failed: could not build",
			"failed: Copilot ended the run with exit code 1",
		},
	}, {
		name: "session setup yields nothing",
		lines: []string{
			`{"type":"session.mcp_servers_loaded","id":"e1","data":{"servers":[]},"ephemeral":true}`,
			`{"type":"session.tools_updated","id":"e2","data":{"model":"gpt-5.4"}}`,
			`{"type":"user.message","id":"e3","data":{"content":"Say pong"}}`,
			`{"type":"assistant.reasoning","id":"e4","data":{"reasoningId":"r","content":"thinking"}}`,
			`{"type":"session.info","id":"e5","data":{"infoType":"autopilot_continuation"}}`,
		},
		want: nil,
	}, {
		name: "unknown events and bad shapes",
		lines: []string{
			`{"type":"session.hologram","id":"e1","data":{}}`,
			`{"type":"assistant.message","id":"e2"}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":7}}`,
			`{"type":"result","exitCode":"one"}`,
		},
		want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeAll(parse(t, Copilot, lines(tt.lines...)...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
