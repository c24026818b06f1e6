package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/eventstore"
)

// A tool call is one timeline item: its name and the target's label
// (a target is an object, not text), its status, exit code and error, and
// its output excerpt behind a closed disclosure; the end of the call turns
// the started item into the failed one in place.
func TestToolCallItem(t *testing.T) {
	b := newBrowser(t)
	as := apitest.Start(t, apitest.Options{})
	s := stackOf(as)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-tool", "agent": "generic",
		"command": []string{s.agent, "sleep:60s"}})
	b.signIn(t, s)
	b.openExecution(t, id)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref, err := as.Store.Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	target := &eventstore.Target{Kind: eventstore.TargetCommand, Label: "go test ./..."}
	start := &eventstore.ActivityUpdated{Activity: eventstore.ActivityTesting, CurrentTarget: target,
		ToolCall: &eventstore.ToolCall{ID: "call-1", Name: "Bash", Status: eventstore.ToolCallStarted}}
	start.RecordID = eventstore.RecordID(ref.JournalID, start.Kind(), "call-1-start")
	if _, err := as.Store.Append(ctx, ref, start); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, 20*time.Second, "the started call", `[...document.querySelectorAll('#timeline li.item')].some((li) =>
		li.querySelector('.tool-name') && li.textContent.includes('Bash') && li.textContent.includes('go test ./...') && li.textContent.includes('started'))`)
	exit := int64(1)
	end := &eventstore.ActivityUpdated{ToolCall: &eventstore.ToolCall{ID: "call-1", Name: "Bash", Status: eventstore.ToolCallFailed,
		Error: "exit status 1", ExitCode: &exit, Output: "--- FAIL: TestLogin\nFAIL\tauth 0.01s"}}
	end.RecordID = eventstore.RecordID(ref.JournalID, end.Kind(), "call-1-end")
	if _, err := as.Store.Append(ctx, ref, end); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, 20*time.Second, "the call failed, in place", `(() => {
		const items = [...document.querySelectorAll('#timeline li.item')].filter((li) => li.querySelector('.tool-name'));
		if (items.length !== 1) return false;
		const li = items[0], d = li.querySelector('details.tool-output');
		return li.textContent.includes('failed') && li.textContent.includes('exit 1') && li.textContent.includes('exit status 1') &&
			!li.textContent.includes('[object Object]') && d !== null && !d.open && d.textContent.includes('--- FAIL: TestLogin') })()`)
	b.checkNoExceptions(t)
}

// A list row is titled by the execution's first prompt, on one line,
// above what it is doing.
func TestListRowsShowThePrompt(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-title", "agent": "generic",
		"prompt":  "Fix the flaky\nlogin test in auth/",
		"command": []string{s.agent, `signal:{"type":"progress","payload":{"summary":"reading auth/login.go"}}`, "sleep:60s"}})
	b.signIn(t, s)
	eval[bool](t, b, `(location.hash = '#/', true)`)
	b.waitFor(t, 20*time.Second, "the row's title and progress", `(() => {
		const tr = document.querySelector('#executions-body tr[data-id="`+id+`"]');
		const title = tr && tr.querySelector('.row-title');
		return !!title && title.textContent === 'Fix the flaky login test in auth/' && tr.textContent.includes('reading auth/login.go') })()`)
}

// The Transcript card is closed and reads nothing until opened; opened,
// it shows the run as the CLI's transcript does (the prompt and the
// agent's words), and follows new records.
func TestTranscriptCard(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-transcript", "agent": "generic",
		"prompt": "Say hello",
		"command": []string{s.agent, `signal:{"type":"message","payload":{"text":"hello from the agent"}}`, "sleep:2s",
			`signal:{"type":"message","payload":{"text":"and a second word"}}`, "sleep:60s"}})
	b.signIn(t, s)
	b.countRequests(t)
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the first message in the timeline", `document.querySelector('#timeline').textContent.includes('hello from the agent')`)
	if n := eval[int](t, b, `window.requests.filter((r) => r.includes('/transcript')).length`); n != 0 {
		t.Fatalf("the closed transcript card read the transcript %d times", n)
	}
	eval[bool](t, b, `(document.querySelector('#transcript-card').open = true)`)
	b.waitFor(t, 20*time.Second, "the transcript, prompt and messages", `(() => {
		const s = document.querySelector('#transcript-text').textContent;
		return s.includes('Say hello') && s.includes('hello from the agent') && s.includes('and a second word') })()`)
	b.checkNoExceptions(t)
}
