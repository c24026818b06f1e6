package copilot

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

func TestCopilotCaptures(t *testing.T) {
	c := agenttest.CapturesByName(t)
	tests := []struct {
		capture string
		want    []string
		usage   string
	}{{
		capture: "minions/copilot-output-sample-default.jsonl",
		want: []string{
			"message: pong",
			"usage + in=- out=52 total=52",
			"usage + in=- out=141 total=141",
			"activity executing tool:task_complete tool=task_complete call=task_complete:started active=true",
			"activity call=task_complete:succeeded active=false",
			"completed: pong",
			// result: exit code 0, already claimed by session.task_complete.
			"session 8a216c49-e51c-4eef-9405-bf83298fced2 ",
			"turn end",
		},
		usage: "in=- out=193 total=193",
	}, {
		// Two model calls, one per interaction (the prompt, then the
		// autopilot's continuation), each with its own outputTokens: the
		// totals are their sum, 56 + 146.
		capture: "minions/copilot-output-sample-claude.jsonl",
		want: []string{
			"message: pong",
			"usage + in=- out=56 total=56",
			"usage + in=- out=146 total=146",
			"activity executing tool:task_complete tool=task_complete call=task_complete:started active=true",
			"activity call=task_complete:succeeded active=false",
			`completed: Said "pong" as requested.`,
			"session 64e6240e-4140-4e78-a71b-ef6cf92c76f1 ",
			"turn end",
		},
		usage: "in=- out=202 total=202",
	}}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			lines, ok := c[tt.capture]
			if !ok {
				t.Fatalf("no capture %s", tt.capture)
			}
			evs := agenttest.Parse(t, Agent{}, lines...)
			if diff := cmp.Diff(tt.want, agenttest.DescribeAll(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := agenttest.FinalUsage(evs).String(); got != tt.usage {
				t.Errorf("final usage %s, want %s", got, tt.usage)
			}
		})
	}
}

// TestCopilotRealCaptures pins what the parser makes of Copilot CLI
// 1.0.102's own output (testdata/real, see its README).
func TestCopilotRealCaptures(t *testing.T) {
	agenttest.CheckCaptures(t, Agent{}, []agenttest.CaptureCase{{
		// A shell command that exits non-zero is reported as a success
		// with its exit code: the call failed. A tool error fails the call
		// with its message.
		Capture: "real/toolfail.jsonl",
		Want: []string{
			"message: Running a failing command.",
			"activity executing command:echo about to fail; exit 3 tool=bash call=bash:started active=true",
			`activity call=bash:failed exit=3 error="about to fail" active=false`,
			"message: Reading a missing file.",
			"activity reviewing file:/tmp/capwd/copilot-toolfail/does-not-exist.txt tool=view call=view:started active=true",
			`activity call=view:failed error="Path does not exist" active=false`,
			"message: Both tools failed as expected.",
			"session 176c91a0-f208-48b1-abdb-86de8a53fb49 ",
			"completed: Both tools failed as expected.",
			"turn end",
		},
	}, {
		// The todo list lives in the sql tool's todos table.
		Capture: "real/todo.jsonl",
		Want: []string{
			"message: Planning.",
			"activity planning tool:sql tool=sql call=sql:started active=true",
			"activity call=sql:succeeded active=false",
			"plan: [ ] Writing the file; [ ] Running the tests",
			"activity planning tool:sql tool=sql call=sql:started active=true",
			"activity call=sql:succeeded active=false",
			"plan: [x] Writing the file; [x] Running the tests",
			"message: Plan done.",
			"session d6524f8b-8c23-4f02-8851-0653bb5f9fcb ",
			"completed: Plan done.",
			"turn end",
		},
	}, {
		// The session's error is the reason of the run's failure, once.
		Capture: "real/error400.jsonl",
		Want: []string{
			"session 656fe6b2-d858-44d7-bb83-84c5cfa12ed5 ",
			"failed: 400 scripted 400 error | exit code 1",
			"turn failed: 400 scripted 400 error",
		},
	}, {
		Capture: "real/error500.jsonl",
		Want: []string{
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"session 1f0ae5e8-560f-4155-94da-87091fdfe866 ",
			"failed: Failed to get response from the AI model; retried 5 times (total retry wait time: 15.40 seconds) (Request-ID req_modelserver) Last error: 500 scripted 500 error | exit code 1",
			"turn failed: Failed to get response from the AI model; retried 5 times (total retry wait time: 15.40 seconds) (Request-ID req_modelserver) Last error: 500 scripted 500 error",
		},
	}, {
		Capture: "real/session-id-new.jsonl",
		Want: []string{
			"message: First run answer.",
			"session 11111111-2222-4333-8444-555555555555 ",
			"completed: First run answer.",
			"turn end",
		},
	}})
}

