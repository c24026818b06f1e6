package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/apitest"
)

// hostile is agent text that would run if the console took it for HTML.
const hostile = `<img src=x onerror="window.pwned='img'"><script>window.pwned='script'</script>`

// signalStep is the fixture agent's step that sends a signal.
func signalStep(t testing.TB, typ string, payload any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"type": typ, "payload": payload})
	if err != nil {
		t.Fatal(err)
	}
	return "signal:" + string(data)
}

// todoWrite is the fixture agent's steps that print a Claude Code
// TodoWrite call (stream-json) of todos, each {content, status}, and its
// result: the adapter reads the list as a plan once the call succeeds.
func todoWrite(t testing.TB, n int, todos ...[2]string) []string {
	t.Helper()
	var list []map[string]string
	for _, td := range todos {
		list = append(list, map[string]string{"content": td[0], "activeForm": td[0], "status": td[1]})
	}
	data, err := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{
		"id": fmt.Sprintf("msg-%d", n), "type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_todo_%d", n), "name": "TodoWrite", "input": map[string]any{"todos": list}}}}})
	if err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_todo_%d", n), "content": "Todos have been modified successfully."}}}})
	return []string{"raw:" + string(data), "raw:" + string(result)}
}

// inert is a JavaScript predicate: nothing of the hostile text became an
// element, and nothing of it ran.
func inert(scope string) string {
	return fmt.Sprintf(`document.querySelectorAll('%[1]s img, %[1]s script').length === 0 && window.pwned === undefined`, scope)
}

