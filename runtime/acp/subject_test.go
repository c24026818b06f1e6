package acp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/runtime/agent/agenttest"
)

// TestUpdateOfUnseenCall: Gemini CLI announces no tool call: it sends only
// the call's completed (or failed) tool_call_update. The update opens the
// call and closes it, one tool item; an update of a call already ended adds
// nothing.
func TestUpdateOfUnseenCall(t *testing.T) {
	update := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + u + `}}`
	}
	got := agenttest.DescribeAll(agenttest.Parse(t, Agent{}, agenttest.Lines(
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","title":"echo hi","kind":"execute","rawInput":{"command":"echo hi"},"status":"completed","content":[{"type":"content","content":{"type":"text","text":"hi"}}]}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command-1","status":"completed"}`),
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"read_file-2","title":"a.go","kind":"read","locations":[{"path":"/w/a.go"}],"status":"failed","content":[{"type":"content","content":{"type":"text","text":"no such file"}}]}`),
	)...))
	want := []string{
		"activity executing command:echo hi tool=echo hi call=echo hi:started active=true",
		"activity call=echo hi:succeeded active=false",
		"activity reviewing file:/w/a.go tool=a.go call=a.go:started active=true",
		`activity call=a.go:failed error="no such file" active=false`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestPermissionSubject: a permission request says what the call really
// does, from its raw input or its location, beside the title the model
// wrote; its choices are in the one order of every agent, whatever order
// the agent offers them in.
func TestPermissionSubject(t *testing.T) {
	request := func(tool, options string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":` + tool + `,"options":` + options + `}}`
	}
	rejectFirst := `[{"optionId":"no","name":"Deny","kind":"reject_once"},{"optionId":"always","name":"Always","kind":"allow_always"},{"optionId":"yes","name":"Yes","kind":"allow_once"}]`
	got := agenttest.DescribeAll(agenttest.Parse(t, Agent{}, agenttest.Lines(
		request(`{"toolCallId":"c1","title":"write note.txt and list the directory","kind":"execute","rawInput":{"command":"echo hi > note.txt && ls","description":"write note.txt and list the directory"}}`, rejectFirst),
		request(`{"toolCallId":"c2","title":"Write note","kind":"edit","locations":[{"path":"/w/note.txt"}]}`, `[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_always"}]`),
		request(`{"toolCallId":"c3","title":"ls","kind":"execute","rawInput":{"command":"ls"}}`, `[{"optionId":"yes","name":"Yes","kind":"allow_once"}]`),
	)...))
	want := []string{
		"needs permission: Allow write note.txt and list the directory: echo hi > note.txt && ls? [allow allow-always deny]",
		"needs permission: Allow Write note: /w/note.txt? [allow deny]",
		"needs permission: Allow ls? [allow]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