// TestCopilotRetryMessage: a retry names what the failed call answered.
func TestCopilotRetryMessage(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, agenttest.CapturesByName(t)["real/error500.jsonl"]...)
	d := agenttest.Payloads[*eventstore.DiagnosticSignal](evs)[0]
	want := "Copilot CLI retries the model request (api_error) after HTTP 500: scripted 500 error"
	if d.Message != want || d.LineType != "assistant.turn_retry" || d.Adapter != agent.Copilot {
		t.Errorf("got %+v, want message %q for an assistant.turn_retry line", d, want)
	}
}

// TestCopilotNativeIDs: observations carry the event id and the turn id of
// their line, and the session id once the result has said it.
func TestCopilotNativeIDs(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, agenttest.CapturesByName(t)["real/text.jsonl"]...)
	var got []eventstore.NativeIDs
	for _, e := range evs {
		if e.Observation != nil {
			got = append(got, agenttest.NativeOf(e.Observation))
		}
	}
	want := []eventstore.NativeIDs{
		{MessageID: "0f0e347f-823c-4eef-ae81-7c3a513e04eb", TurnID: "0"},
		{SessionID: "194129c6-5344-489e-88f0-450b3d353971"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("native ids (-want +got):\n%s", diff)
	}
}

func TestCopilotSynthetic(t *testing.T) {
	agenttest.CheckLines(t, Agent{}, []agenttest.LineCase{{
		Name: "parallel tool calls complete in any order",
		Lines: []string{
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"c1","name":"view"},{"toolCallId":"c2","name":"bash"}],"outputTokens":30}}`,
			`{"type":"tool.execution_start","id":"e2","data":{"toolCallId":"c1","toolName":"view","arguments":{"path":"/r/README.md"}}}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":"c2","toolName":"bash","arguments":{"command":"make test","description":"run tests"}}}`,
			`{"type":"tool.execution_start","id":"e4","data":{"toolCallId":"c3","toolName":"edit","arguments":{"path":"/r/main.go","old_str":"a","new_str":"b"}}}`,
			`{"type":"tool.execution_progress","id":"e4b","data":{"toolCallId":"c2","progressMessage":"running"}}`,
			`{"type":"tool.execution_complete","id":"e5","data":{"toolCallId":"c2","success":false,"result":{"content":"exit 2"}}}`,
			`{"type":"tool.execution_complete","id":"e6","data":{"toolCallId":"c3","success":true}}`,
			`{"type":"tool.execution_complete","id":"e7","data":{"toolCallId":"c1","success":true}}`,
		},
		Want: []string{
			"usage + in=- out=30 total=30",
			"activity reviewing file:/r/README.md tool=view call=view:started active=true",
			"activity executing command:make test tool=bash call=bash:started active=true",
			"activity editing file:/r/main.go tool=edit call=edit:started active=true",
			"activity tool=bash",
			`activity call=bash:failed error="exit 2"`,
			"activity call=edit:succeeded",
			"activity call=view:succeeded active=false",
		},
	}, {
		Name: "search and fetch tools",
		Lines: []string{
			`{"type":"tool.execution_start","id":"e1","data":{"toolCallId":"c1","toolName":"grep","arguments":{"pattern":"func main","path":"/r"}}}`,
			`{"type":"tool.execution_start","id":"e2","data":{"toolCallId":"c2","toolName":"glob","arguments":{"pattern":"**/*.go"}}}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":"c3","toolName":"web_fetch","arguments":{"url":"https://go.dev"}}}`,
			`{"type":"tool.execution_start","id":"e4","data":{"toolCallId":"c4","toolName":"web_search","arguments":{"query":"go fuzzing"}}}`,
		},
		Want: []string{
			"activity reviewing search:/r (func main) tool=grep call=grep:started active=true",
			"activity reviewing search:**/*.go tool=glob call=glob:started active=true",
			"activity reviewing url:https://go.dev tool=web_fetch call=web_fetch:started active=true",
			"activity reviewing search:go fuzzing tool=web_search call=web_search:started active=true",
		},
	}, {
		// Usage is per model call: every chunk of a call's response shares
		// its apiCallId and repeats its count; assistant.usage says the
		// same call's counts in full.
		Name: "usage counted once per model call",
		Lines: []string{
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"hello","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"hello","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e2","data":{"messageId":"m1","content":"","outputTokens":12}}`,
			`{"type":"assistant.message","id":"e3","data":{"messageId":"m2","apiCallId":"call-2","content":"part one","chunkIndex":0,"chunkCount":2,"outputTokens":40}}`,
			`{"type":"assistant.message","id":"e4","data":{"messageId":"m3","apiCallId":"call-2","content":"part two","chunkIndex":1,"chunkCount":2,"outputTokens":40}}`,
			`{"type":"assistant.usage","id":"e5","data":{"model":"claude-sonnet-4.5","apiCallId":"call-2","inputTokens":157,"outputTokens":40,"cacheReadTokens":30,"cacheWriteTokens":7}}`,
			`{"type":"assistant.usage","id":"e6","data":{"model":"claude-sonnet-4.5","apiCallId":"call-3","inputTokens":200,"outputTokens":8}}`,
		},
		Want: []string{
			"message: hello",
			"usage + in=- out=12 total=12",
			"message: part one",
			"usage + in=- out=40 total=40",
			"message: part two",
			"usage + in=157 out=- total=157",
			"usage + in=200 out=8 total=208",
		},
	}, {
		Name: "a sub-agent's messages are not the operator's, its usage counts",
		Lines: []string{
			`{"type":"assistant.message","id":"e1","data":{"messageId":"m1","content":"inner","parentToolCallId":"task-1","outputTokens":5}}`,
		},
		Want: []string{"usage + in=- out=5 total=5"},
	}, {
		Name: "one-shot run: the result makes the claim",
		Lines: []string{
			`{"type":"assistant.message_delta","id":"e1","data":{"messageId":"m1","deltaContent":"po"}}`,
			`{"type":"assistant.message","id":"e2","data":{"messageId":"m1","content":"pong","turnId":"0"}}`,
			`{"type":"assistant.turn_end","id":"e3","data":{"turnId":"0"}}`,
			`{"type":"result","sessionId":"s","exitCode":0,"usage":{"premiumRequests":1}}`,
			`{"type":"result","sessionId":"s","exitCode":0}`,
		},
		Want: []string{
			"message: pong",
			"session s ",
			"completed: pong",
			"turn end",
			"completed: Copilot ended the run with exit code 0",
			"turn end",
		},
	}, {
		Name: "failures",
		Lines: []string{
			`{"type":"session.task_complete","id":"e1","data":{"summary":"could not build","success":false}}`,
			`{"type":"result","exitCode":0}`,
			`{"type":"result","exitCode":1}`,
			`{"type":"session.error","id":"e2","data":{"errorType":"query","message":"first"}}`,
			`{"type":"session.error","id":"e3","data":{"errorType":"query","message":"second"}}`,
			`{"type":"result","exitCode":1}`,
		},
		Want: []string{
			"failed: could not build",
			"turn failed: could not build",
			"failed: Copilot ended the run with exit code 1",
			"turn failed: Copilot ended the run with exit code 1",
			"diagnostic provider-error",
			"failed: second | exit code 1",
			"turn failed: second",
		},
	}, {
		// An error the session went on after is a provider error; so is a
		// warning.
		Name: "errors that do not end the run",
		Lines: []string{
			`{"type":"session.error","id":"e1","data":{"errorType":"rate_limit","message":"slow down"}}`,
			`{"type":"assistant.turn_start","id":"e2","data":{"turnId":"1"}}`,
			`{"type":"session.error","id":"e3","data":{"errorType":"query","message":"transient"}}`,
			`{"type":"session.warning","id":"e4","data":{"warningType":"mcp","message":"server x is slow"}}`,
			`{"type":"result","exitCode":0}`,
		},
		Want: []string{
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"completed: Copilot ended the run with exit code 0",
			"turn end",
		},
	}, {
		Name: "update_todo checklists and lists",
		Lines: []string{
			`{"type":"tool.execution_start","id":"e1","data":{"toolCallId":"c1","toolName":"update_todo","arguments":{"todos":"- [x] Read the card\n- [ ] Draw it\n* [~] Ship it\nnotes"}}}`,
			`{"type":"tool.execution_complete","id":"e2","data":{"toolCallId":"c1","success":true}}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":"c2","toolName":"update_todo","arguments":{"todos":"- [x] Read the card\n- [ ] Draw it\n* [~] Ship it"}}}`,
			`{"type":"tool.execution_complete","id":"e4","data":{"toolCallId":"c2","success":true}}`,
			`{"type":"tool.execution_start","id":"e5","data":{"toolCallId":"c3","toolName":"update_todo","arguments":{"todos":[{"content":"Read the card","status":"completed"},{"title":"Draw it","status":"in_progress"}]}}}`,
			`{"type":"tool.execution_complete","id":"e6","data":{"toolCallId":"c3","success":false,"error":"rejected"}}`,
			`{"type":"tool.execution_start","id":"e7","data":{"toolCallId":"c4","toolName":"update_todo","arguments":{"todos":[{"content":"Read the card","status":"completed"},{"title":"Draw it","status":"in_progress"}]}}}`,
			`{"type":"tool.execution_complete","id":"e8","data":{"toolCallId":"c4","success":true}}`,
		},
		Want: []string{
			"activity planning tool:update_todo tool=update_todo call=update_todo:started active=true",
			"activity call=update_todo:succeeded active=false",
			"plan: [x] Read the card; [ ] Draw it; [>] Ship it",
			"activity planning tool:update_todo tool=update_todo call=update_todo:started active=true",
			"activity call=update_todo:succeeded active=false",
			"activity planning tool:update_todo tool=update_todo call=update_todo:started active=true",
			`activity call=update_todo:failed error="rejected" active=false`,
			"activity planning tool:update_todo tool=update_todo call=update_todo:started active=true",
			"activity call=update_todo:succeeded active=false",
			"plan: [x] Read the card; [>] Draw it",
		},
	}, {
		// The todos of a sql call count once the call succeeded; a failed
		// call changed nothing.
		Name: "sql todos",
		Lines: []string{
			`{"type":"tool.execution_start","id":"e1","data":{"toolCallId":"c1","toolName":"sql","arguments":{"description":"Insert","query":"INSERT INTO todos (id, title) VALUES ('a', 'Do A'), ('b', 'Do B');"}}}`,
			`{"type":"tool.execution_complete","id":"e2","data":{"toolCallId":"c1","success":true,"result":{"content":"2 row(s) inserted."}}}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":"c2","toolName":"sql","arguments":{"description":"Start","query":"UPDATE todos SET status = 'in_progress' WHERE id = 'a'"}}}`,
			`{"type":"tool.execution_complete","id":"e4","data":{"toolCallId":"c2","success":false,"error":{"message":"database is locked","code":"failure"}}}`,
			`{"type":"tool.execution_start","id":"e5","data":{"toolCallId":"c3","toolName":"sql","arguments":{"description":"Start","query":"UPDATE todos SET status = 'in_progress', updated_at = datetime('now') WHERE id = 'a'"}}}`,
			`{"type":"tool.execution_complete","id":"e6","data":{"toolCallId":"c3","success":true}}`,
			`{"type":"tool.execution_start","id":"e7","data":{"toolCallId":"c4","toolName":"sql","arguments":{"description":"Read","query":"SELECT * FROM todos WHERE status = 'pending'"}}}`,
			`{"type":"tool.execution_complete","id":"e8","data":{"toolCallId":"c4","success":true}}`,
		},
		Want: []string{
			"activity planning tool:sql tool=sql call=sql:started active=true",
			"activity call=sql:succeeded active=false",
			"plan: [ ] Do A; [ ] Do B",
			"activity planning tool:sql tool=sql call=sql:started active=true",
			`activity call=sql:failed error="database is locked" active=false`,
			"activity planning tool:sql tool=sql call=sql:started active=true",
			"activity call=sql:succeeded active=false",
			"plan: [>] Do A; [ ] Do B",
			"activity planning tool:sql tool=sql call=sql:started active=true",
			"activity call=sql:succeeded active=false",
		},
	}, {
		Name: "session setup yields nothing",
		Lines: []string{
			`{"type":"session.mcp_servers_loaded","id":"e1","data":{"servers":[]},"ephemeral":true}`,
			`{"type":"session.tools_updated","id":"e2","data":{"model":"gpt-5.4"}}`,
			`{"type":"user.message","id":"e3","data":{"content":"Say pong"}}`,
			`{"type":"assistant.reasoning","id":"e4","data":{"reasoningId":"r","content":"thinking"}}`,
			`{"type":"session.info","id":"e5","data":{"infoType":"autopilot_continuation"}}`,
			`{"type":"session.todos_changed","id":"e6","data":{},"ephemeral":true}`,
			`{"type":"model.call_failure","id":"e7","data":{"statusCode":500,"errorMessage":"{\"message\":\"x\"}"}}`,
		},
		Want: nil,
	}, {
		Name: "unknown events and bad shapes",
		Lines: []string{
			`{"type":"session.hologram","id":"e1","data":{}}`,
			`{"type":"assistant.message","id":"e2"}`,
			`{"type":"tool.execution_start","id":"e3","data":{"toolCallId":7}}`,
			`{"type":"result","exitCode":"one"}`,
		},
		Want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
		},
	}})
}