// The execution view's Todos and Approvals cards show the runtime
// contract's shapes and follow the execution live: a todo's status and
// its history, a question pending and then answered, by whom and when.
// Agent text in them is text.
func TestTodosAndApprovalsCards(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	b.watchPolicy(t)
	question := "Deploy to staging? " + hostile
	// The fixture stands in for Claude Code: its TodoWrite calls are plans.
	command := []string{s.agent}
	command = append(command, todoWrite(t, 1, [2]string{"Read the schema", "in_progress"}, [2]string{hostile, "pending"})...)
	command = append(command, signalStep(t, "needs_input", map[string]any{"requestId": "r1", "question": question, "choices": []string{"yes", "no"}}), "echo:1")
	command = append(command, todoWrite(t, 2, [2]string{"Read the schema", "completed"}, [2]string{hostile, "in_progress"})...)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-todos", "agent": "claude-code", "command": append(command, "sleep:60s")})
	b.openExecution(t, id)

	todos := `[...document.querySelectorAll('#todos-list li.todo')].map((li) => li.dataset.status + ' ' + li.querySelector('.todo-text').textContent)`
	b.waitFor(t, 20*time.Second, "the first plan's todos", `document.querySelectorAll('#todos-list li.todo').length === 2`)
	if got, want := strings.Join(eval[[]string](t, b, todos), "\n"), "in-progress Read the schema\nopen "+hostile; got != want {
		t.Errorf("the todos card lists:\n%s\nwant:\n%s", got, want)
	}
	approval := `document.querySelector('#approvals-list li.approval[data-approval="r1"]')`
	b.waitFor(t, 20*time.Second, "the pending approval", approval+` !== null && `+approval+`.dataset.status === 'pending'`)
	if q := b.text(t, `#approvals-list li[data-approval="r1"] .approval-question`); q != question {
		t.Errorf("the approval asks %q, want the agent's question as text %q", q, question)
	}
	if c := b.text(t, `#approvals-list li[data-approval="r1"] .approval-choices`); c != "Choices: yes / no" {
		t.Errorf("the approval shows %q, want its choices", c)
	}
	if n := b.text(t, "#approvals-count"); n != "1 pending" {
		t.Errorf("the approvals card counts %q, want 1 pending", n)
	}

	// The answer is sent from elsewhere: the cards follow the events.
	s.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "answer", "payload": map[string]any{"requestId": "r1", "text": "yes"}}, nil)
	b.waitFor(t, 20*time.Second, "the answered approval", approval+`.dataset.status === 'answered' && `+approval+`.querySelector('.approval-resolved') !== null`)
	if a := b.text(t, `#approvals-list li[data-approval="r1"] .approval-answer`); a != "Answer: yes" {
		t.Errorf("the approval shows %q, want the answer yes", a)
	}
	var approvals struct {
		Approvals []struct {
			ResolvedAt       time.Time `json:"resolvedAt"`
			ResolvedSequence uint64    `json:"resolvedSequence"`
		} `json:"approvals"`
	}
	s.call(t, "GET", "/v1/executions/"+id+"/approvals", nil, &approvals)
	if len(approvals.Approvals) != 1 {
		t.Fatalf("the route lists %d approvals, want 1", len(approvals.Approvals))
	}
	resolved := b.text(t, `#approvals-list li[data-approval="r1"] .approval-resolved`)
	if want := fmt.Sprintf("Resolved by: operator · %s · #%d", "", approvals.Approvals[0].ResolvedSequence); !strings.HasPrefix(resolved, "Resolved by: operator · ") ||
		!strings.HasSuffix(resolved, fmt.Sprintf(" · #%d", approvals.Approvals[0].ResolvedSequence)) {
		t.Errorf("the approval says %q, want %q with the time between", resolved, want)
	}
	if at := eval[string](t, b, approval+`.querySelector('.approval-resolved time').getAttribute('datetime')`); at != approvals.Approvals[0].ResolvedAt.Format(time.RFC3339Nano) {
		t.Errorf("the approval was resolved at %s, want %s", at, approvals.Approvals[0].ResolvedAt.Format(time.RFC3339Nano))
	}
	b.waitFor(t, 20*time.Second, "the second plan", `document.querySelector('#todos-list li.todo:first-child').dataset.status === 'done'`)
	if got, want := strings.Join(eval[[]string](t, b, todos), "\n"), "done Read the schema\nin-progress "+hostile; got != want {
		t.Errorf("the todos card lists:\n%s\nwant:\n%s", got, want)
	}
	if n := b.text(t, "#todos-count"); n != "1 of 2 done" {
		t.Errorf("the todos card counts %q, want 1 of 2 done", n)
	}

	// A todo's history opens, and stays open as the card is drawn again.
	b.click(t, `#todos-list li.todo:first-child summary`)
	history := `[...document.querySelectorAll('#todos-list li.todo:first-child .todo-history li')].map((li) => li.dataset.status + ' ' + li.querySelector('.seq').textContent)`
	plans := s.signalSequences(t, id, "plan", 2)
	want := fmt.Sprintf("in-progress #%d\ndone #%d", plans[0], plans[1])
	if got := strings.Join(eval[[]string](t, b, history), "\n"); got != want {
		t.Errorf("the first todo's history lists:\n%s\nwant:\n%s", got, want)
	}
	s.call(t, "POST", "/v1/executions/"+id+"/stop", nil, nil)
	b.waitFor(t, 20*time.Second, "the stopped execution", `document.getElementById('exec-lifecycle').textContent !== 'running'`)
	b.waitFor(t, 10*time.Second, "the history, still open", `document.querySelector('#todos-list li.todo:first-child details').open`)

	// A change's sequence opens its record in the timeline.
	b.click(t, `#todos-list li.todo:first-child .todo-history li:last-child a.seq`)
	b.waitFor(t, 10*time.Second, "the record in the timeline", fmt.Sprintf(
		`location.hash === '#/executions/%s/at/%d' && document.querySelector('#timeline li.item.target[data-seq="%d"]') !== null`, id, plans[1], plans[1]))

	// The execution's session: its own id, for a new session.
	if href := eval[string](t, b, `document.querySelector('#exec-session a').getAttribute('href')`); href != "#/sessions/"+id {
		t.Errorf("the session link goes to %s, want #/sessions/%s", href, id)
	}
	b.waitFor(t, 5*time.Second, "nothing of the agent's text to run", inert("#execution-view"))
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}

// startSearchStack is the stack with a search index following its log.
func startSearchStack(t *testing.T) *stack {
	t.Helper()
	st := apitest.Start(t, apitest.Options{Configure: []func(*api.Config){apitest.WithSearch(t)}})
	return &stack{url: st.HTTP.URL, agent: st.Agent, rt: st.Runtime}
}

