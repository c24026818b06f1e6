package web_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// turn is a parent's command: the fixture agent reads its prompt, answers
// and exits. A fork or a resume runs the same command line, so each one
// reads its retelling, answers and exits too.
func (s *stack) turn(answer string) []string {
	return []string{s.agent, "echo:1", `signal:{"type":"message","payload":{"text":"` + answer + `"}}`}
}

// ended waits until an execution has ended and its journal is quiet.
func (s *stack) ended(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v struct{ Lifecycle string }
		s.call(t, "GET", "/v1/executions/"+id, nil, &v)
		if v.Lifecycle == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s after 30s, want completed", id, v.Lifecycle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.quiet(t, id)
}

// fork forks an execution through the API and returns the fork's id.
func (s *stack) fork(t *testing.T, id string, at uint64, prompt string) string {
	t.Helper()
	var res struct {
		Reference eventstore.Reference `json:"reference"`
	}
	s.call(t, "POST", "/v1/executions/"+id+"/fork", map[string]any{"at": at, "prompt": prompt}, &res)
	return res.Reference.AgentExecutionID
}

// link is the fork or resume link of an execution's state.
type link struct {
	ForkedFrom *eventstore.ForkLink   `json:"forkedFrom"`
	Resumes    *eventstore.ResumeLink `json:"resumes"`
}

// lineageEntries is a JavaScript expression for the lineage card's entries:
// "id role how" each.
const lineageEntries = `[...document.querySelectorAll('#lineage-tree li')].map((li) => li.dataset.id + ' ' + li.dataset.role + ' ' +
	((li.querySelector(':scope > .lin-entry .lin-how') || {}).textContent || ''))`

// The execution view's Lineage card draws the fork tree around the open
// execution: its ancestors, with the sequence each link forks at and its
// history, the execution itself marked, and its forks below; each entry
// opens that execution.
func TestLineageCard(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	root := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-tree", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": s.turn("answer one")})
	s.ended(t, root)
	last := s.quiet(t, root)
	// The generic agent's forks are reconstructed: each needs a prompt.
	middle := s.fork(t, root, last, "prompt two")
	sibling := s.fork(t, root, 2, "prompt three")
	s.ended(t, middle)
	child := s.fork(t, middle, 2, "prompt four")
	s.ended(t, child)
	s.ended(t, sibling)

	b.signIn(t, s)
	b.watchPolicy(t)
	b.openExecution(t, middle)
	b.waitFor(t, 20*time.Second, "the lineage card", fmt.Sprintf(
		`!document.getElementById('lineage-card').hidden && document.querySelector('#lineage-tree li[data-id=%q]') !== null`, child))
	got := strings.Join(eval[[]string](t, b, lineageEntries), "\n")
	want := strings.Join([]string{
		root + " ancestor ",
		middle + " current forked at #" + strconv.FormatUint(last, 10) + " · history reconstructed",
		child + " descendant forked at #2",
		sibling + " branch forked at #2",
	}, "\n")
	if got != want {
		t.Errorf("the lineage card lists:\n%s\nwant:\n%s", got, want)
	}
	if cur := eval[string](t, b, `Array.from(document.querySelectorAll('#lineage-tree a[aria-current="page"]'), (a) => a.textContent).join()`); cur != middle {
		t.Errorf("the entry marked current is %q, want %s", cur, middle)
	}
	if role := eval[string](t, b, fmt.Sprintf(`document.querySelector('#lineage-tree li[data-id=%q] .lin-role').textContent`, root)); role != "root" {
		t.Errorf("the topmost entry is labelled %q, want root", role)
	}

	// The child's entry opens its view; there the middle one is an
	// ancestor, with its own link and history.
	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#lineage-tree li[data-id=%q] > .lin-entry a`, child))))
	b.waitFor(t, 20*time.Second, "the child's view", fmt.Sprintf(
		`location.hash === '#/executions/%s' && document.getElementById('exec-id').textContent === %q && document.getElementById('exec-lifecycle').textContent === 'completed'`, child, child))
	b.waitFor(t, 20*time.Second, "the child's lineage", fmt.Sprintf(
		`document.querySelector('#lineage-tree li[data-id=%q][data-role="current"]') !== null`, child))
	got = strings.Join(eval[[]string](t, b, lineageEntries), "\n")
	want = strings.Join([]string{
		root + " ancestor ",
		middle + " ancestor forked at #" + strconv.FormatUint(last, 10) + " · history reconstructed",
		child + " current forked at #2 · history reconstructed",
		sibling + " branch forked at #2",
	}, "\n")
	if got != want {
		t.Errorf("in the child's view the lineage card lists:\n%s\nwant:\n%s", got, want)
	}

	// An execution without forks or links has no card.
	lone := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-lone", "agent": "generic", "command": []string{s.agent, "exit:0"}})
	s.ended(t, lone)
	b.openExecution(t, lone)
	b.waitFor(t, 20*time.Second, "the lone execution's lineage, read and not shown", fmt.Sprintf(
		`document.getElementById('lineage-card').dataset.execution === %q && document.getElementById('lineage-card').hidden`, lone))
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}

