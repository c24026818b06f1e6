package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// typeKeys types text into the focused element as a keyboard does: each
// key is a keyDown carrying its text, which the browser follows with a
// keypress unless the page cancels the keydown, then a keyUp. ("\r" is
// Enter.) chromedp's SendKeys sends the keypress on its own, which a
// terminal emulator that handles keydown takes as a second key.
func typeKeys(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range text {
			down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: string(r), Text: string(r),
				UnmodifiedText: string(r), WindowsVirtualKeyCode: int64(unicode.ToUpper(r))}
			switch {
			case r == '\r':
				down.Key, down.Code = "Enter", "Enter"
			case r == ' ':
				down.Code = "Space"
			case unicode.IsLetter(r):
				down.Code = "Key" + string(unicode.ToUpper(r))
			}
			up := down
			up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
			for _, ev := range []input.DispatchKeyEventParams{down, up} {
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, ev); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// launch starts an execution through the API and returns its id.
func (s *stack) launch(t testing.TB, body map[string]any) string {
	t.Helper()
	var res struct {
		Reference eventstore.Reference `json:"reference"`
	}
	s.call(t, "POST", "/v1/executions", body, &res)
	return res.Reference.AgentExecutionID
}

// signIn opens the console with the token in the address and waits for
// the executions list.
func (b *browser) signIn(t testing.TB, s *stack) {
	t.Helper()
	b.do(t, chromedp.Navigate(s.url+"/#token="+testToken))
	b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)
}

// openExecution shows an execution's view.
func (b *browser) openExecution(t testing.TB, id string) {
	t.Helper()
	eval[bool](t, b, fmt.Sprintf(`(location.hash = '#/executions/' + encodeURIComponent(%q)) !== ''`, id))
	b.waitFor(t, 20*time.Second, "the execution view", fmt.Sprintf(
		`!document.getElementById('execution-view').hidden && document.getElementById('exec-id').textContent === %q && document.getElementById('exec-lifecycle').textContent !== ''`, id))
}

// watchPolicy records the page's Content-Security-Policy violations in
// window.violations.
func (b *browser) watchPolicy(t testing.TB) {
	t.Helper()
	eval[bool](t, b, `(() => { window.violations = [];
		document.addEventListener('securitypolicyviolation', (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber + ' ' + e.sample));
		return true })()`)
}

// checkPolicy fails the test for a policy violation not from one of the
// sources named.
func (b *browser) checkPolicy(t *testing.T, except ...string) {
	t.Helper()
	var left []string
	for _, v := range eval[[]string](t, b, `window.violations || []`) {
		if !slices.ContainsFunc(except, func(src string) bool { return strings.Contains(v, src) }) {
			left = append(left, v)
		}
	}
	if len(left) > 0 {
		t.Errorf("the page broke its Content-Security-Policy: %q", left)
	}
}

// terminalScript is an agent on a terminal lane: it writes its marker
// nonce to the file named by $1, prints coloured text, a marker line and a
// progress line redrawn with \r, then asks for a line and prints it.
const terminalScript = `printf '%s' "$AGENTJOURNAL_MARKER_NONCE" > "$1"
printf '\033[31mred alert\033[0m plain\n'
printf '@@agentjournal %s {"type":"progress","payload":{"summary":"Sent on the hidden line"}}\n' "$AGENTJOURNAL_MARKER_NONCE"
for p in 10 40 70 100; do printf '\rprogress %3d%%' "$p"; sleep 0.1; done
printf '\ntype something: '
read line
printf 'you typed [%s]\n' "$line"
read more
`

