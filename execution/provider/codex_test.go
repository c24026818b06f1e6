package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCodexCaptures(t *testing.T) {
	c := capturesByName(t, Codex)
	tests := []struct {
		capture string
		want    []string
	}{{
		capture: "agentcmd/stream-output-1.jsonl",
		want: []string{
			"message: 4",
			"usage = in=2946 out=7 total=2953",
			"completed: 4",
		},
	}, {
		capture: "agentcmd/stream-output-2.jsonl",
		want: []string{
			"activity executing command:bash -lc ls tool=command_execution active=true",
			"activity active=false",
			"message: Files here: `stream-output-1.jsonl`, `stream-output-2.jsonl`, `test.js`.",
			"usage = in=6040 out=129 total=6169",
			"completed: Files here: `stream-output-1.jsonl`, `stream-output-2.jsonl`, `test.js`.",
		},
	}, {
		capture: "agentcmd/stream-output-3.jsonl",
		want: []string{
			"activity editing file:/private/tmp/codex-research-test/hello.txt tool=file_change active=true",
			"activity active=false",
			"message: Created `hello.txt` containing `Hello from Codex`.",
			"usage = in=6008 out=51 total=6059",
			"completed: Created `hello.txt` containing `Hello from Codex`.",
		},
	}, {
		capture: "agentcmd/stream-output-4.jsonl",
		want: []string{
			"activity executing command:bash -lc 'cat test.js' tool=command_execution active=true",
			"activity active=false",
			"message: `test.js` simply contains `console.log('Hello World');`, so running it will print the string “Hello World” to the standard output.",
			"usage = in=6087 out=204 total=6291",
			"completed: `test.js` simply contains `console.log('Hello World');`, so running it will print the string “Hello World” to the standard output.",
		},
	}, {
		capture: "agentcmd/stream-output-5.jsonl",
		want: []string{
			"activity executing command:zsh -lc ls tool=command_execution active=true",
			"activity active=false",
			"message: Found 1 text file `hello.txt`, 5 JSONL logs `stream-output-{1..5}.jsonl`, and `test.js`. There was also a harmless `ps` permission warning from Homebrew’s shellenv script while listing.",
			"usage = in=6086 out=223 total=6309",
			"completed: Found 1 text file `hello.txt`, 5 JSONL logs `stream-output-{1..5}.jsonl`, and `test.js`. There was also a harmless `ps` permission warning from Homebrew’s shellenv script while listing.",
		},
	}, {
		// Started and cut off: nothing semantic yet.
		capture: "agentcmd/stream-output-multi-1.jsonl",
		want:    nil,
	}}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			lines, ok := c[tt.capture]
			if !ok {
				t.Fatalf("no capture %s", tt.capture)
			}
			got := describeAll(parse(t, Codex, lines...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCodexSynthetic(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{{
		name: "parallel commands complete in any order",
		lines: []string{
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"go test ./a","status":"in_progress"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"go test ./b","status":"in_progress"}}`,
			`{"type":"item.updated","item":{"id":"item_2","type":"command_execution","command":"go test ./b","status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"go test ./b","exit_code":1,"status":"failed"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"go test ./a","exit_code":0,"status":"completed"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"go test ./a","exit_code":0,"status":"completed"}}`,
		},
		want: []string{
			"activity executing command:go test ./a tool=command_execution active=true",
			"activity executing command:go test ./b tool=command_execution active=true",
			"activity active=false",
		},
	}, {
		// turn.completed reports the thread's running totals: the same
		// totals twice add nothing, later totals replace (not add to) them.
		name: "cumulative usage is not double counted",
		lines: []string{
			`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":10}}`,
			`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":10}}`,
			`{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_9","type":"agent_message","text":"second"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":250,"cached_input_tokens":200,"output_tokens":30,"reasoning_output_tokens":12}}`,
		},
		want: []string{
			"usage = in=100 out=10 total=110",
			"completed: Codex completed the turn",
			"completed: Codex completed the turn",
			"message: second",
			"usage = in=250 out=30 total=280",
			"completed: second",
		},
	}, {
		name: "failures and errors",
		lines: []string{
			`{"type":"error","message":"stream disconnected; retrying 1/5"}`,
			`{"type":"item.completed","item":{"id":"item_3","type":"error","message":"command timed out"}}`,
			`{"type":"turn.failed","error":{"message":"usage limit reached"}}`,
			`{"type":"turn.failed"}`,
		},
		want: []string{
			"diagnostic provider-error",
			"diagnostic provider-error",
			"failed: usage limit reached",
			"failed: Codex turn failed",
		},
	}, {
		name: "other tools",
		lines: []string{
			`{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"fs","tool":"read_file","arguments":{"path":"/r/x.go"},"status":"in_progress"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"gh","tool":"create_issue","arguments":{"title":"t"},"status":"in_progress"}}`,
			`{"type":"item.started","item":{"id":"item_3","type":"web_search","query":"go fuzzing"}}`,
			`{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"/r/a","kind":"update"},{"path":"/r/b","kind":"add"}],"status":"completed"}}`,
		},
		want: []string{
			"activity executing tool:fs.read_file tool=fs.read_file active=true",
			"activity executing tool:gh.create_issue tool=gh.create_issue active=true",
			"activity reviewing tool:go fuzzing tool=web_search active=true",
			"activity editing file:/r/a (2 files) tool=file_change active=true",
		},
	}, {
		name: "reasoning, todo lists and metadata yield nothing",
		lines: []string{
			`{"type":"thread.started","thread_id":"t"}`,
			`{"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"**thinking**"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"agent_message","text":""}}`,
		},
		want: nil,
	}, {
		name: "unknown items and bad shapes",
		lines: []string{
			`{"type":"item.completed","item":{"id":"item_1","type":"hologram"}}`,
			`{"type":"item.completed"}`,
			`{"type":"turn.completed","usage":{"input_tokens":"many"}}`,
		},
		want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeAll(parse(t, Codex, lines(tt.lines...)...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