// TestTodoSQL follows the todos table through the statements Copilot's
// agent writes, and stops at one it cannot follow.
func TestTodoSQL(t *testing.T) {
	tests := []struct {
		name    string
		queries []string
		want    []string // the plan, as "status id text"
		unknown bool
	}{{
		name:    "the CLI's own example",
		queries: []string{"-- Todo dependency example\nINSERT INTO todos (id, title, description) VALUES\n  ('user-model', 'Creating user model', 'Define the User schema'),\n  ('api-routes', 'Creating API routes', 'Implement routes');\nINSERT INTO todo_deps (todo_id, depends_on) VALUES ('api-routes', 'user-model');"},
		want:    []string{"open user-model Creating user model", "open api-routes Creating API routes"},
	}, {
		name: "updates and deletes",
		queries: []string{
			"INSERT INTO todos (id, title, status) VALUES ('a', 'A', 'pending'), ('b', 'B', 'pending'), ('c', 'C''s', 'pending')",
			"UPDATE todos SET status = 'done' WHERE id IN ('a', 'b')",
			"update todos set status='in_progress' where id = 'c' or (id = 'a' and status != 'done')",
			"DELETE FROM todos WHERE id = 'b'; SELECT * FROM todos",
			"UPDATE todos SET status = 'blocked', description = 'waiting' WHERE status <> 'done' AND id NOT IN ('a')",
		},
		want: []string{"done a A", "open c C's"},
	}, {
		name: "columns in table order, conflicts and qualified names",
		queries: []string{
			"INSERT INTO main.todos VALUES ('a', 'A', 'desc', 'in_progress', datetime('now'), datetime('now'))",
			"INSERT OR IGNORE INTO todos (id, title) VALUES ('a', 'A again')",
			"INSERT INTO todos (id, title) VALUES ('a', 'A twice') ON CONFLICT(id) DO NOTHING",
			"INSERT OR REPLACE INTO todos (id, title, status) VALUES ('a', 'A replaced', 'done') RETURNING id",
			"/* all of them */ UPDATE todos SET title = \"x\" || title WHERE 1 = 1",
		},
		unknown: true,
	}, {
		name: "a replace keeps the rest",
		queries: []string{
			"INSERT INTO main.todos VALUES ('a', 'A', 'desc', 'in_progress', datetime('now'), datetime('now'))",
			"INSERT OR IGNORE INTO todos (id, title) VALUES ('a', 'A again')",
			"INSERT INTO todos (id, title) VALUES ('b', 'B') ON CONFLICT(id) DO NOTHING",
			"INSERT OR REPLACE INTO todos (id, title, status) VALUES ('a', 'A replaced', 'done') RETURNING id",
			"DELETE FROM todos WHERE title = 'nothing'",
		},
		want: []string{"open b B", "done a A replaced"},
	}, {
		name:    "a computed status cannot be followed",
		queries: []string{"INSERT INTO todos (id, title) VALUES ('a', 'A')", "UPDATE todos SET status = CASE WHEN id = 'a' THEN 'done' END"},
		unknown: true,
	}, {
		name:    "a statement of another kind cannot be followed",
		queries: []string{"INSERT INTO todos (id, title) VALUES ('a', 'A')", "DROP TABLE todos"},
		unknown: true,
	}, {
		name:    "an insert from a select cannot be followed",
		queries: []string{"INSERT INTO todos (id, title) SELECT id, title FROM other"},
		unknown: true,
	}, {
		name:    "other tables are not the plan",
		queries: []string{"CREATE TABLE notes (x TEXT)", "INSERT INTO notes VALUES ('todos')"},
		want:    nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab todoTable
			for _, q := range tt.queries {
				tab.apply(q)
			}
			if tab.unknown != tt.unknown {
				t.Fatalf("table unknown %v, want %v", tab.unknown, tt.unknown)
			}
			if tt.unknown {
				return
			}
			var got []string
			for _, it := range tab.plan() {
				got = append(got, string(it.Status)+" "+it.ID+" "+it.Text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCopilotFlush: a session error that no result followed is reported
// when the stream ends.
func TestCopilotFlush(t *testing.T) {
	p := agenttest.NewReader(t, Agent{})
	if evs := p.Parse([]byte(`{"type":"session.error","id":"e1","data":{"errorType":"query","message":"boom"}}`)); len(evs) != 0 {
		t.Fatalf("the error line gave %v, want nothing until the result", agenttest.DescribeAll(evs))
	}
	evs := p.(agent.Flusher).Flush()
	agenttest.CheckEvents(t, evs)
	ds := agenttest.Payloads[*eventstore.DiagnosticSignal](evs)
	if len(evs) != 1 || len(ds) != 1 || ds[0].Code != agent.CodeProviderError || ds[0].Message != "Copilot CLI reported an error: boom" {
		t.Fatalf("Flush gave %v, want the held error as a provider-error", agenttest.DescribeAll(evs))
	}
	if again := p.(agent.Flusher).Flush(); again != nil {
		t.Errorf("a second Flush gave %v, want nothing", agenttest.DescribeAll(again))
	}
}

// TestCopilotEventsFile: the session's events file, fed to the parser with
// stdout in either order, gives the usage stdout lacks, each model call
// once, and nothing twice of what both say.
func TestCopilotEventsFile(t *testing.T) {
	c := agenttest.CapturesByName(t)
	tests := []struct {
		name  string
		trail []string // running totals after each usage observation, stdout first
	}{
		// Two calls: 200 + 100 cache read + 50 cache creation in / 30 out,
		// then 260 + 150 / 12.
		{"shell", []string{"in=350 out=30 total=380", "in=760 out=42 total=802"}},
		// Two calls of 55000 / 100 and 58000 / 100, a compaction of 1 / 1
		// (not in session.shutdown's 113600 / 205), and 600 / 5.
		{"compact", []string{"in=55000 out=100 total=55100", "in=113000 out=200 total=113200", "in=113001 out=201 total=113202", "in=113601 out=206 total=113807"}},
		{"text", []string{"in=155 out=17 total=172"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, events := c["real/"+tt.name+".jsonl"], c["real/"+tt.name+".events.jsonl"]
			if stdout == nil || events == nil {
				t.Fatalf("no capture real/%s", tt.name)
			}
			alone := agenttest.Parse(t, Agent{}, stdout...)
			first := agenttest.Parse(t, Agent{}, append(slices.Clone(stdout), events...)...)
			if diff := cmp.Diff(tt.trail, agenttest.UsageTrail(first)); diff != "" {
				t.Errorf("running totals (-want +got):\n%s", diff)
			}
			last := agenttest.Parse(t, Agent{}, append(slices.Clone(events), stdout...)...)
			if got, want := agenttest.FinalUsage(last).String(), tt.trail[len(tt.trail)-1]; got != want {
				t.Errorf("events file first: totals %s, want %s", got, want)
			}
			for _, evs := range [][]agent.Event{first, last} {
				if got, want := len(agenttest.Payloads[*eventstore.MessageSignal](evs)), len(agenttest.Payloads[*eventstore.MessageSignal](alone)); got != want {
					t.Errorf("%d messages, want the %d of stdout alone", got, want)
				}
				var versions []string
				for _, e := range evs {
					if e.Session != nil && e.Session.AgentVersion != "" {
						versions = append(versions, e.Session.AgentVersion)
					}
				}
				if len(versions) == 0 || versions[0] != "1.0.102" {
					t.Errorf("session versions %v, want 1.0.102 from session.start", versions)
				}
			}
		})
	}
}