// The terminal lane is shown by a terminal emulator: colours are cell
// attributes, a \r redraw leaves its last state, marker lines and the
// nonce are not shown, and keys typed into the view reach the agent.
func TestTerminalView(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	b.watchPolicy(t)
	nonceFile := filepath.Join(t.TempDir(), "nonce")
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-term", "agent": "generic",
		"posture": "structured-interactive", "command": []string{"/bin/sh", "-c", terminalScript, "sh", nonceFile}})
	b.openExecution(t, id)
	screen := termText("terminal-output")
	b.waitFor(t, 20*time.Second, "the prompt in the terminal", screen+`.includes('type something: ')`)

	lines := strings.Split(eval[string](t, b, screen), "\n")
	want := map[string]bool{"red alert plain": false, "progress 100%": false}
	for _, l := range lines {
		if _, ok := want[l]; ok {
			want[l] = true
		}
		if strings.Contains(l, "progress") && l != "progress 100%" {
			t.Errorf("the terminal shows %q: the redraw did not replace the line", l)
		}
	}
	for l, seen := range want {
		if !seen {
			t.Errorf("the terminal shows %q, want a line %q", lines, l)
		}
	}

	// Colours are the emulator's: the cell of "red alert" has palette
	// colour 1, the text after the reset the default; and the renderer's
	// styles apply (the page's policy lets them in).
	colours := eval[string](t, b, `(() => { const b = document.getElementById('terminal-output').xterm.buffer.active;
		for (let i = 0; i < b.length; i++) { const l = b.getLine(i);
			if (l.translateToString(true) === 'red alert plain') {
				const red = l.getCell(0), plain = l.getCell(10);
				return red.isFgPalette() + ' ' + red.getFgColor() + ' ' + plain.isFgDefault(); } }
		return 'no line' })()`)
	if colours != "true 1 true" {
		t.Errorf("the red text's cells read %q, want palette colour 1 and then the default", colours)
	}
	// The emulator renders only what is in view.
	eval[bool](t, b, `(document.getElementById('terminal-output').scrollIntoView(), true)`)
	b.waitFor(t, 10*time.Second, "red text on the screen", `(() => {
		const spans = [...document.querySelectorAll('#terminal-output .xterm-rows span')];
		const red = spans.find((s) => s.textContent === 'red alert'), plain = spans.find((s) => s.textContent === ' plain');
		if (!red || !plain) return false;
		const [r, g, b] = getComputedStyle(red).color.match(/\d+/g).map(Number);
		return getComputedStyle(red).color !== getComputedStyle(plain).color && r > 2 * (g + b) })()`)

	// The marker is read, never shown.
	nonce, err := os.ReadFile(nonceFile)
	if err != nil || len(nonce) != 32 {
		t.Fatalf("the agent wrote nonce %q (%v), want 32 hex digits", nonce, err)
	}
	b.waitFor(t, 20*time.Second, "the marker's progress in the timeline", `document.getElementById('timeline').textContent.includes('Sent on the hidden line')`)
	shown := eval[string](t, b, screen)
	for _, secret := range []string{string(nonce), "@@agentjournal", "Sent on the hidden line"} {
		if strings.Contains(shown, secret) {
			t.Errorf("the terminal view shows %q:\n%s", secret, shown)
		}
	}

	// Keys typed in the view reach the agent.
	b.do(t, chromedp.Click(chromedp.CSS("#terminal-output .xterm-screen")), typeKeys("hello from the view\r"))
	b.waitFor(t, 20*time.Second, "the agent's answer to the keys", screen+`.includes('you typed [hello from the view]')`)
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}

