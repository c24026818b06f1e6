package web_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// countRequests makes the page count its calls to the API from now on, in
// window.requests (a list of "METHOD path"): the console calls the API
// with fetch only, and the live stream is an EventSource, not counted.
func (b *browser) countRequests(t testing.TB) {
	t.Helper()
	eval[bool](t, b, `(() => {
		if (!window.realFetch) {
			window.realFetch = window.fetch;
			window.fetch = (path, init) => {
				window.requests.push(((init && init.method) || 'GET') + ' ' + path);
				return window.realFetch(path, init);
			};
		}
		window.requests = [];
		return true })()`)
}

// lastSequence is the execution's newest record, as the API says.
func (s *stack) lastSequence(t testing.TB, id string) uint64 {
	t.Helper()
	var ex struct {
		Journal struct {
			LastSequence uint64 `json:"lastSequence"`
		} `json:"journal"`
	}
	s.call(t, "GET", "/v1/executions/"+id, nil, &ex)
	return ex.Journal.LastSequence
}

// A live execution's page takes its events in place: at most one request
// per record (the newest timeline items), the items already shown keep
// their elements, so that text selected in one stays selected, and a click
// that spans an update is not lost.
func TestLiveUpdatesInPlace(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	const markers = 40
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-live", "agent": "generic",
		"command": []string{s.agent, `signal:{"type":"progress","payload":{"summary":"Reading the schema files"}}`, "sleep:1500ms",
			fmt.Sprintf("markers:%d:100ms", markers), "sleep:60s"}})
	b.signIn(t, s)
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the first progress item", `[...document.querySelectorAll('#timeline li.item')].some((li) => li.textContent.includes('Reading the schema files'))`)

	b.countRequests(t)
	from := s.lastSequence(t, id)

	// Press on the newest item's "Fork here", let an update come, release:
	// the click opens the fork form on that item.
	before := eval[int](t, b, `document.querySelectorAll('#timeline li.item').length`)
	xy := eval[[]float64](t, b, `(() => { const b = [...document.querySelectorAll('#timeline li.item .fork-here')].pop();
		b.scrollIntoView({block: 'center'}); window.pressedItem = b.closest('li'); window.pressed = window.pressedItem.dataset.key;
		const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2] })()`)
	mouse := func(typ input.DispatchMouseEventType) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: xy[0], Y: xy[1],
				Button: input.MouseButtonLeft, ClickCount: 1})
			return err
		})
	}
	b.do(t, mouse(input.DispatchMouseEventTypeMousePressed))
	b.waitFor(t, 20*time.Second, "an update while the button is held", fmt.Sprintf(`document.querySelectorAll('#timeline li.item').length > %d`, before))
	b.do(t, mouse(input.DispatchMouseEventTypeMouseReleased))
	b.waitFor(t, 5*time.Second, "the fork form, opened by the click", `!document.querySelector('[data-card="fork"]').hidden && `+
		`document.querySelector('#timeline li.item[data-key="' + window.pressed + '"] [data-card="fork"]') !== null`)
	// The form opens in the item and closes out of it without the item's
	// element being made again: text selected in it would be lost.
	if !eval[bool](t, b, `window.pressedItem.isConnected && window.pressedItem.querySelector('.fork-here').getAttribute('aria-expanded') === 'true'`) {
		t.Errorf("opening the fork form replaced the item's element, or its button does not say the form is open: want the element kept, aria-expanded true")
	}
	b.click(t, "#fork-cancel")
	if !eval[bool](t, b, `window.pressedItem.isConnected && window.pressedItem.querySelector('.fork-here').getAttribute('aria-expanded') === 'false'`) {
		t.Errorf("closing the fork form replaced the item's element, or its button says the form is open: want the element kept, aria-expanded false")
	}

	// Select the first item's text and keep its element.
	eval[bool](t, b, `(() => {
		const li = [...document.querySelectorAll('#timeline li.item')].find((li) => li.textContent.includes('Reading the schema files'));
		window.kept = li;
		const r = document.createRange();
		r.selectNodeContents(li.querySelector('.item-text'));
		const sel = window.getSelection();
		sel.removeAllRanges();
		sel.addRange(r);
		return true })()`)
	selected := eval[string](t, b, `window.getSelection().toString()`)
	if !strings.Contains(selected, "Reading the schema files") {
		t.Fatalf("selected %q, want the item's text", selected)
	}
	during := eval[int](t, b, `document.querySelectorAll('#timeline li.item').length`)
	b.waitFor(t, 20*time.Second, "updates after the selection", fmt.Sprintf(`document.querySelectorAll('#timeline li.item').length > %d`, during+2))

	b.waitFor(t, 30*time.Second, "every marker", fmt.Sprintf(`document.querySelectorAll('#timeline li.item[data-kind="progress"]').length >= %d`, markers+1))
	// The page takes the last events a moment after they come.
	to := s.lastSequence(t, id)
	b.waitFor(t, 10*time.Second, "the newest record", fmt.Sprintf(`document.getElementById('tt-banner-last').textContent === '%d'`, to))
	requests := eval[[]string](t, b, `window.requests`)
	records := to - from
	perRecord := float64(len(requests)) / float64(records)
	t.Logf("%d requests for %d records (%.2f per record): %q", len(requests), records, perRecord, requests)
	if perRecord > 1 {
		t.Errorf("%d requests for %d live records, %.2f per record: want at most 1", len(requests), records, perRecord)
	}
	if !eval[bool](t, b, `window.kept.isConnected`) {
		t.Errorf("the first item's element was replaced by the updates: want it kept\nwas: %s\nnow: %s", eval[string](t, b, `window.kept.outerHTML`),
			eval[string](t, b, `(document.querySelector('#timeline li.item[data-key="' + window.kept.dataset.key + '"]') || {outerHTML: 'none'}).outerHTML`))
	}
	if got := eval[string](t, b, `window.getSelection().toString()`); got != selected {
		t.Errorf("the selection is %q after the updates, want %q kept", got, selected)
	}
	b.checkNoExceptions(t)
}

