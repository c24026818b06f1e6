package codex

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

func TestCodexCaptures(t *testing.T) {
	agenttest.CheckCaptures(t, Agent{}, []agenttest.CaptureCase{{
		Capture: "agentcmd/stream-output-1.jsonl",
		Want: []string{
			"session 019a2d7a-41c4-78b1-b7cc-a45d62a89cd5 ",
			"message: 4",
			"usage = in=2946 out=7 total=2953",
			"completed: 4",
			"turn end",
		},
	}, {
		Capture: "agentcmd/stream-output-2.jsonl",
		Want: []string{
			"session 019a2d7a-6455-7170-a661-c6d8b94c630a ",
			"activity executing command:bash -lc ls tool=command_execution call=command_execution:started active=true",
			"activity call=command_execution:succeeded active=false",
			"message: Files here: `stream-output-1.jsonl`, `stream-output-2.jsonl`, `test.js`.",
			"usage = in=6040 out=129 total=6169",
			"completed: Files here: `stream-output-1.jsonl`, `stream-output-2.jsonl`, `test.js`.",
			"turn end",
		},
	}, {
		Capture: "agentcmd/stream-output-3.jsonl",
		Want: []string{
			"session 019a2d7a-8e1c-7111-b1a6-8cec551a55a0 ",
			"activity editing file:/private/tmp/codex-research-test/hello.txt tool=file_change call=file_change:started active=true",
			"activity call=file_change:succeeded active=false",
			"message: Created `hello.txt` containing `Hello from Codex`.",
			"usage = in=6008 out=51 total=6059",
			"completed: Created `hello.txt` containing `Hello from Codex`.",
			"turn end",
		},
	}, {
		// Started and cut off: nothing semantic yet.
		Capture: "agentcmd/stream-output-multi-1.jsonl",
		Want:    []string{"session 019a2d7b-c0ed-75a0-8908-de832785d47f "},
	}})
}

// TestCodexRealCaptures pins what the parser makes of Codex 0.169.0's own
// output (testdata/real, see its README).
func TestCodexRealCaptures(t *testing.T) {
	agenttest.CheckCaptures(t, Agent{}, []agenttest.CaptureCase{{
		// A non-zero exit code fails the call, with the end of its output.
		Capture: "real/toolfail.jsonl",
		Want: []string{
			"session 01a20b39-2c2f-7c92-8e6c-4a686a695327 ",
			"message: Running a failing command.",
			"activity executing command:/bin/bash -lc 'echo about to fail; exit 3' tool=command_execution call=command_execution:started active=true",
			`activity call=command_execution:failed exit=3 error="about to fail" active=false`,
			"message: Reading a missing file.",
			"activity executing command:/bin/bash -lc 'cat does-not-exist.txt' tool=command_execution call=command_execution:started active=true",
			`activity call=command_execution:failed exit=1 error="cat: does-not-exist.txt: No such file or directory" active=false`,
			"message: Both tools failed as expected.",
			"usage = in=450 out=28 total=478",
			"completed: Both tools failed as expected.",
			"turn end",
		},
	}, {
		// The list on item.started, then on item.updated; the same list
		// on item.completed is not reported again.
		Capture: "real/todo.jsonl",
		Want: []string{
			"session 01a20b39-2b0b-78e3-9e72-e25113e25c34 ",
			"message: Planning.",
			"plan: [ ] Write the file; [ ] Run the tests",
			"plan: [x] Write the file; [x] Run the tests",
			"message: Plan done.",
			"usage = in=450 out=45 total=495",
			"completed: Plan done.",
			"turn end",
		},
	}, {
		// The error event and turn.failed report one failure, whose
		// message is an API error body: one claim, with the body's message.
		Capture: "real/error400.jsonl",
		Want: []string{
			"session 01a20b39-2ebc-7970-8047-9457a0aaa292 ",
			`failed: scripted 400 error | {"error":{"code":"invalid_request_error","message":"scripted 400 error","param":null,"type":"invalid_request_error"}}`,
			"turn failed: scripted 400 error",
		},
	}, {
		Capture: "real/error429.jsonl",
		Want: []string{
			"session 01a20b39-2fb8-7a53-862e-83b966383d1e ",
			"failed: exceeded retry limit, last status: 429 Too Many Requests",
			"turn failed: exceeded retry limit, last status: 429 Too Many Requests",
		},
	}, {
		// Each reconnection is a provider error the turn went on after.
		Capture: "real/error500-defaultretries.jsonl",
		Want: []string{
			"session 01a20b2c-6f5e-7ec1-8e14-78dcc61c2d6d ",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"diagnostic provider-error",
			"failed: We’re currently experiencing high demand, which may cause temporary errors.",
			"turn failed: We’re currently experiencing high demand, which may cause temporary errors.",
		},
	}, {
		// A resumed thread's first turn.completed counts the turns of the
		// process before it (100 + 180 prompt tokens, 4 + 5 output): the
		// totals are the thread's, reported as cumulative.
		Capture: "real/resume-2.jsonl",
		Want: []string{
			"session 01a20b31-2151-7551-afea-cdc5447af56d ",
			"message: Second run answer, resumed.",
			"usage = in=280 out=9 total=289",
			"completed: Second run answer, resumed.",
			"turn end",
		},
	}})
}