// An agent's message is Markdown rendered as sanitized HTML: formatting
// becomes elements, and nothing in it runs.
func TestMarkdownMessages(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	b.watchPolicy(t)
	text := "Found **two callers** of the old API:\n\n- `retry.go`\n- `client.go`\n\n```go\nfunc main() {}\n```\n\n" +
		"<script>window.pwned = 'script'</script>\n\n<img src=\"x\" onerror=\"window.pwned = 'img'\">\n\n" +
		"[details](javascript:window.pwned='link') and <a href=\"javascript:window.pwned='anchor'\">more</a>"
	sig, _ := json.Marshal(map[string]any{"type": "message", "payload": map[string]any{"text": text, "format": "markdown"}})
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-md", "agent": "generic",
		"command": []string{s.agent, "signal:" + string(sig), "exit:0"}})
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the message", `document.querySelector('#timeline .kind-chat .markdown') !== null`)

	type rendered struct {
		Bold, Code               string
		Items, Scripts, Handlers int
		Scriptful                int
		Links                    []string
	}
	got := eval[rendered](t, b, `(() => { const m = document.querySelector('#timeline .kind-chat .markdown');
		const all = [...m.querySelectorAll('*')];
		return {
			Bold: (m.querySelector('strong') || {}).textContent || '',
			Code: (m.querySelector('pre code') || {}).textContent || '',
			Items: m.querySelectorAll('ul > li > code').length,
			Scripts: m.querySelectorAll('script').length,
			Handlers: all.filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
			Scriptful: all.filter((e) => [...e.attributes].some((a) => /javascript:/i.test(a.value))).length,
			Links: [...m.querySelectorAll('a')].map((a) => a.textContent + ' ' + (a.getAttribute('href') || '')),
		} })()`)
	if got.Bold != "two callers" || got.Items != 2 || got.Code != "func main() {}\n" {
		t.Errorf("the message renders bold %q, %d list items with code, code block %q; want **two callers**, 2 and the block", got.Bold, got.Items, got.Code)
	}
	if got.Scripts != 0 || got.Handlers != 0 || got.Scriptful != 0 {
		t.Errorf("the message kept %d scripts, %d event handlers, %d javascript: addresses; want none", got.Scripts, got.Handlers, got.Scriptful)
	}
	// Click every link and let every image load or fail: nothing runs.
	eval[bool](t, b, `(() => { document.querySelectorAll('#timeline .markdown a').forEach((a) => a.click()); return true })()`)
	b.waitFor(t, 10*time.Second, "the images to load or fail", `[...document.querySelectorAll('#timeline .markdown img')].every((i) => i.complete)`)
	if pwned := eval[string](t, b, `String(window.pwned)`); pwned != "undefined" {
		t.Errorf("script from the message ran: window.pwned = %q", pwned)
	}
	// The sanitizer parses the message in an inert document, where the
	// policy reports (and blocks) its handler: that report is expected.
	b.checkPolicy(t, "script-src-attr inline "+s.url+"/console/vendor/purify.js")
	b.checkNoExceptions(t)
}

// The plain output's last lines are shown, followed while the agent runs,
// and for a failed execution right under its exit status.
func TestPlainOutputBesideFailure(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-out", "agent": "generic",
		"command": []string{s.agent, "say:building the project", "err:error: config.yaml: \x1b[31mno such file", "echo:1",
			"err:retrying without it", "echo:1", "err:giving up", "exit:3"}})
	b.openExecution(t, id)
	lines := `[...document.querySelectorAll('#output-lines .line')].map((l) => l.className + ' ' + l.textContent)`
	b.waitFor(t, 20*time.Second, "the output so far", `!document.getElementById('output-card').hidden && `+lines+`.some((l) => l.includes('config.yaml'))`)
	if note := b.text(t, "#output-note"); !strings.Contains(note, "live") {
		t.Errorf("the output says %q while the agent runs, want it followed live", note)
	}
	// The agent goes on each time it reads a message: its lines come
	// while it runs.
	goOn := func() {
		s.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "payload": map[string]any{"text": "go on"}}, nil)
	}
	goOn()
	b.waitFor(t, 20*time.Second, "a line printed while the view is open", lines+`.some((l) => l.includes('retrying without it'))`)
	if lc := b.text(t, "#exec-lifecycle"); lc != "running" {
		t.Fatalf("the execution is %s, want it running still (it waits for a message)", lc)
	}
	goOn()
	b.waitFor(t, 20*time.Second, "the failure", `document.getElementById('exec-lifecycle').textContent === 'failed' && `+lines+`.some((l) => l.includes('giving up'))`)

	check := func(t *testing.T) {
		t.Helper()
		b.waitFor(t, 10*time.Second, "the exit status", `!document.getElementById('output-exit').hidden`)
		// The lines are fetched apart from the status: a view opened after
		// the end may show the status first.
		b.waitFor(t, 10*time.Second, "the last line", lines+`.some((l) => l.includes('giving up'))`)
		if exit := b.text(t, "#output-exit"); exit != "failed (exit status 3)" {
			t.Errorf("the output card says %q, want failed (exit status 3)", exit)
		}
		if next := eval[string](t, b, `document.getElementById('output-exit').nextElementSibling.id`); next != "output-lines" {
			t.Errorf("the exit status is followed by %q, want the output lines", next)
		}
		// The two streams are read apart: only each one's order is kept.
		got := eval[[]string](t, b, lines)
		var stdout, stderr []string
		for _, l := range got {
			if rest, ok := strings.CutPrefix(l, "line stderr "); ok {
				stderr = append(stderr, rest)
			} else if rest, ok := strings.CutPrefix(l, "line stdout "); ok {
				stdout = append(stdout, rest)
			}
		}
		wantErr := []string{"error: config.yaml: no such file", "retrying without it", "giving up"}
		if !slices.Equal(stderr, wantErr) || len(stdout) == 0 || stdout[0] != "building the project" {
			t.Errorf("the output shows:\n%s\nwant stdout from %q and stderr %q", strings.Join(got, "\n"), "building the project", wantErr)
		}
	}
	check(t)
	t.Run("opened after the end", func(t *testing.T) {
		b.do(t, chromedp.Navigate(s.url+"/#/"), chromedp.Reload())
		b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)
		b.openExecution(t, id)
		check(t)
	})
	b.checkNoExceptions(t)
}