// hits is a JavaScript expression for the search view's hits: "execution
// #sequence" each.
const hits = `[...document.querySelectorAll('#search-results li.hit')].map((li) => li.dataset.execution + ' #' + li.dataset.seq)`

// The search box finds records of every execution: each hit names the
// execution and the record, shows the matching text with the matches
// marked, and opens the execution at that record, loading older items
// when it is not among the newest. The agent and lifecycle filters narrow
// the hits; a refusal is shown in words.
func TestSearchView(t *testing.T) {
	b := newBrowser(t)
	s := startSearchStack(t)
	text := "The capybara migration is ready " + hostile
	// The message comes before more timeline items than the view reads
	// at first.
	done := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-search", "agent": "generic", "command": []string{s.agent,
		signalStep(t, "message", map[string]any{"text": text}), "markers:230:1ms"}})
	running := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-search", "agent": "generic", "command": []string{s.agent,
		signalStep(t, "message", map[string]any{"text": "capybara dashboards next"}), "sleep:60s"}})
	s.ended(t, done)
	var at uint64
	for _, o := range s.signals(t, done) {
		if o.Signal.Type == "message" {
			at = o.Sequence
		}
	}
	if at == 0 {
		t.Fatal("the journal holds no observation of the message")
	}

	b.signIn(t, s)
	b.watchPolicy(t)
	b.do(t, chromedp.SendKeys(chromedp.CSS("#top-search-q"), "capybara\r"))
	b.waitFor(t, 20*time.Second, "the search view", `!document.getElementById('search-view').hidden && document.getElementById('search-q').value === 'capybara'`)
	// The index follows the log on its own: search again until both are in.
	for deadline := time.Now().Add(20 * time.Second); ; {
		b.waitFor(t, 10*time.Second, "an answer", `!document.getElementById('search-submit').disabled`)
		if len(eval[[]string](t, b, hits)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the search view shows %q, want two hits", eval[[]string](t, b, hits))
		}
		time.Sleep(200 * time.Millisecond)
		b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	}
	hit := fmt.Sprintf(`document.querySelector('#search-results li.hit[data-execution=%q]')`, done)
	snippet := eval[string](t, b, hit+`.querySelector('.snippet').textContent`)
	if !strings.Contains(snippet, "capybara migration is ready <img src=x") {
		t.Errorf("the hit shows %q, want the message's text as text", snippet)
	}
	if m := eval[[]string](t, b, `[...document.querySelectorAll('#search-results mark')].map((m) => m.textContent)`); strings.Join(m, ",") != "capybara,capybara" {
		t.Errorf("the hits mark %q, want capybara in each", m)
	}
	if h := eval[string](t, b, hit+`.querySelector('a.hit-link').getAttribute('href')`); h != fmt.Sprintf("#/executions/%s/at/%d", done, at) {
		t.Errorf("the hit links to %s, want %s at #%d", h, done, at)
	}
	b.waitFor(t, 5*time.Second, "nothing of the agent's text to run", inert("#search-view"))

	// Filters narrow the hits, and stay in the address.
	b.setFields(t, map[string]string{"search-lifecycle": "running"})
	b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	b.waitFor(t, 10*time.Second, "the running execution's hit alone", fmt.Sprintf(
		`location.hash.includes('lifecycle=running') && JSON.stringify(%s) === JSON.stringify([%q])`, hits, running+" #"+fmt.Sprint(firstSignal(t, s, running))))
	b.setFields(t, map[string]string{"search-lifecycle": "", "search-agent": "codex"})
	b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	b.waitFor(t, 10*time.Second, "no hit of codex", `location.hash.includes('agent=codex') && document.getElementById('search-info').textContent === 'Nothing matches.'`)
	b.setFields(t, map[string]string{"search-agent": "generic"})
	b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	b.waitFor(t, 10*time.Second, "both hits of generic", hits+`.length === 2`)

	b.setFields(t, map[string]string{"search-since": "yesterday"})
	b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	b.waitFor(t, 10*time.Second, "the refusal", `!document.getElementById('search-error').hidden`)
	if msg := b.text(t, "#search-error"); !strings.Contains(msg, `"yesterday" is not a time`) || !strings.Contains(msg, "Field: since") {
		t.Errorf("the search view shows %q, want the refusal of since in words", msg)
	}
	if inv := eval[string](t, b, `String(document.getElementById('search-since').getAttribute('aria-invalid'))`); inv != "true" {
		t.Errorf("the since field is aria-invalid=%s after the refusal, want true", inv)
	}
	b.setFields(t, map[string]string{"search-since": ""})
	b.do(t, chromedp.Click(chromedp.CSS("#search-submit")))
	b.waitFor(t, 10*time.Second, "the hits again", hits+`.length === 2 && document.getElementById('search-error').hidden`)
	b.checkPolicy(t)

	// The hit opens the execution at the record, older than the items
	// the view reads first.
	b.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#search-results li.hit[data-execution=%q] a.hit-link`, done))))
	b.waitFor(t, 20*time.Second, "the record in the timeline", fmt.Sprintf(
		`!document.getElementById('execution-view').hidden && document.querySelector('#timeline li.item.target[data-seq="%d"]') !== null`, at))
	item := fmt.Sprintf(`document.querySelector('#timeline li.item.target[data-seq="%d"]')`, at)
	if got := eval[string](t, b, item+`.textContent`); !strings.Contains(got, "The capybara migration is ready") {
		t.Errorf("the marked item reads %q, want the message", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#timeline li.item').length`); n <= 200 {
		t.Errorf("the timeline holds %d items, want more than the first page of 200", n)
	}
	if !eval[bool](t, b, `(() => { const box = document.getElementById('timeline-box').getBoundingClientRect(),
			r = `+item+`.getBoundingClientRect(); return r.bottom > box.top && r.top < box.bottom })()`) {
		t.Error("the marked item is scrolled out of the timeline's view")
	}
	// The timeline renders the message as Markdown: DOMPurify parses the
	// hostile HTML in a detached document, whose inline handler the
	// policy reports and blocks.
	b.checkPolicy(t, "script-src-attr inline "+s.url+"/console/vendor/purify.js")
	b.checkNoExceptions(t)
}