// TestCodexResumeUsage: the runtime folds a resumed process's cumulative
// totals over the first process's, and gets the thread's totals, not their
// sum.
func TestCodexResumeUsage(t *testing.T) {
	c := agenttest.CapturesByName(t)
	first := agenttest.Parse(t, Agent{}, c["real/resume-1.jsonl"]...)
	second := agenttest.Parse(t, Agent{}, c["real/resume-2.jsonl"]...)
	got := agenttest.FinalUsage(append(first, second...))
	if agent.Deref(got.In) != 280 || agent.Deref(got.Out) != 9 {
		t.Errorf("totals over both processes %s, want in=280 out=9", got)
	}
}

func TestCodexNativeIDs(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, agenttest.CapturesByName(t)["real/shell.jsonl"]...)
	n := 0
	for _, e := range evs {
		if o := e.Observation; o != nil {
			n++
			if want := (eventstore.NativeIDs{SessionID: "01a20b39-2548-7cb0-a9f1-1cb452362b89"}); agenttest.NativeOf(o) != want {
				t.Errorf("%s: native %+v, want %+v", agenttest.Describe(e), agenttest.NativeOf(o), want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no observations")
	}
}

func TestCodexSynthetic(t *testing.T) {
	agenttest.CheckLines(t, Agent{}, []agenttest.LineCase{{
		Name: "parallel commands complete in any order",
		Lines: []string{
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"go test ./a","status":"in_progress"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"go test ./b","status":"in_progress"}}`,
			`{"type":"item.updated","item":{"id":"item_2","type":"command_execution","command":"go test ./b","status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"go test ./b","aggregated_output":"--- FAIL: TestB\nFAIL\n","exit_code":1,"status":"failed"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"go test ./a","exit_code":0,"status":"completed"}}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"go test ./a","exit_code":0,"status":"completed"}}`,
		},
		Want: []string{
			"activity executing command:go test ./a tool=command_execution call=command_execution:started active=true",
			"activity executing command:go test ./b tool=command_execution call=command_execution:started active=true",
			`activity call=command_execution:failed exit=1 error="--- FAIL: TestB\nFAIL"`,
			"activity call=command_execution:succeeded active=false",
		},
	}, {
		Name: "failed tools of every kind",
		Lines: []string{
			`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}`,
			`{"type":"item.started","item":{"id":"i2","type":"mcp_tool_call","server":"gh","tool":"create_issue","arguments":{"title":"t"},"result":null,"error":null,"status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"i2","type":"mcp_tool_call","server":"gh","tool":"create_issue","arguments":{"title":"t"},"result":null,"error":{"message":"401 Unauthorized"},"status":"failed"}}`,
			`{"type":"item.completed","item":{"id":"i3","type":"file_change","changes":[{"path":"/r/a","kind":"update"}],"status":"failed"}}`,
			`{"type":"item.completed","item":{"id":"i4","type":"command_execution","command":"true","aggregated_output":"","exit_code":0,"status":"failed"}}`,
		},
		Want: []string{
			"activity executing command:rm -rf / tool=command_execution call=command_execution:started active=true",
			`activity call=command_execution:failed error="the command was declined" active=false`,
			"activity executing tool:gh.create_issue tool=gh.create_issue call=gh.create_issue:started active=true",
			`activity call=gh.create_issue:failed error="401 Unauthorized" active=false`,
			"activity editing file:/r/a tool=file_change call=file_change:started active=true",
			"activity call=file_change:failed active=false",
			"activity executing command:true tool=command_execution call=command_execution:started active=true",
			"activity call=command_execution:failed exit=0 active=false",
		},
	}, {
		// turn.completed reports the thread's running totals: the same
		// totals twice add nothing, later totals replace (not add to) them.
		Name: "cumulative usage is not double counted",
		Lines: []string{
			`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":10}}`,
			`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":80,"output_tokens":10}}`,
			`{"type":"turn.started"}`,
			`{"type":"item.completed","item":{"id":"item_9","type":"agent_message","text":"second"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":250,"cached_input_tokens":200,"output_tokens":30,"reasoning_output_tokens":12}}`,
		},
		Want: []string{
			"usage = in=100 out=10 total=110",
			"completed: Codex completed the turn",
			"turn end",
			"completed: Codex completed the turn",
			"turn end",
			"message: second",
			"usage = in=250 out=30 total=280",
			"completed: second",
			"turn end",
		},
	}, {
		// An error the turn goes on after is a provider error, reported
		// with the next line; one that turn.failed repeats is the claim.
		Name: "errors and failures",
		Lines: []string{
			`{"type":"error","message":"stream disconnected; retrying 1/5"}`,
			`{"type":"item.completed","item":{"id":"item_3","type":"error","message":"command timed out"}}`,
			`{"type":"error","message":"{\"type\":\"error\",\"error\":{\"type\":\"usage_limit_reached\",\"message\":\"usage limit reached\"}}"}`,
			`{"type":"turn.failed","error":{"message":"{\"type\":\"error\",\"error\":{\"type\":\"usage_limit_reached\",\"message\":\"usage limit reached\"}}"}}`,
			`{"type":"error","message":"first"}`,
			`{"type":"turn.failed","error":{"message":"second"}}`,
			`{"type":"turn.failed"}`,
			`{"type":"turn.failed","error":{"message":"{\"message\":\"plain body\"}"}}`,
			`{"type":"turn.failed","error":{"message":"{not json"}}`,
		},
		Want: []string{
			"diagnostic provider-error",
			"diagnostic provider-error",
			`failed: usage limit reached | {"type":"error","error":{"type":"usage_limit_reached","message":"usage limit reached"}}`,
			"turn failed: usage limit reached",
			"diagnostic provider-error",
			"failed: second",
			"turn failed: second",
			"failed: Codex turn failed",
			"turn failed: Codex turn failed",
			`failed: plain body | {"message":"plain body"}`,
			"turn failed: plain body",
			"failed: {not json",
			"turn failed: {not json",
		},
	}, {
		Name: "other tools",
		Lines: []string{
			`{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"fs","tool":"read_file","arguments":{"path":"/r/x.go"},"status":"in_progress"}}`,
			`{"type":"item.started","item":{"id":"item_3","type":"web_search","query":"go fuzzing","action":{"type":"search","query":"go fuzzing"}}}`,
			`{"type":"item.started","item":{"id":"item_5","type":"web_search","query":"","action":{"type":"open_page","url":"https://go.dev/doc/fuzz"}}}`,
			`{"type":"item.started","item":{"id":"item_6","type":"web_search","query":"q","action":"other"}}`,
			`{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"/r/a","kind":"update"},{"path":"/r/b","kind":"add"}],"status":"completed"}}`,
			`{"type":"item.started","item":{"id":"item_7","type":"collab_tool_call","tool":"spawn_agent","sender_thread_id":"t","receiver_thread_ids":[],"agents_states":{},"status":"in_progress"}}`,
		},
		Want: []string{
			"activity executing tool:fs.read_file tool=fs.read_file call=fs.read_file:started active=true",
			"activity reviewing search:go fuzzing tool=web_search call=web_search:started active=true",
			"activity reviewing url:https://go.dev/doc/fuzz tool=web_search call=web_search:started active=true",
			"activity reviewing search:q tool=web_search call=web_search:started active=true",
			"activity editing file:/r/a (2 files) tool=file_change call=file_change:started active=true",
			"activity call=file_change:succeeded",
			"activity executing tool:spawn_agent tool=spawn_agent call=spawn_agent:started active=true",
		},
	}, {
		Name: "reasoning and metadata yield nothing but the session",
		Lines: []string{
			`{"type":"thread.started","thread_id":"t"}`,
			`{"type":"thread.started","thread_id":"t"}`,
			`{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"**thinking**"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"agent_message","text":""}}`,
			`{"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[]}}`,
		},
		Want: []string{"session t "},
	}, {
		Name: "unknown items and bad shapes",
		Lines: []string{
			`{"type":"item.completed","item":{"id":"item_1","type":"hologram"}}`,
			`{"type":"item.started","item":{"id":"item_2","type":"hologram"}}`,
			`{"type":"item.completed"}`,
			`{"type":"turn.completed","usage":{"input_tokens":"many"}}`,
		},
		Want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
		},
	}})
}

// TestCodexFlush: an error event that is the last line is reported when the
// stream ends, under ids of a line after the last.
func TestCodexFlush(t *testing.T) {
	p := agenttest.NewReader(t, Agent{})
	f, ok := p.(agent.Flusher)
	if !ok {
		t.Fatal("the Codex parser is not a Flusher")
	}
	if evs := p.Parse([]byte(`{"type":"error","message":"stream closed"}`)); len(evs) != 0 {
		t.Fatalf("the error line gave %v, want nothing until the next line", agenttest.DescribeAll(evs))
	}
	evs := f.Flush()
	agenttest.CheckEvents(t, evs)
	if got := agenttest.DescribeAll(evs); !cmp.Equal(got, []string{"diagnostic provider-error"}) {
		t.Fatalf("Flush gave %v, want the held error", got)
	}
	o := evs[0].Observation
	d := o.Signal.Payload.(*eventstore.DiagnosticSignal)
	if o.ObservationID != "launch-1-2-0" || o.RawText != `{"type":"error","message":"stream closed"}` || d.LineType != "error" {
		t.Errorf("got id %s, raw %q, line type %q; want launch-1-2-0, the error line, error", o.ObservationID, o.RawText, d.LineType)
	}
	if again := f.Flush(); again != nil {
		t.Errorf("a second Flush gave %v, want nothing", agenttest.DescribeAll(again))
	}
}