// An open question's choices are buttons, in the answer box and on its
// timeline item, that answer with the choice.
func TestQuestionChoices(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	ask := `signal:{"type":"needs_input","payload":{"requestId":"pick-db","question":"Which database?","choices":["staging","production"]}}`
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-choice", "agent": "generic",
		"command": []string{s.agent, ask, "echo:1", "sleep:60s"}})
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the question", `!document.getElementById('answer-card').hidden`)
	if got := eval[[]string](t, b, `[...document.querySelectorAll('#answer-choices button')].map((b) => b.textContent)`); strings.Join(got, ",") != "staging,production" {
		t.Errorf("the answer box offers %q, want staging and production", got)
	}
	item := `document.querySelector('#timeline .kind-needs-input')`
	b.waitFor(t, 10*time.Second, "the choices on the timeline", item+` !== null && `+item+`.querySelectorAll('.choices button').length === 2`)
	eval[bool](t, b, `(() => { [...document.querySelectorAll('#timeline .kind-needs-input .choices button')].find((b) => b.textContent === 'production').click(); return true })()`)
	b.waitFor(t, 20*time.Second, "the request to close", `document.getElementById('answer-card').hidden`)
	var answer string
	for _, r := range s.journal(t, id) {
		if r.Type == "message.accepted" && r.MessageType == "answer" {
			answer = string(r.Payload)
		}
	}
	var p struct{ RequestID, Text string }
	if err := json.Unmarshal([]byte(answer), &p); err != nil || p.RequestID != "pick-db" || p.Text != "production" {
		t.Errorf("the journal's answer is %s, want production to pick-db", answer)
	}
	s.checkDelivered(t, id, "answer")
	b.waitFor(t, 10*time.Second, "the closed question's choices as text", item+`.querySelector('.choices') === null && `+item+`.textContent.includes('Choices: staging / production')`)
	b.checkNoExceptions(t)
}

// The token given once is kept by the browser: a link to an execution
// opened in another tab shows it without a sign-in, and signing out in
// one tab signs every tab out.
func TestDeepLinkInNewTab(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-link", "agent": "generic", "command": []string{s.agent, "exit:0"}})
	b.do(t, chromedp.Navigate(s.url+"/"))
	b.waitFor(t, 20*time.Second, "the sign-in form", `!document.getElementById('login-view').hidden`)
	b.do(t, chromedp.SendKeys(chromedp.CSS("#token-input"), testToken), chromedp.Click(chromedp.CSS("#token-submit")))
	b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)

	tab := b.newTab(t)
	tab.do(t, chromedp.Navigate(s.url+"/#/executions/"+id))
	tab.waitFor(t, 20*time.Second, "the execution view in the new tab", fmt.Sprintf(
		`!document.getElementById('execution-view').hidden && document.getElementById('exec-id').textContent === %q && document.getElementById('exec-lifecycle').textContent === 'completed'`, id))
	if !eval[bool](t, tab, `document.getElementById('login-view').hidden`) {
		t.Error("the new tab asked for the token")
	}

	tab.do(t, chromedp.Click(chromedp.CSS("#signout")))
	tab.waitFor(t, 10*time.Second, "the sign-in form", `!document.getElementById('login-view').hidden`)
	if got := eval[string](t, tab, `String(localStorage.getItem('agentjournal.token'))`); got != "null" {
		t.Errorf("after sign-out local storage holds %q", got)
	}
	b.waitFor(t, 10*time.Second, "the first tab to sign out too", `!document.getElementById('login-view').hidden`)
	tab.do(t, chromedp.Reload())
	tab.waitFor(t, 20*time.Second, "the sign-in form after a reload", `!document.getElementById('login-view').hidden`)
	b.checkNoExceptions(t)
	tab.checkNoExceptions(t)
}

