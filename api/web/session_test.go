package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// awaiting waits until an execution asks the operator request.
func (s *stack) awaiting(t *testing.T, id, request string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v struct {
			CurrentInputRequestID string `json:"currentInputRequestId"`
		}
		s.call(t, "GET", "/v1/executions/"+id, nil, &v)
		if v.CurrentInputRequestID == request {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not ask %s after 30s (asks %q)", id, request, v.CurrentInputRequestID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *stack) answer(t *testing.T, id, request, text string) {
	t.Helper()
	s.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "answer", "payload": map[string]any{"requestId": request, "text": text}}, nil)
}

// runsShown is a JavaScript expression for the session page's runs: "id
// status" each, in the order shown.
const runsShown = `[...document.querySelectorAll('#session-runs li.run')].map((li) => li.dataset.run + ' ' + li.dataset.status)`

// The sessions list, reached from the navigation, follows new runs live;
// a session's page shows its runs in order, each opening its execution,
// and its approvals and checkpoints, updated as its runs change; an
// execution's page links back to its session. Agent text is text.
func TestSessionView(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	question := "Ship it? " + hostile
	// Each run reads its prompt, asks, reads the answer and says so; a
	// resume runs the same command line.
	command := []string{s.agent, "echo:1", signalStep(t, "needs_input", map[string]any{"requestId": "r1", "question": question}), "echo:1",
		signalStep(t, "message", map[string]any{"text": "shipped"})}
	first := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-session", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": command})
	s.awaiting(t, first, "r1")
	s.answer(t, first, "r1", "yes")
	s.ended(t, first)

	b.signIn(t, s)
	b.watchPolicy(t)
	b.do(t, chromedp.Click(chromedp.CSS("#nav-sessions")))
	row := fmt.Sprintf(`document.querySelector('#sessions-body tr[data-id=%q]')`, first)
	b.waitFor(t, 20*time.Second, "the session in the list", fmt.Sprintf(`!document.getElementById('sessions-view').hidden && %s !== null && %s.dataset.status === 'completed'`, row, row))
	if runs := eval[string](t, b, row+`.children[5].textContent`); runs != "1" {
		t.Errorf("the session lists %s runs, want 1", runs)
	}
	// The status filter asks the route for the sessions in one status.
	b.setFields(t, map[string]string{"sessions-status": "failed"})
	eval[bool](t, b, `document.getElementById('sessions-status').dispatchEvent(new Event('change')) || true`)
	b.waitFor(t, 10*time.Second, "no failed session", `document.querySelectorAll('#sessions-body tr').length === 0 && !document.getElementById('sessions-empty').hidden`)
	b.setFields(t, map[string]string{"sessions-status": ""})
	eval[bool](t, b, `document.getElementById('sessions-status').dispatchEvent(new Event('change')) || true`)
	b.waitFor(t, 10*time.Second, "the session again", row+` !== null`)

	// A resume is a new run of the session: the list follows it.
	var resumed struct {
		Reference eventstore.Reference `json:"reference"`
	}
	s.call(t, "POST", "/v1/executions/"+first+"/resume", map[string]any{"prompt": "prompt two"}, &resumed)
	second := resumed.Reference.AgentExecutionID
	b.waitFor(t, 20*time.Second, "the second run in the list", row+`.children[5].textContent === '2'`)

	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#sessions-body tr[data-id=%q] a`, first))))
	b.waitFor(t, 20*time.Second, "the session page", fmt.Sprintf(`!document.getElementById('session-view').hidden && document.getElementById('session-id').textContent === %q`, first))
	s.awaiting(t, second, "r1")
	b.waitFor(t, 20*time.Second, "the second run waiting for its approval", `JSON.stringify(`+runsShown+`) === JSON.stringify([`+
		fmt.Sprintf("%q, %q", first+" completed", second+" waiting-approval")+`]) && document.getElementById('session-status').textContent === 'waiting-approval'`)
	approvals := `[...document.querySelectorAll('#session-approvals li.approval')].map((li) => li.dataset.run + ' ' + li.dataset.approval + ' ' + li.dataset.status + ' ' + li.querySelector('.approval-question').textContent)`
	want := []string{first + " r1 answered " + question, second + " r1 pending " + question}
	b.waitFor(t, 10*time.Second, "both approvals", approvals+`.length === 2`)
	if got := eval[[]string](t, b, approvals); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the session's approvals are:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The page follows its runs: the answer ends the second one.
	s.answer(t, second, "r1", "go")
	b.waitFor(t, 20*time.Second, "the session's end", `JSON.stringify(`+runsShown+`) === JSON.stringify([`+
		fmt.Sprintf("%q, %q", first+" completed", second+" completed")+`]) && document.getElementById('session-status').textContent === 'completed'`)
	b.waitFor(t, 10*time.Second, "the second approval answered", fmt.Sprintf(
		`document.querySelector('#session-approvals li.approval[data-run=%q]').dataset.status === 'answered'`, second))
	if got := b.text(t, fmt.Sprintf(`#session-approvals li.approval[data-run=%q] .approval-answer`, second)); got != "Answer: go" {
		t.Errorf("the second approval shows %q, want the answer go", got)
	}

	// A checkpoint asked for on the second run joins the page.
	s.ended(t, second)
	var cp struct {
		CheckpointID string `json:"checkpointId"`
		Sequence     uint64 `json:"sequence"`
	}
	s.call(t, "POST", "/v1/executions/"+second+"/checkpoints", map[string]any{"id": "cp-console", "title": "Before release " + hostile, "summary": "all green"}, &cp)
	item := `document.querySelector('#session-checkpoints li.checkpoint[data-checkpoint="cp-console"]')`
	b.waitFor(t, 20*time.Second, "the checkpoint", item+` !== null`)
	if title := eval[string](t, b, item+`.querySelector('.checkpoint-title').textContent`); title != "Before release "+hostile {
		t.Errorf("the checkpoint's title reads %q, want it as text", title)
	}
	if href := eval[string](t, b, item+`.querySelector('a.seq').getAttribute('href')`); href != fmt.Sprintf("#/executions/%s/at/%d", second, cp.Sequence) {
		t.Errorf("the checkpoint links to %s, want %s at #%d", href, second, cp.Sequence)
	}
	b.waitFor(t, 5*time.Second, "nothing of the agent's text to run", inert("#session-view"))

	// A run opens its execution, whose page links back to the session.
	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#session-runs li.run[data-run=%q] a`, second))))
	b.waitFor(t, 20*time.Second, "the second run's page", fmt.Sprintf(
		`!document.getElementById('execution-view').hidden && document.getElementById('exec-id').textContent === %q && !document.getElementById('exec-session').hidden`, second))
	if got := b.text(t, "#exec-session"); got != "Session "+first+" · run completed" {
		t.Errorf("the execution's head says %q, want its session %s and run status", got, first)
	}
	b.do(t, chromedp.Click(chromedp.CSS("#exec-session a")))
	b.waitFor(t, 20*time.Second, "the session page again", fmt.Sprintf(
		`!document.getElementById('session-view').hidden && location.hash === '#/sessions/%s' && document.querySelectorAll('#session-runs li.run').length === 2`, first))
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}
