package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// accepted lists the texts of the prompt messages an execution's journal
// holds.
func (s *stack) accepted(t *testing.T, id string) []string {
	t.Helper()
	var texts []string
	for _, r := range s.journal(t, id) {
		if r.Type == "message.accepted" && r.MessageType == "prompt" {
			texts = append(texts, string(r.Payload))
		}
	}
	return texts
}

// waiting launches a generic execution for owner Task/owner that runs
// and takes messages for a minute.
func (s *stack) waiting(t *testing.T, owner string) string {
	t.Helper()
	return s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": owner, "agent": "generic",
		"command": []string{s.agent, "sleep:60s"}})
}

// A message typed for one execution stays with it: opening another one
// shows an empty box, and what is sent from there goes to that one only.
func TestDraftStaysWithItsExecution(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	first, second := s.waiting(t, "t-first"), s.waiting(t, "t-second")

	b.signIn(t, s)
	b.openExecution(t, first)
	b.waitFor(t, 20*time.Second, "the prompt box of the first", `!document.getElementById('prompt-send').disabled`)
	b.do(t, chromedp.SetValue(chromedp.CSS("#prompt-type"), "prompt"), chromedp.SendKeys(chromedp.CSS("#prompt-text"), "only for the first"))

	b.openExecution(t, second)
	b.waitFor(t, 20*time.Second, "the second's owner in the head", `document.getElementById('exec-owner').textContent.startsWith('Task/t-second')`)
	if draft := eval[string](t, b, `document.getElementById('prompt-text').value`); draft != "" {
		t.Errorf("the second execution's box holds %q, want it empty", draft)
	}
	if res := b.text(t, "#prompt-result"); res != "" {
		t.Errorf("the second execution's box says %q, want nothing sent yet", res)
	}
	b.waitFor(t, 20*time.Second, "the prompt box of the second", `!document.getElementById('prompt-send').disabled`)
	b.do(t, chromedp.SetValue(chromedp.CSS("#prompt-type"), "prompt"), chromedp.SendKeys(chromedp.CSS("#prompt-text"), "for the second"),
		chromedp.Click(chromedp.CSS("#prompt-send")))
	b.waitFor(t, 20*time.Second, "the acknowledgement", `document.getElementById('prompt-result').textContent.includes('journaled at sequence')`)

	if got := s.accepted(t, first); len(got) != 0 {
		t.Errorf("the first execution's journal holds prompts %q, want none", got)
	}
	got := s.accepted(t, second)
	if len(got) != 1 || !strings.Contains(got[0], `"for the second"`) {
		t.Errorf("the second execution's journal holds prompts %q, want the one typed for it alone", got)
	}

	// Back on the first, its draft is gone too: nothing typed on one page
	// waits on another.
	b.openExecution(t, first)
	if draft := eval[string](t, b, `document.getElementById('prompt-text').value`); draft != "" {
		t.Errorf("back on the first execution the box holds %q, want it empty", draft)
	}
	b.checkNoExceptions(t)
}

// Leaving an execution with its fork form open leaves nothing behind: the
// next execution opened shows its own head, state and actions.
func TestLeavingAnOpenForkForm(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	first := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-first", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": s.turn("answer one")})
	second := s.waiting(t, "t-second")
	s.ended(t, first)

	b.signIn(t, s)
	b.openExecution(t, first)
	b.waitFor(t, 20*time.Second, "the timeline", `document.querySelectorAll('#timeline li.item .fork-here').length > 1`)
	b.click(t, "#timeline li.item:nth-child(2) .fork-here")
	b.waitFor(t, 10*time.Second, "the fork form", `!document.getElementById('fork-form').hidden && document.activeElement.id === 'fork-prompt'`)
	b.do(t, typeKeys("half a prompt"))

	b.do(t, chromedp.Navigate(s.url+"/#/"))
	b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)
	b.openExecution(t, second)
	b.waitFor(t, 20*time.Second, "the second's head and state", fmt.Sprintf(
		`document.getElementById('exec-id').textContent === %q && document.getElementById('exec-owner').textContent.startsWith('Task/t-second') &&
		document.getElementById('exec-lifecycle').textContent === 'running' && document.querySelectorAll('#timeline li.item').length > 0`, second))
	if !eval[bool](t, b, `document.getElementById('fork-form').hidden && document.getElementById('fork-form').closest('#timeline') === null`) {
		t.Error("the fork form opened on the first execution is still shown on the second")
	}
	if v := eval[string](t, b, `document.getElementById('fork-prompt').value`); v != "" {
		t.Errorf("the fork form holds %q on the second execution, want it empty", v)
	}
	if holders := eval[[]string](t, b, `[...new Set([...document.querySelectorAll('#timeline li.item')].map((li) => li.dataset.execution))]`); len(holders) != 1 || holders[0] != second {
		t.Errorf("the timeline's items are those of %q, want %s's alone", holders, second)
	}
	if !eval[bool](t, b, `document.getElementById('resume-card').hidden`) {
		t.Error("the running second execution offers a resume, as the ended first one did")
	}
	if eval[bool](t, b, `document.getElementById('exec-stop').hidden`) {
		t.Error("the running second execution offers no Stop")
	}

	// Its own Fork here opens on it.
	b.click(t, "#timeline li.item .fork-here")
	b.waitFor(t, 10*time.Second, "the second's fork form", `!document.getElementById('fork-form').hidden`)
	if target := b.text(t, "#fork-target"); !strings.Contains(target, second) {
		t.Errorf("the fork form says %q, want a fork of %s", target, second)
	}
	// And back through the history, the first is itself again.
	b.do(t, chromedp.NavigateBack())
	b.waitFor(t, 20*time.Second, "the list again", `!document.getElementById('list-view').hidden`)
	b.openExecution(t, first)
	b.waitFor(t, 20*time.Second, "the first's head", `document.getElementById('exec-owner').textContent.startsWith('Task/t-first') && document.getElementById('exec-lifecycle').textContent === 'completed'`)
	if !eval[bool](t, b, `document.getElementById('fork-form').hidden`) {
		t.Error("the fork form opened on the second execution is shown on the first")
	}
	b.checkNoExceptions(t)
}
