package claude

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

func TestClaudeCaptures(t *testing.T) {
	c := agenttest.CapturesByName(t)
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
			"session 1d1e46f9-35c7-4834-b529-846d5bb82288 2.1.7",
			"message: 4",
			"usage + in=21580 out=25 total=21605", // the result: 10 + 21570 cache creation + 0 cache read in
			"completed: 4",
			"turn end",
		},
	}, {
		name:  "tool call and its result in one session",
		lines: join("gleam/system_message.json", "gleam/assistant_message.json", "gleam/user_message.json", "gleam/result_success.json"),
		want: []string{
			"session 40e7b02d-c0f9-4876-9010-f514d4eb0603 2.1.3",
			"activity executing command:ls -la tool=Bash call=Bash:started active=true",
			"activity call=Bash:succeeded active=false",
			// modelUsage (2.1.3 has no model_usage_since_last_result):
			// every request of the process, 38 + 28775 + 31159 / 765,
			// beyond result.usage's 42339 / 424 for the query's own.
			"usage + in=59972 out=765 total=60737",
			"completed: Here are the files in the current directory.",
			"turn end",
		},
	}, {
		name:  "result without a call is only a claim",
		lines: join("gleam/user_message.json"),
		want:  []string{"session 40e7b02d-c0f9-4876-9010-f514d4eb0603 "},
	}, {
		name:  "error result",
		lines: join("gleam/result_error.json"),
		want: []string{
			"session 40e7b02d-c0f9-4876-9010-f514d4eb0603 ",
			"usage + in=50 out=10 total=60",
			"failed: Claude Code ended the turn with error_during_execution",
			"turn failed: Claude Code ended the turn with error_during_execution",
		},
	}, {
		name:  "claude-code-action sample turns",
		lines: join("claude-code-action/sample-turns.json"),
		want: []string{
			"session sample-session-id ",
			"message: I'll help you with this task. Let me start by examining the file to understand what needs to be changed.",
			"activity reviewing file:/path/to/sample/file.py tool=Read call=Read:started active=true",
			"activity call=Read:succeeded active=false",
			"message: I can see the debug print statement that needs to be removed. Let me fix this by editing the file.",
			"activity editing file:/path/to/sample/file.py tool=Edit call=Edit:started active=true",
			"activity call=Edit:succeeded active=false",
			"message: Perfect! I've successfully removed the debug print statement from the function. Let me now create a pull request comment to document this change.",
			"activity executing tool:mcp__github__add_pull_request_review_comment tool=mcp__github__add_pull_request_review_comment call=mcp__github__add_pull_request_review_comment:started active=true",
			"activity call=mcp__github__add_pull_request_review_comment:succeeded active=false",
			"message: Great! I've successfully completed the requested task:\n\n1. ✅ Located the debug print statement in the file\n2. ✅ Removed the print statement while preserving the function logic\n3. ✅ Added a review comment documenting the change\n\nThe debug print statement has been removed as requested by the reviewers.",
			"completed: Successfully removed debug print statement from file and added review comment to document the change.",
			"turn end",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agenttest.DescribeAll(agenttest.Parse(t, Agent{}, tt.lines...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaudeRealCaptures pins what the parser makes of Claude Code 2.1.328's
// own output (testdata/real, see its README).
func TestClaudeRealCaptures(t *testing.T) {
	agenttest.CheckCaptures(t, Agent{}, []agenttest.CaptureCase{{
		Capture: "real/toolfail.jsonl",
		Want: []string{
			"session 81db27d2-cc36-482e-af5a-1e4ca39243b2 2.1.328",
			"message: Running a failing command.",
			"activity executing command:echo about to fail; exit 3 tool=Bash call=Bash:started active=true",
			`activity call=Bash:failed exit=3 error="Exit code 3\nabout to fail" active=false`,
			"message: Reading a missing file.",
			"activity reviewing file:/tmp/capwd/claude-toolfail/does-not-exist.txt tool=Read call=Read:started active=true",
			`activity call=Read:failed error="File does not exist. Note: your current working directory is /tmp/capwd/claude-toolfail." active=false`,
			"message: Both tools failed as expected.",
			"usage + in=450 out=28 total=478",
			"completed: Both tools failed as expected.",
			"turn end",
		},
	}, {
		Capture: "real/todo.jsonl",
		Want: []string{
			"session 8a243273-2810-4ecd-994a-3c74139616b3 2.1.328",
			"message: Planning.",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded active=false",
			"plan: [>] Write the file; [ ] Run the tests",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded active=false",
			"plan: [x] Write the file; [x] Run the tests",
			"message: Plan done.",
			"usage + in=450 out=45 total=495",
			"completed: Plan done.",
			"turn end",
		},
	}, {
		// A TodoWrite the CLI refuses sets no plan; WebFetch and Grep
		// target their URL and pattern.
		Capture: "real/tools-unavailable.jsonl",
		Want: []string{
			"session ce0f5c38-ce58-4d29-afbb-8fda835365cf 2.1.328",
			"message: Let me look.",
			"activity executing command:ls /nonexistent-dir tool=Bash call=Bash:started active=true",
			"activity reviewing file:/etc/hostname tool=Read call=Read:started active=true",
			"activity call=Read:succeeded",
			`activity call=Bash:failed exit=2 error="Exit code 2\nls: cannot access '/nonexistent-dir': No such file or directory" active=false`,
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			`activity call=TodoWrite:failed error="Error: No such tool available: TodoWrite. TodoWrite is disabled for this session, in subagents as well as here." active=false`,
			"activity reviewing search:/tmp (TODO) tool=Grep call=Grep:started active=true",
			"activity call=Grep:failed error=\"Error: No such tool available: Grep. Grep is not available in this session — search file contents with `grep` via the Bash tool instead.\" active=false",
			"message: Done with the work.",
			"usage + in=635 out=125 total=760",
			"completed: Done with the work.",
			"turn end",
		},
	}, {
		Capture: "real/webfetch-fails.jsonl",
		Want: []string{
			"session 8469be8f-4b40-43bb-815f-cca7984f5fec 2.1.328",
			"activity executing command:sleep 6; echo done tool=Bash call=Bash:started active=true",
			"activity reviewing url:http://127.0.0.1:9/nothing tool=WebFetch call=WebFetch:started active=true",
			`activity call=WebFetch:failed error="Unable to verify if domain 127.0.0.1 is safe to fetch. This may be due to network restrictions or enterprise security policies blocking claude.ai."`,
			"activity call=Bash:succeeded active=false",
			"message: Waited.",
			"usage + in=300 out=60 total=360",
			"completed: Waited.",
			"turn end",
		},
	}, {
		Capture: "real/permission-deny.jsonl",
		Want: []string{
			"session e2cec5e6-c1b7-4450-87c1-5bdd5549c2ba 2.1.328",
			"message: I will run a command.",
			"activity executing command:echo hello-from-tool && touch made-by-tool tool=Bash call=Bash:started active=true",
			"needs permission: Allow Bash: echo hello-from-tool && touch made-by-tool? [allow allow-always deny]",
			`activity call=Bash:failed error="The user does not allow touching files." active=false`,
			"message: The command printed hello-from-tool.",
			"usage + in=760 out=42 total=802",
			"completed: The command printed hello-from-tool.",
			"turn end",
		},
	}, {
		// system/permission_denied carries a message string where an
		// assistant line has a message object: it must not make the line
		// unreadable. The call fails with the reason.
		Capture: "real/shell-denied.jsonl",
		Want: []string{
			"session 2aac67a5-7cf3-430e-aa16-a031abbef2f7 2.1.328",
			"message: I will run a command.",
			"activity executing command:echo hello-from-tool && touch made-by-tool tool=Bash call=Bash:started active=true",
			`activity call=Bash:failed error="touch in '/tmp/capwd/claude-shell-denied/made-by-tool' needs approval. The path is inside the working directories for this session ('/tmp/capwd/claude-shell-denied'), and Claude Code asks before a shell command creates, changes or removes files there." active=false`,
			"message: The command printed hello-from-tool.",
			"usage + in=760 out=42 total=802",
			"completed: The command printed hello-from-tool.",
			"turn end",
		},
	}, {
		Capture: "real/ask.jsonl",
		Want: []string{
			"session fe895e9e-caea-4f7d-a63b-676b4c1c077c 2.1.328",
			"message: I need to ask.",
			"activity executing tool:AskUserQuestion tool=AskUserQuestion call=AskUserQuestion:started active=true",
			"needs question: Which color should the button be? [Red Blue]",
			"activity call=AskUserQuestion:succeeded active=false",
			"message: You chose blue.",
			"usage + in=250 out=25 total=275",
			"completed: You chose blue.",
			"turn end",
		},
	}, {
		// The retry is a provider error; the text Claude Code writes in
		// place of the reply is not a message, the result's claim says it.
		Capture: "real/error429.jsonl",
		Want: []string{
			"session c09ddd59-4bbc-4ea7-aabb-18a0a5ca0811 2.1.328",
			"diagnostic provider-error",
			"failed: API Error: Request rejected (429) · scripted 429 error",
			"turn failed: API Error: Request rejected (429) · scripted 429 error",
		},
	}, {
		// /compact is a turn of its own: its result says the summary
		// request's usage only in model_usage_since_last_result.
		Capture: "real/compact.jsonl",
		Want: []string{
			"session 94e48281-df8c-4b85-9738-ddfda85c1db2 2.1.328",
			"message: First answer.",
			"usage + in=130 out=3 total=133",
			"completed: First answer.",
			"turn end",
			"usage + in=1 out=1 total=2",
			"completed: Claude Code finished the turn without a result text",
			"turn end",
			"message: Second answer.",
			"usage + in=170 out=4 total=174",
			"completed: Second answer.",
			"turn end",
		},
	}})
}

// TestClaudeUsageIsTheServers: the running totals equal what the model
// server reported, at every usage observation where the output says it.
// The scripted server's turns are in testdata/real/README.md.
func TestClaudeUsageIsTheServers(t *testing.T) {
	c := agenttest.CapturesByName(t)
	tests := []struct {
		capture string
		want    []string
	}{{
		// With partial messages each response's message_delta gives its
		// prompt and output at once. Server: 100+10+5 in / 40 out, 150+50 /
		// 20, then a second query 400+70 / 30.
		capture: "real/partial-messages-two-queries.jsonl",
		want:    []string{"in=115 out=40 total=155", "in=315 out=60 total=375", "in=785 out=90 total=875"},
	}, {
		// A background subagent's request (10000 / 1000) is in no
		// result.usage, and its line gives no output: once it shows, the
		// totals wait for the result, whose model_usage_since_last_result
		// has all four requests: 100/10, 1000/100, 10000/1000 and the
		// follow-up query's 1/1.
		capture: "real/subagent-background.jsonl",
		want:    []string{"in=100 out=10 total=110", "in=1100 out=110 total=1210", "in=11101 out=1111 total=12212"},
	}, {
		// A resumed process's modelUsage (300/30) counts the first
		// process too; model_usage_since_last_result (200/20) does not.
		capture: "real/resume-2.jsonl",
		want:    []string{"in=200 out=20 total=220"},
	}}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			got := agenttest.UsageTrail(agenttest.Parse(t, Agent{}, c[tt.capture]...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("running totals after each usage observation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaudeUsageAtResults: after every result line of every real capture,
// the running totals are the sum of what the results so far said the
// server counted (model_usage_since_last_result), computed here from the
// lines themselves; and no other line than a result or a response's end
// moves them.
func TestClaudeUsageAtResults(t *testing.T) {
	for name, lines := range agenttest.CapturesByName(t) {
		if !strings.HasPrefix(name, "real/") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p := agenttest.NewReader(t, Agent{})
			var running, server agenttest.Totals
			results := 0
			for _, l := range lines {
				evs := p.Parse(l)
				agenttest.CheckEvents(t, evs)
				var r struct {
					Type  string                    `json:"type"`
					Since map[string]map[string]any `json:"model_usage_since_last_result"`
				}
				_ = json.Unmarshal(l, &r)
				for _, e := range evs {
					if u := agenttest.UsageOf(e); u != nil {
						running = running.Add(u)
						// Only a result or a response's end says final counts.
						if r.Type != "result" && r.Type != "stream_event" {
							t.Errorf("usage from a %q line: %s", r.Type, agenttest.Describe(e))
						}
					}
				}
				if r.Type != "result" {
					continue
				}
				results++
				for _, m := range r.Since {
					in := num(m["inputTokens"]) + num(m["cacheReadInputTokens"]) + num(m["cacheCreationInputTokens"])
					server = server.Add(&eventstore.UsageSignal{InputTokens: agent.Ptr(in), OutputTokens: agent.Ptr(num(m["outputTokens"])), TotalTokens: agent.Ptr(in + num(m["outputTokens"]))})
				}
				if agent.Deref(running.In) != agent.Deref(server.In) || agent.Deref(running.Out) != agent.Deref(server.Out) {
					t.Errorf("after result %d: got %s, want the server's %s", results, running, server)
				}
			}
			if results == 0 {
				t.Fatal("no result line read")
			}
		})
	}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// TestClaudeNeedsInput pins the needs-input signals of real control
// requests: the request id, the native ids, the tool and its input.
func TestClaudeNeedsInput(t *testing.T) {
	c := agenttest.CapturesByName(t)
	obs := func(t *testing.T, capture string) *eventstore.Observation {
		t.Helper()
		for _, e := range agenttest.Parse(t, Agent{}, c[capture]...) {
			if e.Observation != nil && e.Observation.Signal.Type == eventstore.SignalNeedsInput {
				return e.Observation
			}
		}
		t.Fatalf("%s: no needs-input observation", capture)
		return nil
	}
	t.Run("permission", func(t *testing.T) {
		o := obs(t, "real/permission-allow.jsonl")
		want := &eventstore.Observation{
			ObservationID: "launch-1-4-0",
			Source:        eventstore.ObservedProviderOutput,
			Confidence:    eventstore.ConfidenceHigh,
			Signal: eventstore.NewSignal(&eventstore.NeedsInputSignal{
				RequestID: "1539fd5a-edbd-4db0-b935-ae116c794ced",
				Question:  "Allow Bash: echo hello-from-tool && touch made-by-tool?",
				Choices:   []string{"allow", "allow-always", "deny"},
				Kind:      "permission",
				Tool: &eventstore.ToolUse{Name: "Bash", Input: map[string]any{
					"command": "echo hello-from-tool && touch made-by-tool", "description": "Print a greeting"}},
			}),
			Native: &eventstore.NativeIDs{SessionID: "f60f1ab8-4da6-430e-a672-beb2f53d07be", RequestID: "1539fd5a-edbd-4db0-b935-ae116c794ced"},
		}
		if diff := cmp.Diff(want, o); diff != "" {
			t.Errorf("needs-input observation (-want +got):\n%s", diff)
		}
	})
	t.Run("question", func(t *testing.T) {
		o := obs(t, "real/ask.jsonl")
		sig := o.Signal.Payload.(*eventstore.NeedsInputSignal)
		if sig.Kind != "question" || sig.Question != "Which color should the button be?" ||
			!cmp.Equal(sig.Choices, []string{"Red", "Blue"}) || sig.Tool == nil || sig.Tool.Name != "AskUserQuestion" {
			t.Errorf("got %+v, want a question with the options' labels as choices and the tool", sig)
		}
		if _, ok := sig.Tool.Input["questions"]; !ok {
			t.Errorf("tool input %v lacks the questions the runtime answers", sig.Tool.Input)
		}
		if sig.RequestID == "" || o.Native == nil || o.Native.RequestID != sig.RequestID {
			t.Errorf("request id %q, native %+v: want the control request's id in both", sig.RequestID, o.Native)
		}
	})
}

// TestClaudeNativeIDs: every observation carries the session id and the
// uuid of the line it came from.
func TestClaudeNativeIDs(t *testing.T) {
	lines := agenttest.CapturesByName(t)["real/shell.jsonl"]
	uuids := map[int]string{}
	for i, l := range lines {
		var v struct {
			UUID string `json:"uuid"`
		}
		_ = json.Unmarshal(l, &v)
		uuids[i+1] = v.UUID
	}
	evs := agenttest.Parse(t, Agent{}, lines...)
	n := 0
	for _, e := range evs {
		o := e.Observation
		if o == nil {
			continue
		}
		n++
		var line int
		fmt.Sscanf(strings.TrimPrefix(o.ObservationID, agenttest.Prefix+"-"), "%d-", &line)
		want := eventstore.NativeIDs{SessionID: "d239f8e3-69d4-4143-9f0d-c9d88147b6f3", MessageID: uuids[line]}
		if got := agenttest.NativeOf(o); got != want || want.MessageID == "" {
			t.Errorf("%s (%s): native %+v, want %+v", o.ObservationID, agenttest.Describe(e), got, want)
		}
	}
	if n == 0 {
		t.Fatal("no observations")
	}
}

func TestClaudeSynthetic(t *testing.T) {
	agenttest.CheckLines(t, Agent{}, []agenttest.LineCase{{
		// Three calls in one message, sent as two lines of the same step (as
		// Claude Code does, one line per content block, usage repeated),
		// answered out of order in two user lines.
		Name: "parallel tool calls",
		Lines: []string{
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/r/a.go"}},{"type":"tool_use","id":"b","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":100,"output_tokens":1}}}`,
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"c","name":"Grep","input":{"pattern":"x","path":"/r"}}],"usage":{"input_tokens":100,"output_tokens":1}}}`,
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/r/a.go"}}],"usage":{"input_tokens":100,"output_tokens":1}}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"FAIL\n"},{"type":"text","text":"exit status 1"}],"is_error":true}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c","content":"x"},{"type":"tool_result","tool_use_id":"a","content":"package a"}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"again"}]}}`,
		},
		Want: []string{
			"activity reviewing file:/r/a.go tool=Read call=Read:started active=true",
			"activity executing command:go test ./... tool=Bash call=Bash:started active=true",
			"activity reviewing search:/r (x) tool=Grep call=Grep:started active=true",
			`activity call=Bash:failed error="FAIL\n\nexit status 1"`,
			"activity call=Grep:succeeded",
			"activity call=Read:succeeded active=false",
		},
	}, {
		Name: "targets of edit, write, search and fetch tools",
		Lines: []string{
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Write","input":{"file_path":"/r/new.go","content":"x"}},{"type":"tool_use","id":"b","name":"MultiEdit","input":{"file_path":"/r/old.go","edits":[]}},{"type":"tool_use","id":"c","name":"TodoWrite","input":{"todos":[]}},{"type":"tool_use","id":"d","name":"Edit","input":{}},{"type":"tool_use","id":"e","name":"Glob","input":{"pattern":"**/*.go"}},{"type":"tool_use","id":"f","name":"WebSearch","input":{"query":"go fuzzing"}},{"type":"tool_use","id":"g","name":"WebFetch","input":{"url":"https://go.dev/doc","prompt":"summarize"}}]}}`,
		},
		Want: []string{
			"activity editing file:/r/new.go tool=Write call=Write:started active=true",
			"activity editing file:/r/old.go tool=MultiEdit call=MultiEdit:started active=true",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity editing tool:Edit tool=Edit call=Edit:started active=true",
			"activity reviewing search:**/*.go tool=Glob call=Glob:started active=true",
			"activity reviewing search:go fuzzing tool=WebSearch call=WebSearch:started active=true",
			"activity reviewing url:https://go.dev/doc tool=WebFetch call=WebFetch:started active=true",
		},
	}, {
		// The plan of a successful TodoWrite, once: the same list again is
		// not a new plan; a list the CLI refused is none.
		Name: "plans",
		Lines: []string{
			`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"Write","status":"completed","activeForm":"Writing"},{"content":"Test","status":"in_progress","activeForm":"Testing"},{"content":"Ship","status":"pending","activeForm":"Shipping"}]}}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Todos have been modified successfully."}]}}`,
			`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"TodoWrite","input":{"todos":[{"content":"Write","status":"completed","activeForm":"Writing"},{"content":"Test","status":"in_progress","activeForm":"Testing"},{"content":"Ship","status":"pending","activeForm":"Shipping"}]}}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"Todos have been modified successfully."}]}}`,
			`{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"t3","name":"TodoWrite","input":{"todos":[]}}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","content":"no","is_error":true}]}}`,
			`{"type":"assistant","message":{"id":"m4","content":[{"type":"tool_use","id":"t4","name":"TodoWrite","input":{"todos":[]}}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t4","content":"ok"}]}}`,
		},
		Want: []string{
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded active=false",
			"plan: [x] Write; [>] Test; [ ] Ship",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded active=false",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			`activity call=TodoWrite:failed error="no" active=false`,
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded active=false",
			"plan: ",
		},
	}, {
		// An assistant line's usage is a response's start: only the
		// result, or a message_delta, counts; a message_delta repeated adds
		// nothing; the result adds only what the lines did not.
		Name: "usage is never double counted",
		Lines: []string{
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
			`{"type":"assistant","uuid":"u2","message":{"id":"m1","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
			`{"type":"result","subtype":"success","uuid":"r1","result":"done","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":9},"model_usage_since_last_result":{"m":{"inputTokens":10,"cacheReadInputTokens":5,"outputTokens":9}}}`,
			`{"type":"result","subtype":"success","uuid":"r1","result":"done","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":9},"model_usage_since_last_result":{"m":{"inputTokens":10,"cacheReadInputTokens":5,"outputTokens":9}}}`,
			`{"type":"stream_event","uuid":"s1","api_message_id":"m2","event":{"type":"message_start","message":{"id":"m2","usage":{"input_tokens":20,"output_tokens":1}}}}`,
			`{"type":"assistant","uuid":"u4","message":{"id":"m2","content":[{"type":"text","text":"c"}],"usage":{"input_tokens":20,"output_tokens":1}}}`,
			`{"type":"stream_event","uuid":"s2","api_message_id":"m2","event":{"type":"message_delta","usage":{"output_tokens":4}}}`,
			`{"type":"stream_event","uuid":"s3","api_message_id":"m2","event":{"type":"message_delta","usage":{"output_tokens":4}}}`,
			`{"type":"result","subtype":"success","uuid":"r2","result":"done again","usage":{"input_tokens":20,"output_tokens":4},"model_usage_since_last_result":{"m":{"inputTokens":20,"outputTokens":4},"h":{"inputTokens":3,"outputTokens":2}}}`,
			`{"type":"result","subtype":"success","uuid":"r3","result":"nothing new","model_usage_since_last_result":{}}`,
		},
		Want: []string{
			"message: a",
			"message: b",
			"usage + in=15 out=9 total=24",
			"completed: done",
			"turn end",
			"message: c",
			"usage + in=20 out=4 total=24",
			"usage + in=3 out=2 total=5",
			"completed: done again",
			"turn end",
			"completed: nothing new",
			"turn end",
		},
	}, {
		// After a subagent's response, whose end no line gives, the main
		// agent's message_delta waits for the result.
		Name: "usage behind a subagent waits for the result",
		Lines: []string{
			`{"type":"stream_event","api_message_id":"m1","event":{"type":"message_delta","usage":{"input_tokens":100,"output_tokens":10}}}`,
			`{"type":"assistant","parent_tool_use_id":"task1","message":{"id":"s1","content":[{"type":"text","text":"inner"}],"usage":{"input_tokens":1000,"output_tokens":1}}}`,
			`{"type":"stream_event","api_message_id":"m2","event":{"type":"message_delta","usage":{"input_tokens":200,"output_tokens":20}}}`,
			`{"type":"result","subtype":"success","result":"ok","model_usage_since_last_result":{"m":{"inputTokens":1300,"outputTokens":130}}}`,
			`{"type":"stream_event","api_message_id":"m3","event":{"type":"message_delta","usage":{"input_tokens":5,"output_tokens":1}}}`,
		},
		Want: []string{
			"usage + in=100 out=10 total=110",
			"usage + in=1200 out=120 total=1320",
			"completed: ok",
			"turn end",
			"usage + in=5 out=1 total=6",
		},
	}, {
		Name: "subagent lines report tool calls and usage only",
		Lines: []string{
			`{"type":"assistant","parent_tool_use_id":"task1","message":{"id":"s1","content":[{"type":"text","text":"inner"},{"type":"tool_use","id":"x","name":"Glob","input":{"pattern":"*"}},{"type":"tool_use","id":"y","name":"TodoWrite","input":{"todos":[{"content":"inner","status":"pending"}]}}],"usage":{"input_tokens":5,"output_tokens":1}}}`,
			`{"type":"user","parent_tool_use_id":"task1","message":{"content":[{"type":"tool_result","tool_use_id":"y","content":"ok"}]}}`,
		},
		Want: []string{
			"activity reviewing search:* tool=Glob call=Glob:started active=true",
			"activity planning tool:TodoWrite tool=TodoWrite call=TodoWrite:started active=true",
			"activity call=TodoWrite:succeeded",
		},
	}, {
		Name: "error results",
		Lines: []string{
			`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`,
			`{"type":"result","subtype":"error_max_turns","is_error":false}`,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"","errors":["tool crashed","and again"]}`,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[""]}`,
		},
		Want: []string{
			"failed: Invalid API key · Please run /login",
			"turn failed: Invalid API key · Please run /login",
			"failed: Claude Code ended the turn with error_max_turns",
			"turn failed: Claude Code ended the turn with error_max_turns",
			"failed: tool crashed | and again",
			"turn failed: tool crashed",
			"failed: claude-code reported a failure without a reason",
			"turn failed: claude-code reported a failure without a reason",
		},
	}, {
		Name: "success without a result text",
		Lines: []string{
			`{"type":"result","subtype":"success","result":"  "}`,
		},
		Want: []string{"completed: Claude Code finished the turn without a result text", "turn end"},
	}, {
		Name: "metadata, thinking and partial events yield nothing but the session",
		Lines: []string{
			`{"type":"system","subtype":"init","session_id":"s","tools":["Bash"],"claude_code_version":"2.1.328"}`,
			`{"type":"system","subtype":"init","session_id":"s","claude_code_version":"2.1.328"}`,
			`{"type":"system","subtype":"compact_boundary","session_id":"s"}`,
			`{"type":"system","subtype":"status","status":"requesting","session_id":"s"}`,
			`{"type":"system","subtype":"hook_started","hook_id":"h","hook_name":"SessionStart","hook_event":"SessionStart","session_id":"s"}`,
			`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}},"session_id":"s"}`,
			`{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"\n\n"}]},"session_id":"s"}`,
			`{"type":"user","message":{"role":"user","content":"run the tests"},"session_id":"s"}`,
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1795000000,"rateLimitType":"five_hour"},"uuid":"r","session_id":"s"}`,
			`{"type":"keep_alive"}`,
			`{"type":"control_cancel_request","request_id":"q"}`,
		},
		Want: []string{"session s 2.1.328"},
	}, {
		Name: "a new session id is reported again",
		Lines: []string{
			`{"type":"system","subtype":"init","session_id":"s1","claude_code_version":"2.1.328"}`,
			`{"type":"assistant","session_id":"s2","message":{"id":"m","content":[{"type":"text","text":"hi"}]}}`,
		},
		Want: []string{"session s1 2.1.328", "session s2 2.1.328", "message: hi"},
	}, {
		Name: "tool progress is the active tool",
		Lines: []string{
			`{"type":"tool_progress","tool_use_id":"t1","tool_name":"Bash","parent_tool_use_id":null,"elapsed_time_seconds":12,"uuid":"p1","session_id":"s"}`,
		},
		Want: []string{"session s ", "activity tool=Bash"},
	}, {
		Name: "a rate limit other than allowed is a provider error",
		Lines: []string{
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795000000,"rateLimitType":"five_hour","utilization":0.9},"uuid":"r1","session_id":"s"}`,
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected"},"uuid":"r2","session_id":"s"}`,
			`{"type":"rate_limit_event","uuid":"r3","session_id":"s"}`,
		},
		Want: []string{"session s ", "diagnostic provider-error", "diagnostic provider-error", "diagnostic bad-event"},
	}, {
		Name: "control requests",
		Lines: []string{
			`{"type":"control_request","request_id":"","request":{"subtype":"can_use_tool","tool_name":"WebFetch","input":{"url":"https://example.com/a\nb","prompt":"p"}}}`,
			`{"type":"control_request","request_id":"q2","request":{"subtype":"can_use_tool","tool_name":"mcp__x__y","input":{"n":1},"permission_suggestions":[]}}`,
			`{"type":"control_request","request_id":"q3","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Which db?","options":[{"label":"pg"},{"label":"sqlite"}]},{"question":"Which port?","options":[{"label":"5432"}]}]}}}`,
			`{"type":"control_request","request_id":"q4","request":{"subtype":"request_user_dialog","dialog_kind":"x","payload":{}}}`,
			`{"type":"control_request","request_id":"q5"}`,
		},
		Want: []string{
			"needs permission: Allow WebFetch: https://example.com/a b? [allow deny]",
			"needs permission: Allow mcp__x__y? [allow deny]",
			"needs question: Which db?\nWhich port? [pg sqlite 5432]",
			"diagnostic unknown-event",
			"diagnostic bad-event",
		},
	}, {
		Name: "unknown content block and bad shapes",
		Lines: []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"hologram"}]}}`,
			`{"type":"assistant","message":{"id":"m","content":[{"type":"hologram"}]}}`,
			`{"type":"assistant","message":{"id":"m","content":{"type":"text"}}}`,
			`{"type":"assistant"}`,
			`{"type":"result","usage":"lots"}`,
			`{"type":"result","usage":{"input_tokens":-5,"output_tokens":3},"result":"ok"}`,
		},
		Want: []string{
			"diagnostic unknown-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"diagnostic bad-event",
			"usage + in=- out=3 total=3",
			"completed: ok",
			"turn end",
		},
	}, {
		Name: "duplicate lines are read once",
		Lines: []string{
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"once"}]}}`,
			`{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"once"}]}}`,
		},
		Want: []string{"message: once"},
	}})
}