// Every timeline item forks: its form sends the item's sequence, shows a
// refusal in words, and opens the fork, whose head links to the parent at
// that sequence. An inherited item forks its own execution.
func TestForkHere(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	parent := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-fork", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": s.turn("answer one")})
	s.ended(t, parent)

	b.signIn(t, s)
	b.watchPolicy(t)
	b.openExecution(t, parent)
	b.waitFor(t, 20*time.Second, "the timeline", `[...document.querySelectorAll('#timeline li.item')].some((li) => li.textContent.includes('answer one'))`)
	items := eval[[]string](t, b, `[...document.querySelectorAll('#timeline li.item')].map((li) => li.dataset.seq + ' ' + li.dataset.execution + ' ' + li.querySelectorAll('.fork-here').length)`)
	if len(items) < 2 {
		t.Fatalf("the timeline shows %q, want at least 2 items", items)
	}
	for _, it := range items {
		if !strings.HasSuffix(it, " "+parent+" 1") {
			t.Errorf("timeline item %q: want one fork here action of %s", it, parent)
		}
	}
	second := strings.Fields(items[1])[0]
	at, _ := strconv.ParseUint(second, 10, 64)

	// The action is a button: focused and pressed with Enter it opens the
	// form with the focus in it.
	eval[bool](t, b, `(document.querySelectorAll('#timeline li.item')[1].querySelector('.fork-here').focus(), true)`)
	b.do(t, typeKeys("\r"))
	b.waitFor(t, 10*time.Second, "the fork form in the second item", `(() => { const f = document.getElementById('fork-form');
		return !f.hidden && f.closest('li') === document.querySelectorAll('#timeline li.item')[1] && document.activeElement.id === 'fork-prompt' })()`)
	if ws := eval[string](t, b, `document.getElementById('fork-workspace').value`); ws != "keep" {
		t.Errorf("the form offers workspace %q, want keep", ws)
	}
	if note := b.text(t, "#fork-note"); !strings.Contains(note, "retold") {
		t.Errorf("the form says %q, want it to say the generic agent's history is retold", note)
	}

	b.do(t, chromedp.SetValue(chromedp.CSS("#fork-workspace"), "snapshot"), typeKeys("try another way"), chromedp.Click(chromedp.CSS("#fork-submit")))
	b.waitFor(t, 20*time.Second, "the refusal", `!document.getElementById('fork-error').hidden`)
	msg := b.text(t, "#fork-error")
	// The stack's runtime has no directory for forks' workspaces: it
	// refuses every mode but keep, naming it.
	for _, want := range []string{"a fork can only keep its parent's directory (workspace keep)", "Field: workspace", "400 invalid_field"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the fork form shows %q, want it to say %q", msg, want)
		}
	}
	if inv := eval[string](t, b, `String(document.getElementById('fork-workspace').getAttribute('aria-invalid'))`); inv != "true" {
		t.Errorf("the workspace picker is aria-invalid=%s after the refusal, want true", inv)
	}
	if h := eval[string](t, b, `location.hash`); h != "#/executions/"+parent {
		t.Fatalf("after a refused fork the address is %s, want the parent's view still", h)
	}

	b.do(t, chromedp.SetValue(chromedp.CSS("#fork-workspace"), "keep"), chromedp.Click(chromedp.CSS("#fork-submit")))
	b.waitFor(t, 20*time.Second, "the fork's view", fmt.Sprintf(
		`location.hash.startsWith('#/executions/ae-') && location.hash !== '#/executions/%s' && !document.getElementById('exec-link').hidden`, parent))
	fork := eval[string](t, b, `decodeURIComponent(location.hash.slice('#/executions/'.length))`)
	if head := b.text(t, "#exec-link"); head != "Forked from "+parent+" at #"+second+" · history reconstructed" {
		t.Errorf("the fork's head says %q, want it forked from %s at #%s, reconstructed", head, parent, second)
	}
	if href := eval[string](t, b, `document.querySelector('#exec-link a').getAttribute('href')`); href != "#/executions/"+parent {
		t.Errorf("the head's link goes to %s, want the parent's view", href)
	}
	var forked link
	s.call(t, "GET", "/v1/executions/"+fork, nil, &forked)
	if f := forked.ForkedFrom; f == nil || f.AgentExecutionID != parent || f.Sequence != at {
		t.Fatalf("the fork's link is %+v, want %s at %d", f, parent, at)
	}
	if !eval[bool](t, b, `document.getElementById('fork-form').hidden`) {
		t.Error("the fork form is still open in the fork's view")
	}

	// The fork shows its parent's prefix first, each item its parent's,
	// and forking one forks the parent at that item's sequence.
	b.waitFor(t, 20*time.Second, "the inherited items", fmt.Sprintf(
		`document.querySelectorAll('#timeline li.item.inherited[data-execution=%q]').length > 0`, parent))
	inherited := eval[[]uint64](t, b, `[...document.querySelectorAll('#timeline li.item.inherited')].map((li) => Number(li.dataset.seq))`)
	if end := inherited[len(inherited)-1]; end != at {
		t.Errorf("the fork shows inherited items up to #%d, want up to the fork point #%d", end, at)
	}
	if first := eval[string](t, b, `document.querySelector('#timeline li.item').className`); !strings.Contains(first, "inherited") {
		t.Errorf("the fork's first item is %q, want an inherited one", first)
	}
	// Once the fork has ended its timeline stops being redrawn under the
	// clicks.
	s.ended(t, fork)
	b.waitFor(t, 20*time.Second, "the fork's end", `document.getElementById('exec-lifecycle').textContent === 'completed'`)
	b.do(t, chromedp.Click(chromedp.CSS("#timeline li.item.inherited .fork-here")))
	b.waitFor(t, 10*time.Second, "the form in the inherited item", `document.activeElement.id === 'fork-prompt' && document.getElementById('fork-form').closest('li.inherited') !== null`)
	b.do(t, typeKeys("from the start"), chromedp.Click(chromedp.CSS("#fork-submit")))
	b.waitFor(t, 20*time.Second, "the second fork's view", fmt.Sprintf(
		`!['#/executions/%s', '#/executions/%s'].includes(location.hash) && document.getElementById('exec-link').textContent.startsWith('Forked from ')`, parent, fork))
	again := eval[string](t, b, `decodeURIComponent(location.hash.slice('#/executions/'.length))`)
	s.call(t, "GET", "/v1/executions/"+again, nil, &forked)
	if f := forked.ForkedFrom; f == nil || f.AgentExecutionID != parent || f.Sequence != inherited[0] {
		t.Errorf("a fork from the first inherited item links to %+v, want %s at %d", f, parent, inherited[0])
	}
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}

