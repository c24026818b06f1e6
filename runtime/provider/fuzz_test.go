package provider

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fuzzParse feeds a fuzzed stream, split into lines, to a new parser: it must
// never panic, and every event must validate as a journal record.
func fuzzParse(f *testing.F, provider string, seeds ...string) {
	// Every capture as a stream, and one line of each kind (type and
	// subtype) alone: more lines would slow the fuzzer's start without
	// adding shapes.
	kinds := map[string]bool{}
	for _, c := range loadCaptures(f, provider) {
		f.Add(bytes.Join(c.lines, []byte("\n")))
		for _, l := range c.lines {
			var k struct{ Type, Subtype string }
			_ = json.Unmarshal(l, &k)
			if !kinds[k.Type+"/"+k.Subtype] {
				kinds[k.Type+"/"+k.Subtype] = true
				f.Add(l)
			}
		}
	}
	for _, seed := range append([]string{
		"", "\n\n", "garbage", `{"type":`, `[1,2,3]`, `null`, `{"type":"hologram"}`,
	}, seeds...) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		p, err := New(provider, testPrefix)
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		for _, l := range bytes.Split(stream, []byte("\n")) {
			got := p.Parse(l)
			if len(got) > MaxEventsPerLine+1 {
				t.Fatalf("one line gave %d events, want at most %d", len(got), MaxEventsPerLine+1)
			}
			evs = append(evs, got...)
		}
		if fl, ok := p.(Flusher); ok {
			evs = append(evs, fl.Flush()...)
		}
		checkEvents(t, evs)
	})
}

func FuzzParseClaudeCode(f *testing.F) {
	fuzzParse(f, ClaudeCode,
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

func FuzzParseCodex(f *testing.F) {
	fuzzParse(f, Codex,
		`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":""}]}}`,
		`{"type":"error","message":"{\"error\":{\"message\":\"x\"}}"}`+"\n"+`{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"x\"}}"}}`,
		`{"type":"item.updated","item":{"id":"i","type":"todo_list","items":[{"text":"a","completed":true},{"text":""}]}}`,
		`{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"x","aggregated_output":"\xff\xfe","exit_code":-9,"status":"failed"}}`,
		`{"type":"item.started","item":{"id":"w","type":"web_search","action":{"type":"open_page","url":"u"}}}`,
	)
}

func FuzzParseCopilot(f *testing.F) {
	fuzzParse(f, Copilot,
		`{"type":"tool.execution_start","id":"x","data":{"toolCallId":"c","toolName":"bash","arguments":{"cmd":["ls","-l"]}}}`,
		`{"type":"tool.execution_start","id":"a","data":{"toolCallId":"s","toolName":"sql","arguments":{"query":"INSERT INTO todos (id, title) VALUES ('a', 'b'); UPDATE todos SET status='done' WHERE id IN ('a') OR (title = 'b' AND id != 'c')"}}}`+"\n"+
			`{"type":"tool.execution_complete","id":"b","data":{"toolCallId":"s","success":true}}`,
		`{"type":"tool.execution_start","id":"u","data":{"toolCallId":"u","toolName":"update_todo","arguments":{"todos":"- [x] a\n- [ ] b"}}}`,
		`{"type":"session.error","id":"e","data":{"message":"m"}}`+"\n"+`{"type":"result","exitCode":1,"sessionId":"s"}`,
		`{"type":"assistant.usage","id":"u","data":{"apiCallId":"c","inputTokens":5,"outputTokens":-1}}`,
		`{"type":"session.start","id":"s","data":{"sessionId":"x","copilotVersion":"1.0.102"}}`+"\n"+
			`{"type":"session.usage_record","id":"r","data":{"usage":{"inputTokens":9223372036854775807,"outputTokens":3,"accounting":{"sourceSessionId":"x","sequence":1}}}}`+"\n"+
			`{"type":"session.compaction_complete","id":"c","data":{"compactionAttemptId":"a","compactionTokensUsed":{"inputTokens":1,"outputTokens":1}}}`,
	)
}

// FuzzTodoSQL: the todos table follows any query without panicking, and
// stays within its bounds.
func FuzzTodoSQL(f *testing.F) {
	for _, q := range []string{
		"INSERT INTO todos (id, title) VALUES ('a', 'A'), ('b', 'B')",
		"UPDATE todos SET status = 'done' WHERE id IN ('a', 'b') AND (status = 'x' OR id != 'c')",
		"DELETE FROM main.todos WHERE id NOT IN ('a'); -- done",
		"INSERT OR REPLACE INTO todos VALUES ('a', 'it''s', \"d\", `s`, [x], 1.5e3) ON CONFLICT(id) DO NOTHING RETURNING *",
		"/* unterminated", "'unterminated", "((((", "INSERT INTO todos (", "UPDATE todos SET",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var tab todoTable
		tab.apply(q)
		tab.apply(q)
		if len(tab.rows) > maxPlanItems {
			t.Fatalf("%d rows, want at most %d", len(tab.rows), maxPlanItems)
		}
		_ = tab.plan()
	})
}