// TestClaudeRequestIDs: a request id the journal cannot keep is replaced
// by a stable one; the tool input too big for a record is left out.
func TestClaudeRequestIDs(t *testing.T) {
	long := strings.Repeat("r", eventstore.MaxIDLength+1)
	big := strings.Repeat("x", agent.MaxToolInputBytes)
	tests := []struct {
		name, line string
		wantID     string
		wantNative string
		wantInput  bool
	}{
		{"kept", `{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`, "req-1", "req-1", true},
		{"empty", `{"type":"control_request","request_id":"","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`, "launch-1-1-0-request", "", true},
		{"too long", `{"type":"control_request","request_id":"` + long + `","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}`, agent.InputRequestID(long, "", ""), "", true},
		{"big input", `{"type":"control_request","request_id":"req-2","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/f","content":"` + big + `"}}}`, "req-2", "req-2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := agenttest.Parse(t, Agent{}, []byte(tt.line))
			sig := agenttest.Payloads[*eventstore.NeedsInputSignal](evs)
			if len(sig) != 1 {
				t.Fatalf("got %v, want one needs-input", agenttest.DescribeAll(evs))
			}
			if sig[0].RequestID != tt.wantID {
				t.Errorf("request id %q, want %q", sig[0].RequestID, tt.wantID)
			}
			if got := agenttest.NativeOf(evs[0].Observation).RequestID; got != tt.wantNative {
				t.Errorf("native request id %q, want %q", got, tt.wantNative)
			}
			if got := sig[0].Tool.Input != nil; got != tt.wantInput {
				t.Errorf("tool input present %v, want %v", got, tt.wantInput)
			}
			again := agenttest.Payloads[*eventstore.NeedsInputSignal](agenttest.Parse(t, Agent{}, []byte(tt.line)))
			if again[0].RequestID != sig[0].RequestID {
				t.Errorf("request id %q then %q, want the same for the same line", sig[0].RequestID, again[0].RequestID)
			}
		})
	}
	if a, b := agent.InputRequestID(long, "", ""), agent.InputRequestID(long+"x", "", ""); a == b || len(a) > eventstore.MaxIDLength {
		t.Errorf("derived ids %q and %q: want distinct ids within the limit", a, b)
	}
}