// The launch form offers an owner: System/console at first, then the last
// one launched for, so a launch needs only the command and the prompt.
func TestLaunchDefaults(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	owner := func() string {
		return eval[string](t, b, `document.getElementById('launch-owner-entity').value + '/' + document.getElementById('launch-owner-id').value`)
	}
	if got := owner(); got != "System/console" {
		t.Errorf("the launch form offers owner %q, want System/console", got)
	}
	b.do(t,
		chromedp.SendKeys(chromedp.CSS("#launch-command"), shellQuote(s.agent)+" exit:0"),
		chromedp.SendKeys(chromedp.CSS("#launch-prompt"), "Say hello"),
		chromedp.Click(chromedp.CSS("#launch-submit")))
	b.waitFor(t, 20*time.Second, "the launched execution", `!document.getElementById('execution-view').hidden && document.getElementById('exec-owner').textContent.startsWith('System/console ')`)

	b.do(t, chromedp.Click(chromedp.CSS(".exec-head .back")))
	b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden`)
	b.do(t,
		chromedp.SetValue(chromedp.CSS("#launch-owner-entity"), "Task"),
		chromedp.SetValue(chromedp.CSS("#launch-owner-id"), "t-77"),
		chromedp.SetValue(chromedp.CSS("#launch-command"), shellQuote(s.agent)+" exit:0"),
		chromedp.Click(chromedp.CSS("#launch-submit")))
	b.waitFor(t, 20*time.Second, "the second execution", `!document.getElementById('execution-view').hidden && document.getElementById('exec-owner').textContent.startsWith('Task/t-77 ')`)
	b.do(t, chromedp.Navigate(s.url+"/#/"), chromedp.Reload())
	b.waitFor(t, 20*time.Second, "the list after a reload", `!document.getElementById('list-view').hidden`)
	if got := owner(); got != "Task/t-77" {
		t.Errorf("after a launch for Task/t-77 the form offers %q, want Task/t-77", got)
	}
	b.checkNoExceptions(t)
}

// A blocked agent's reason and needs are shown while it is blocked, and on
// its timeline item.
func TestBlockedDetails(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.signIn(t, s)
	blocked := `signal:{"type":"blocked","payload":{"reason":"The staging database refuses connections","needs":"Network access to staging"}}`
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-blocked", "agent": "generic",
		"command": []string{s.agent, blocked, "sleep:60s"}})
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the blocked card", `!document.getElementById('blocked-card').hidden`)
	if got := b.text(t, "#blocked-reason"); got != "The staging database refuses connections" {
		t.Errorf("the blocked card says %q, want the reason", got)
	}
	if got := b.text(t, "#blocked-needs"); got != "Network access to staging" {
		t.Errorf("the blocked card says it needs %q, want the needs", got)
	}
	b.waitFor(t, 10*time.Second, "the needs on the timeline item",
		`[...document.querySelectorAll('#timeline .kind-blocked .item-detail')].some((d) => d.textContent === 'Needs: Network access to staging')`)

	b.stop(t)
	b.waitFor(t, 20*time.Second, "the end", `document.getElementById('exec-lifecycle').textContent !== 'running' && document.getElementById('exec-attention').textContent !== 'blocked'`)
	b.waitFor(t, 10*time.Second, "the blocked card to go", `document.getElementById('blocked-card').hidden`)
	b.checkNoExceptions(t)
}