// An execution that has ended offers a resume: refused in words without
// the prompt the retelling needs, then a new run whose head names it.
func TestResume(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	done := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-resume", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": s.turn("answer one")})
	running := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-resume", "agent": "generic", "command": []string{s.agent, "sleep:60s"}})
	s.ended(t, done)

	b.signIn(t, s)
	b.openExecution(t, running)
	b.waitFor(t, 10*time.Second, "the running execution's view", `document.getElementById('exec-lifecycle').textContent === 'running'`)
	if !eval[bool](t, b, `document.getElementById('resume-card').hidden`) {
		t.Error("a running execution offers a resume")
	}

	b.openExecution(t, done)
	b.waitFor(t, 10*time.Second, "the resume card", `!document.getElementById('resume-card').hidden`)
	b.do(t, chromedp.Click(chromedp.CSS("#resume-submit")))
	b.waitFor(t, 20*time.Second, "the refusal", `!document.getElementById('resume-error').hidden`)
	if msg := b.text(t, "#resume-error"); !strings.Contains(msg, "needs a prompt") || !strings.Contains(msg, "Field: prompt") {
		t.Errorf("the resume card shows %q, want it to say a prompt is needed", msg)
	}

	b.do(t, chromedp.SendKeys(chromedp.CSS("#resume-prompt"), "carry on"), chromedp.Click(chromedp.CSS("#resume-submit")))
	b.waitFor(t, 20*time.Second, "the new run's view", fmt.Sprintf(
		`location.hash !== '#/executions/%s' && document.getElementById('exec-link').textContent.startsWith('Resumes ')`, done))
	run := eval[string](t, b, `decodeURIComponent(location.hash.slice('#/executions/'.length))`)
	if head := b.text(t, "#exec-link"); head != "Resumes "+done+" · history reconstructed" {
		t.Errorf("the new run's head says %q, want it to resume %s, reconstructed", head, done)
	}
	var resumed link
	s.call(t, "GET", "/v1/executions/"+run, nil, &resumed)
	if r := resumed.Resumes; r == nil || r.AgentExecutionID != done {
		t.Fatalf("the new run's link is %+v, want a resume of %s", r, done)
	}
	b.waitFor(t, 20*time.Second, "the new run in the lineage", fmt.Sprintf(
		`(() => { const li = document.querySelector('#lineage-tree li[data-id=%q][data-role="current"]');
			return li !== null && li.querySelector('.lin-how').textContent === 'resumed · history reconstructed' &&
				document.querySelector('#lineage-tree li[data-id=%q][data-role="ancestor"]') !== null })()`, run, done))
	b.checkNoExceptions(t)
}