// Time travel moves every card: the todos, the approvals and the output
// show the execution as of the record chosen, and the address holds the
// position, so that a reload, and going back to the page, open there.
func TestTimeTravelMovesEveryCard(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	command := []string{s.agent, "say:before the plan"}
	command = append(command, todoWrite(t, 1, [2]string{"Read the schema", "in_progress"})...)
	command = append(command, "sleep:300ms", signalStep(t, "needs_input", map[string]any{"requestId": "r1", "question": "Apply it?"}), "echo:1",
		"say:after the answer")
	command = append(command, todoWrite(t, 2, [2]string{"Read the schema", "completed"})...)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-travel", "agent": "claude-code", "command": append(command, "sleep:60s")})
	b.signIn(t, s)
	b.openExecution(t, id)
	approval := `document.querySelector('#approvals-list li.approval[data-approval="r1"]')`
	b.waitFor(t, 20*time.Second, "the question", approval+` !== null`)
	s.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "answer", "payload": map[string]any{"requestId": "r1", "text": "yes"}}, nil)
	b.waitFor(t, 20*time.Second, "the live cards", `document.querySelector('#todos-list li.todo')?.dataset.status === 'done' && `+
		approval+`?.dataset.status === 'answered' && document.getElementById('output-lines').textContent.includes('after the answer')`)

	plans := s.signalSequences(t, id, "plan", 2)
	at := plans[0]
	// asOf checks the cards as of the first plan: the todo in progress,
	// the question not asked yet, the output before it.
	asOf := func(t *testing.T, how string) {
		t.Helper()
		b.waitFor(t, 20*time.Second, "the cards as of #"+fmt.Sprint(at)+" ("+how+")", fmt.Sprintf(
			`document.getElementById('tt-banner-seq').textContent === '%d' && document.querySelector('[data-card="todos"]').dataset.asof === '%d' && `+
				`document.querySelector('[data-card="output"]').dataset.asof === '%d' && !document.getElementById('output-note').textContent.includes('reading')`, at, at, at))
		if got := eval[[]string](t, b, `[...document.querySelectorAll('#todos-list li.todo')].map((li) => li.dataset.status)`); len(got) != 1 || got[0] != "in-progress" {
			t.Errorf("%s: the todos card lists %q, want the todo in progress", how, got)
		}
		if eval[bool](t, b, approval+` !== null`) {
			t.Errorf("%s: the approvals card lists the question asked after #%d", how, at)
		}
		out := eval[string](t, b, `document.getElementById('output-lines').textContent`)
		if !strings.Contains(out, "before the plan") || strings.Contains(out, "after the answer") {
			t.Errorf("%s: the output card shows %q, want the line before the plan and not the one after the answer", how, out)
		}
		if h := eval[string](t, b, `location.hash`); h != fmt.Sprintf("#/executions/%s?asof=%d", id, at) {
			t.Errorf("%s: the address is %s, want the position in it", how, h)
		}
	}

	b.do(t, chromedp.SetValue(chromedp.CSS("#tt-seq"), fmt.Sprint(at)))
	b.click(t, "#tt-go")
	asOf(t, "travelled")

	b.do(t, chromedp.Reload())
	asOf(t, "reloaded")

	eval[bool](t, b, `(location.hash = '#/') !== ''`)
	b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden`)
	// The screen left says no position: going back opens it again, and
	// until that open has travelled, what it left drawn is not as of the
	// position (a check made right after going back read the cards left
	// drawn, then saw them emptied by the open).
	if got := eval[[]string](t, b, `[document.getElementById('tt-banner-seq').textContent, ...['todos', 'approvals', 'output'].map((c) => document.querySelector('[data-card="' + c + '"]').dataset.asof)]`); !slices.Equal(got, []string{"", "0", "0", "0"}) {
		t.Errorf("with the list shown, the execution's banner and its todos, approvals and output cards say %q, want no position (\"\", 0, 0, 0)", got)
	}
	eval[bool](t, b, `history.back() === undefined`)
	asOf(t, "back")

	// Opened again at the position while the screen left was still
	// reading the state: that read, when it lands, is of a screen gone,
	// and does not keep the screen opened since from travelling. The
	// page's reads of the state are held until both screens asked.
	eval[bool](t, b, fmt.Sprintf(`(() => {
		const state = '/v1/executions/%s', fetched = window.fetch;
		window.held = [];
		window.holding = true;
		window.fetch = (path, init) => window.holding && path === state && (!init || !init.method || init.method === 'GET')
			? new Promise((resolve) => window.held.push(resolve)).then(() => fetched(path, init))
			: fetched(path, init);
		return true })()`, id))
	eval[bool](t, b, `(location.hash = '#/') !== ''`)
	b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden`)
	eval[bool](t, b, fmt.Sprintf(`(location.hash = '#/executions/%s') !== ''`, id))
	b.waitFor(t, 10*time.Second, "the live screen's read of the state", `window.held.length === 1`)
	eval[bool](t, b, `(location.hash = '#/') !== ''`)
	b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden`)
	eval[bool](t, b, fmt.Sprintf(`(location.hash = '#/executions/%s?asof=%d') !== ''`, id, at))
	b.waitFor(t, 10*time.Second, "the screen opened again", `document.getElementById('list-view').hidden`)
	eval[bool](t, b, `(window.holding = false, window.held.forEach((release) => release()), true)`)
	asOf(t, "opened again while the screen left was reading")

	b.click(t, "#tt-live")
	b.waitFor(t, 20*time.Second, "the live cards again", `document.querySelector('#todos-list li.todo')?.dataset.status === 'done' && `+
		approval+` !== null && document.getElementById('output-lines').textContent.includes('after the answer') && location.hash === '#/executions/`+id+`'`)
	b.checkNoExceptions(t)
}

// The launch form shows why the daemon refused a launch, in its words:
// an agent whose CLI is not installed names the agent, the agents
// accepted, and marks the agent's field.
func TestLaunchErrorSaysWhatWasWrong(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	// No agent CLI is found on this PATH, whatever the machine has
	// installed.
	t.Setenv("PATH", t.TempDir())
	b.signIn(t, s)
	b.setFields(t, map[string]string{"launch-owner-entity": "Task", "launch-owner-id": "t-missing", "launch-agent": "codex",
		"launch-command": "", "launch-prompt": "Fix the build"})
	b.click(t, "#launch-submit")
	b.waitFor(t, 20*time.Second, "the refusal", `!document.getElementById('launch-error').hidden`)
	msg := b.text(t, "#launch-error")
	for _, want := range []string{"codex agent's CLI is not installed on this host", "Field: agent", "Accepted: generic"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the launch form shows %q, want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "internal error") {
		t.Errorf("the launch form shows %q: an internal error, want what was wrong", msg)
	}
	if !eval[bool](t, b, `document.getElementById('launch-agent').getAttribute('aria-invalid') === 'true'`) {
		t.Error("the agent's field is not marked")
	}
	b.checkNoExceptions(t)
}

// The approvals inbox lists every open permission request and question
// across executions, counts them in the navigation, and answers each
// where it is listed.
func TestApprovalsInbox(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	question := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-ask", "agent": "generic",
		"command": []string{s.agent, signalStep(t, "needs_input", map[string]any{"requestId": "q1", "question": "Which region?", "choices": []string{"eu", "us"}}),
			"echo:1", "sleep:60s"}})
	free := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-free", "agent": "generic",
		"command": []string{s.agent, signalStep(t, "needs_input", map[string]any{"requestId": "q2", "question": "What should the release be called?"}),
			"echo:1", "sleep:60s"}})
	permission := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-perm", "agent": "generic",
		"command": []string{s.agent, signalStep(t, "needs_input", map[string]any{"requestId": "p1", "question": "Run rm -rf build/?", "kind": "permission",
			"tool": map[string]any{"name": "Bash", "input": map[string]any{"command": "rm -rf build/"}}}),
			"echo:1", "sleep:60s"}})
	b.signIn(t, s)
	b.waitFor(t, 20*time.Second, "the count in the navigation", `document.getElementById('nav-approvals-count').textContent === '3'`)
	b.click(t, "#nav-approvals")
	item := func(execution, approval string) string {
		return fmt.Sprintf(`#inbox-list li[data-execution=%q][data-approval=%q]`, execution, approval)
	}
	b.waitFor(t, 20*time.Second, "the inbox", `document.querySelectorAll('#inbox-list li.inbox-item').length === 3`)
	if q := b.text(t, item(question, "q1")+" .inbox-question"); q != "Which region?" {
		t.Errorf("the inbox asks %q, want the agent's question", q)
	}

	// A choice, a free answer and Allow, each where it is listed.
	b.click(t, item(question, "q1")+` button.choice:last-child`)
	eval[bool](t, b, fmt.Sprintf(`(document.querySelector('%s input').value = 'Aurora') !== ''`, item(free, "q2")))
	b.click(t, item(free, "q2")+` form button[type=submit]`)
	b.click(t, item(permission, "p1")+` button.choice:first-child`)
	for _, c := range []struct{ execution, request, answer string }{{question, "q1", "us"}, {free, "q2", "Aurora"}, {permission, "p1", "allow"}} {
		var got []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var approvals struct {
				Approvals []struct{ Answer string } `json:"approvals"`
			}
			s.call(t, "GET", "/v1/executions/"+c.execution+"/approvals", nil, &approvals)
			got = got[:0]
			for _, a := range approvals.Approvals {
				got = append(got, a.Answer)
			}
			if len(got) == 1 && got[0] == c.answer {
				break
			}
		}
		if len(got) != 1 || got[0] != c.answer {
			t.Errorf("%s's approvals hold the answers %q, want %s answered %q", c.execution, got, c.request, c.answer)
		}
	}
	b.waitFor(t, 20*time.Second, "the inbox to empty", `document.querySelectorAll('#inbox-list li.inbox-item').length === 0 && `+
		`!document.getElementById('inbox-empty').hidden && document.getElementById('nav-approvals-count').hidden`)
	b.checkNoExceptions(t)
}