// TestClaudeRateLimitMessage: a rate limit names the line type, the status,
// the limit and when it resets (the shape of Claude Code 2.1.328's
// SDKRateLimitEvent).
func TestClaudeRateLimitMessage(t *testing.T) {
	evs := agenttest.Parse(t, Agent{}, []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795000000,"rateLimitType":"five_hour"},"uuid":"r","session_id":"s"}`))
	d := agenttest.Payloads[*eventstore.DiagnosticSignal](evs)
	want := `Claude Code reports a rate limit (rate_limit_event): status "rejected" for the five_hour limit, which resets at 2026-11-18T11:06:40Z`
	if len(d) != 1 || d[0].Message != want || d[0].LineType != "rate_limit_event" || d[0].Code != agent.CodeProviderError {
		t.Errorf("got %v, want one provider-error %q", agenttest.DescribeAll(evs), want)
		for _, x := range d {
			t.Logf("%+v", *x)
		}
	}
}

// TestClaudeToolErrorClipped: a failed call's error is the start of its
// result, within a few KiB.
func TestClaudeToolErrorClipped(t *testing.T) {
	huge := strings.Repeat("e", 100<<10)
	evs := agenttest.Parse(t, Agent{}, agenttest.Lines(
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"x"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":"Exit code 137\n`+huge+`"}]}}`,
	)...)
	tc := evs[len(evs)-1].Activity.ToolCall
	if tc.Status != eventstore.ToolCallFailed || len(tc.Error) > agent.MaxErrorBytes || !strings.HasPrefix(tc.Error, "Exit code 137") {
		t.Errorf("got status %s and a %d byte error starting %.20q, want failed within %d bytes", tc.Status, len(tc.Error), tc.Error, agent.MaxErrorBytes)
	}
	if tc.ExitCode == nil || *tc.ExitCode != 137 {
		t.Errorf("exit code %v, want 137", tc.ExitCode)
	}
}