// setFields sets form fields' values by their ids, as a person picks or
// types them.
func (b *browser) setFields(t testing.TB, values map[string]string) {
	t.Helper()
	data, _ := json.Marshal(values)
	eval[bool](t, b, `(() => { for (const [id, v] of Object.entries(`+string(data)+`)) document.getElementById(id).value = v; return true })()`)
}

// signalSequences returns the sequences of the execution's observations
// of a signal type, failing t unless there are want of them.
func (s *stack) signalSequences(t testing.TB, id, typ string, want int) []uint64 {
	t.Helper()
	var seqs []uint64
	for _, o := range s.signals(t, id) {
		if o.Signal.Type == typ {
			seqs = append(seqs, o.Sequence)
		}
	}
	if len(seqs) != want {
		t.Fatalf("the journal holds %d %s observations, want %d", len(seqs), typ, want)
	}
	return seqs
}

// observed is an observation record with its signal.
type observed struct {
	Type     string `json:"type"`
	Sequence uint64 `json:"sequence"`
	Signal   struct {
		Type string `json:"type"`
	} `json:"signal"`
}

// signals lists an execution's observations that carry a signal.
func (s *stack) signals(t testing.TB, id string) []observed {
	t.Helper()
	var page struct {
		Records []observed `json:"records"`
	}
	s.call(t, "GET", "/v1/executions/"+id+"/records?limit=1000", nil, &page)
	var out []observed
	for _, r := range page.Records {
		if r.Type == "observation.recorded" && r.Signal.Type != "" {
			out = append(out, r)
		}
	}
	return out
}

// firstSignal is the sequence of an execution's first signal.
func firstSignal(t *testing.T, s *stack, id string) uint64 {
	t.Helper()
	for _, o := range s.signals(t, id) {
		return o.Sequence
	}
	t.Fatalf("%s has no signal", id)
	return 0
}
