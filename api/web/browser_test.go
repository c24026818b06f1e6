package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

var update = flag.Bool("update", false, "write the execution view's screenshot to docs/console.png")

const testToken = apitest.Token

// docsScreenshot is where -update writes the execution view, for the README.
const docsScreenshot = "../../docs/console.png"

// Viewport of every screenshot.
const (
	viewWidth  = 1440
	viewHeight = 1000
)

// stack is the whole daemon in process, as serve assembles it: an embedded
// NATS, the journal store, the projection and its projector, the policy
// subscriber, the runtime with terminal lanes and recordings, and the API
// with the console on a loopback listener.
type stack struct {
	url   string
	agent string
	rt    *runtime.Runtime
}

func startStack(t testing.TB) *stack {
	t.Helper()
	return stackOf(apitest.Start(t, apitest.Options{}))
}

// stackOf is the part of a started stack the browser tests use.
func stackOf(s *apitest.Stack) *stack {
	return &stack{url: s.HTTP.URL, agent: s.Agent, rt: s.Runtime}
}

// call sends a request with the API token and decodes the answer.
func (s *stack) call(t testing.TB, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// record is the part of a journal record the test reads.
type record struct {
	Type          string          `json:"type"`
	Sequence      uint64          `json:"sequence"`
	MessageID     string          `json:"messageId"`
	MessageType   string          `json:"messageType"`
	Payload       json.RawMessage `json:"payload"`
	Status        string          `json:"status"`
	Attention     string          `json:"attention"`
	Lifecycle     string          `json:"lifecycle"`
	CurrentInput  json.RawMessage `json:"currentInputRequestId"`
	ObservationID string          `json:"observationId"`
	StateSummary  json.RawMessage `json:"stateSummary"`
}

func (s *stack) journal(t testing.TB, id string) []record {
	t.Helper()
	var page struct {
		Records []record `json:"records"`
	}
	s.call(t, "GET", "/v1/executions/"+id+"/records?limit=1000", nil, &page)
	return page.Records
}

// chromium finds Debian's Chromium. The browser tests need it: they fail,
// rather than skip, when it is missing.
func chromium(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("Chromium is not installed (no /usr/bin/chromium and no chromium on PATH): run `go tool task browser` to install it")
	return ""
}

// browser is one headless Chromium tab, with a fresh profile and no network
// but loopback, that records the page's uncaught exceptions.
type browser struct {
	ctx context.Context

	mu            sync.Mutex
	exceptions    []string
	consoleErrors []string
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	return newBrowserFor(t, 4*time.Minute)
}

// newBrowserFor is newBrowser whose tab may be driven for as long as
// within: a benchmark that follows a page for minutes.
func newBrowserFor(t testing.TB, within time.Duration) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(viewWidth, viewHeight),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, within)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	b := &browser{ctx: ctx}
	b.listen(t)
	b.do(t, chromedp.EmulateViewport(viewWidth, viewHeight))
	return b
}

// newTab opens another tab of the same browser (same profile, same
// storage), closed when t ends.
func (b *browser) newTab(t testing.TB) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	tab := &browser{ctx: ctx}
	tab.listen(t)
	tab.do(t, chromedp.EmulateViewport(viewWidth, viewHeight))
	return tab
}

// listen records the tab's uncaught exceptions and console errors.
func (b *browser) listen(t testing.TB) {
	t.Helper()
	err := chromedp.Listen(b.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text += " " + d.Exception.Description
			}
			b.mu.Lock()
			b.exceptions = append(b.exceptions, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, text))
			b.mu.Unlock()
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, a.Description+string(a.Value))
				}
				b.mu.Lock()
				b.consoleErrors = append(b.consoleErrors, strings.Join(args, " "))
				b.mu.Unlock()
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
}

func (b *browser) do(t testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(t testing.TB, within time.Duration, what, predicate string) {
	t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(within)))
	if err != nil {
		t.Fatalf("waiting for %s (%s): %v\nthe page shows: %s", what, predicate, err, b.visibleText(t))
	}
}

// visibleText is the text the page shows, for failure messages.
func (b *browser) visibleText(t testing.TB) string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return v
}

// click clicks the first element matching a CSS selector, waiting for there
// to be one. Found and clicked in one evaluation, as text reads: a live
// update that replaced the element between a query and a click made apart
// failed the click with "Could not find node with given id".
func (b *browser) click(t testing.TB, sel string) {
	t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (e === null) return false; e.click(); return true; })()`, q)
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// text returns the text content of the first element matching a CSS
// selector, waiting for there to be one. The element is found and read in
// one evaluation: a live update may replace it between a query and a read
// made apart.
func (b *browser) text(t testing.TB, sel string) string {
	t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e === null ? null : [e.textContent]; })()`, q)
	v, err := chromedp.Run(b.ctx, chromedp.Poll[[]string](expr,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || len(v) != 1 {
		t.Fatalf("read %s: %v", sel, err)
	}
	return v[0]
}

func (b *browser) checkNoExceptions(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.consoleErrors {
		t.Logf("console.error in the page: %s", e)
	}
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw uncaught exceptions:\n%s", strings.Join(b.exceptions, "\n"))
	}
}

// screenshot captures the viewport and checks that it shows something: a
// PNG with many colours and a fair share of non-white pixels.
func (b *browser) screenshot(t *testing.T, name string) []byte {
	t.Helper()
	data, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s: not a PNG: %v", name, err)
	}
	colours, ink := inspect(img)
	bounds := img.Bounds()
	total := bounds.Dx() * bounds.Dy()
	t.Logf("screenshot %s: %dx%d, %d colours, %.1f%% non-white", name, bounds.Dx(), bounds.Dy(), colours, 100*float64(ink)/float64(total))
	if bounds.Dx() != viewWidth || bounds.Dy() != viewHeight {
		t.Errorf("screenshot %s: %dx%d, want %dx%d", name, bounds.Dx(), bounds.Dy(), viewWidth, viewHeight)
	}
	if colours < 64 {
		t.Errorf("screenshot %s has %d distinct colours, want at least 64: the page looks blank", name, colours)
	}
	if ink < total/10 {
		t.Errorf("screenshot %s has %d non-white pixels of %d, want at least a tenth: the page looks blank", name, ink, total)
	}
	return data
}

// inspect counts the distinct colours of an image and its pixels that are
// not (nearly) white.
func inspect(img image.Image) (colours, ink int) {
	seen := map[uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			seen[r<<16|g<<8|b] = true
			if r < 245 || g < 245 || b < 245 {
				ink++
			}
		}
	}
	return len(seen), ink
}

// termText is a JavaScript expression for the text of a terminal view's
// buffer (xterm.js): its lines joined by newlines, a wrapped line whole,
// trailing blank lines left out.
func termText(id string) string {
	return fmt.Sprintf(`((t) => { if (!t) return ''; const b = t.buffer.active, out = [];
		for (let i = 0; i < b.length; i++) { const l = b.getLine(i), s = l.translateToString(true);
			if (l.isWrapped && out.length) out[out.length - 1] += s; else out.push(s); }
		return out.join('\n').replace(/\n+$/, ''); })(document.getElementById(%q).xterm)`, id)
}

// shellQuote quotes a word for the console's command line.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func TestConsole(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)

	// Sign in from the address; the page keeps the token in the tab and
	// takes it out of the address.
	b.do(t, chromedp.Navigate(s.url+"/#token="+testToken))
	b.waitFor(t, 20*time.Second, "the executions list, live", `!document.getElementById('list-view').hidden && document.getElementById('conn').dataset.state === 'live'`)
	if href := eval[string](t, b, `location.href`); strings.Contains(href, testToken) {
		t.Errorf("the address still holds the token: %s", href)
	}
	if got := eval[string](t, b, `localStorage.getItem('agentjournal.token')`); got != testToken {
		t.Errorf("local storage holds token %q, want the API token", got)
	}
	// Every reload would lose this mark: the views below must update in place.
	eval[bool](t, b, `window.sameDocument = true`)

	t.Run("the launch form offers every agent the daemon lists", func(t *testing.T) {
		var catalog client.AgentCatalog
		s.call(t, "GET", "/v1/agents", nil, &catalog)
		var want []string
		acp := ""
		for _, a := range catalog.Agents {
			want = append(want, a.ID)
			if a.Protocol == client.ProtocolACP && acp == "" {
				acp = a.ID
			}
		}
		got := eval[[]string](t, b, `[...document.querySelectorAll('#launch-agent option')].map((o) => o.value)`)
		if !slices.Equal(got, want) {
			t.Errorf("the launch form offers %q, want the daemon's agents %q", got, want)
		}
		if acp == "" || !slices.Contains(got, acp) {
			t.Errorf("the launch form offers %q, want an ACP agent among them (the daemon lists %q)", got, want)
		}
	})

	t.Run("a refused filter is shown in words", func(t *testing.T) {
		b.do(t, chromedp.SetValue(chromedp.CSS("#filter-owner"), "Nobody"), chromedp.Click(chromedp.CSS("#filters button[type=submit]")))
		b.waitFor(t, 10*time.Second, "the filter error", `!document.getElementById('list-error').hidden`)
		msg := b.text(t, "#list-error")
		for _, want := range []string{`owner entity "Nobody" is not accepted`, "Field: owner", "Accepted: System, Repository, Mission, Task, Artifact"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the list shows %q, want it to say %q", msg, want)
			}
		}
		eval[bool](t, b, `(document.getElementById('filter-owner').value = '') === ''`)
		b.do(t, chromedp.Click(chromedp.CSS("#filters button[type=submit]")))
		b.waitFor(t, 10*time.Second, "the error to go", `document.getElementById('list-error').hidden`)
	})

	// Launch the fixture agent from the form, on a terminal lane, standing
	// in for Claude Code: the adapter's flags are ignored, stdout markers
	// and stream-json lines, the message and its final usage, are read as
	// Claude Code's.
	steps := []string{
		`signal:{"type":"status","payload":{"summary":"Planning the migration","phase":"planning"}}`,
		`signal:{"type":"progress","payload":{"summary":"Reading the schema files","units":{"completed":3,"total":12,"unit":"files"}}}`,
		`raw:{"type":"assistant","message":{"id":"msg-1","content":[{"type":"text","text":"Found 2 tables without an index on owner_id."}],"usage":{"input_tokens":18400,"output_tokens":1}}}`,
		`raw:{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":18400,"output_tokens":3120}},"api_message_id":"msg-1"}`,
		"sleep:1500ms",
		"ask:r1:Apply the migration to the staging database?",
		"echo:1",
		`signal:{"type":"completed_claim","payload":{"summary":"Migration applied; 12 of 12 checks pass"}}`,
		"sleep:300ms",
	}
	command := shellQuote(s.agent)
	for _, step := range steps {
		command += " " + shellQuote(step)
	}
	b.do(t,
		chromedp.SetValue(chromedp.CSS("#launch-owner-entity"), "Task"),
		chromedp.SetValue(chromedp.CSS("#launch-owner-id"), "t-migrate"),
		chromedp.SetValue(chromedp.CSS("#launch-agent"), "claude-code"),
		chromedp.SetValue(chromedp.CSS("#launch-posture"), "structured-interactive"),
		chromedp.SetValue(chromedp.CSS("#launch-command"), command),
		chromedp.Click(chromedp.CSS("#launch-submit")),
	)
	b.waitFor(t, 20*time.Second, "the new execution's view", `location.hash.startsWith('#/executions/ae-') && !document.getElementById('execution-view').hidden`)
	id := eval[string](t, b, `decodeURIComponent(location.hash.slice('#/executions/'.length))`)
	t.Logf("launched %s", id)

	// The timeline grows live: first the progress, then the question.
	b.waitFor(t, 20*time.Second, "the progress item", `[...document.querySelectorAll('#timeline .item')].some(li => li.textContent.includes('Reading the schema files'))`)
	before := eval[int](t, b, `document.querySelectorAll('#timeline .item').length`)
	b.waitFor(t, 20*time.Second, "the question", `!document.getElementById('answer-card').hidden`)
	after := eval[int](t, b, `document.querySelectorAll('#timeline .item').length`)
	if after <= before {
		t.Errorf("the timeline had %d items, then %d: it did not grow live", before, after)
	}
	if q := b.text(t, "#answer-question"); q != "Apply the migration to the staging database?" {
		t.Errorf("the answer box asks %q, want the agent's question", q)
	}
	b.waitFor(t, 10*time.Second, "the awaiting-operator badge", `document.getElementById('exec-attention').textContent === 'awaiting-operator'`)
	b.waitFor(t, 10*time.Second, "the token telemetry", `document.getElementById('latest').textContent.includes('18,400 in')`)
	b.waitFor(t, 10*time.Second, "the terminal lane", `!document.getElementById('terminal-card').hidden && `+termText("terminal-output")+`.length > 0`)
	if lbl := b.text(t, "#terminal-card h2"); !strings.Contains(lbl, "native") || !strings.Contains(lbl, "advanced") {
		t.Errorf("the terminal lane is labelled %q, want native and advanced", lbl)
	}
	shot := b.screenshot(t, "execution view")
	if *update {
		if err := os.WriteFile(docsScreenshot, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", docsScreenshot)
	}

	// Answer from the answer box; the agent reads the answer and moves on.
	b.do(t, chromedp.SendKeys(chromedp.CSS("#answer-text"), "yes, staging only"), chromedp.Click(chromedp.CSS("#answer-send")))
	b.waitFor(t, 20*time.Second, "the request to close", `document.getElementById('answer-card').hidden && document.getElementById('exec-attention').textContent !== 'awaiting-operator'`)
	b.waitFor(t, 10*time.Second, "the agent to read the answer", termText("terminal-output")+`.includes('answer r1: {"message"')`)
	answered := false
	for _, r := range s.journal(t, id) {
		if r.Type == "message.accepted" && r.MessageType == "answer" {
			var p struct{ RequestID, Text string }
			json.Unmarshal(r.Payload, &p)
			if p.RequestID != "r1" || p.Text != "yes, staging only" {
				t.Errorf("the answer's payload is %s, want requestId r1 and the text typed", r.Payload)
			}
			answered = true
		}
	}
	if !answered {
		t.Fatal("the journal holds no answer message")
	}
	s.checkDelivered(t, id, "answer")
	s.checkRequestCleared(t, id, "r1")

	// The prompt box offers the execution's messages by portability, and
	// sends them as messages, never as terminal input.
	options := eval[[]string](t, b, `[...document.querySelectorAll('#prompt-type option')].map(o => o.parentElement.label + ': ' + o.textContent)`)
	want := []string{"Cross-agent: Prompt — Cross-agent", "Cross-agent: Interrupt — Cross-agent", "Adapter-scoped: Compact — Adapter-scoped: claude-code"}
	if strings.Join(options, "\n") != strings.Join(want, "\n") {
		t.Errorf("the prompt box offers %q, want %q", options, want)
	}
	b.do(t, chromedp.SetValue(chromedp.CSS("#prompt-type"), "prompt"),
		chromedp.SendKeys(chromedp.CSS("#prompt-text"), "Also add the index on tenant_id."),
		chromedp.Click(chromedp.CSS("#prompt-send")))
	b.waitFor(t, 20*time.Second, "the acknowledgement", `document.getElementById('prompt-result').textContent.includes('journaled at sequence')`)
	prompted := false
	for _, r := range s.journal(t, id) {
		if r.Type == "message.accepted" && r.MessageType == "prompt" && strings.Contains(string(r.Payload), "Also add the index on tenant_id.") {
			prompted = true
		}
	}
	if !prompted {
		t.Fatal("the journal holds no prompt message with the text typed")
	}
	s.checkDelivered(t, id, "prompt")
	b.waitFor(t, 20*time.Second, "the agent to finish", `document.getElementById('exec-lifecycle').textContent === 'completed'`)
	b.waitFor(t, 10*time.Second, "the agent's echo in the lane", `/echo: \{"message".*Also add the index on tenant_id\./.test(`+termText("terminal-output")+`)`)
	b.waitFor(t, 10*time.Second, "the completion claim in the timeline", `document.querySelector('#timeline .kind-claim') !== null`)

	t.Run("an unknown slash command is refused in words", func(t *testing.T) {
		eval[string](t, b, `document.getElementById('prompt-text').value = ''`)
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "/frobnicate now"))
		b.waitFor(t, 10*time.Second, "the preview of the parse error", `document.getElementById('prompt-preview').textContent.includes('unknown command /frobnicate')`)
		b.do(t, chromedp.Click(chromedp.CSS("#prompt-send")))
		b.waitFor(t, 10*time.Second, "the error", `!document.getElementById('prompt-error').hidden`)
		msg := b.text(t, "#prompt-error")
		for _, want := range []string{"unknown command /frobnicate for execution " + id, "want: one of: /checkpoint", "/compact", "Field: text", "400 invalid_field"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the prompt box shows %q, want it to say %q", msg, want)
			}
		}
	})

	t.Run("slash commands autocomplete, preview and run", func(t *testing.T) {
		eval[string](t, b, `document.getElementById('prompt-text').value = ''`)
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "/"))
		b.waitFor(t, 10*time.Second, "the completions", `document.querySelectorAll('#prompt-completions li.completion').length > 3`)
		rows := eval[[]string](t, b, `[...document.querySelectorAll('#prompt-completions li.completion')].map(li => li.dataset.command + ' ' + li.dataset.category + ' ' + li.dataset.portability)`)
		for _, want := range []string{"checkpoint entity-command mission-native", "impact semantic-operation mission-native", "prompt agent-message cross-agent", "compact agent-message adapter-scoped"} {
			if !slices.Contains(rows, want) {
				t.Errorf("completions %q, want %q among them", rows, want)
			}
		}
		groups := eval[[]string](t, b, `[...document.querySelectorAll('#prompt-completions .completion-group-label')].map(s => s.textContent)`)
		if !slices.Contains(groups, "Adapter-scoped: claude-code") || !slices.Contains(groups, "Mission-native") {
			t.Errorf("completion groups %q, want adapter-scoped commands apart from Mission-native ones", groups)
		}
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "ch"))
		b.waitFor(t, 10*time.Second, "the completions of /ch", `[...document.querySelectorAll('#prompt-completions li.completion')].map(li => li.dataset.command).join() === 'checkpoint'`)
		b.do(t, chromedp.Click(chromedp.CSS(`#prompt-completions li.completion[data-command="checkpoint"]`)))
		if v := eval[string](t, b, `document.getElementById('prompt-text').value`); v != "/checkpoint " {
			t.Errorf("a click on the completion left %q in the box, want %q", v, "/checkpoint ")
		}
		b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-text"), "before review"))
		b.waitFor(t, 10*time.Second, "the preview of the invocation", `document.getElementById('prompt-preview').textContent.includes('records checkpoint.created')`)
		if p := b.text(t, "#prompt-preview"); !strings.Contains(p, "entity-command") || !strings.Contains(p, "Mission-native") || !strings.Contains(p, "execution.checkpoint") {
			t.Errorf("the preview says %q, want the category, portability and operation", p)
		}
		for _, r := range s.journal(t, id) {
			if r.Type == "checkpoint.created" && strings.Contains(string(r.StateSummary), "before review") {
				t.Fatal("the preview recorded the checkpoint")
			}
		}
		b.do(t, chromedp.Click(chromedp.CSS("#prompt-send")))
		b.waitFor(t, 10*time.Second, "the result", `document.getElementById('prompt-result').textContent.includes('journaled at sequence')`)
		found := false
		for _, r := range s.journal(t, id) {
			found = found || (r.Type == "checkpoint.created" && strings.Contains(string(r.StateSummary), "before review"))
		}
		if !found {
			t.Error("the journal holds no checkpoint titled before review")
		}
	})

	t.Run("time travel", func(t *testing.T) {
		last := s.quiet(t, id)
		recs := s.journal(t, id)
		var asked uint64
		for _, r := range recs {
			if r.Type == "state.changed" && r.Attention == "awaiting-operator" {
				asked = r.Sequence
				break
			}
		}
		if asked == 0 {
			t.Fatal("the journal has no state change to awaiting-operator")
		}
		b.waitFor(t, 10*time.Second, "the slider to reach the end", fmt.Sprintf(`document.getElementById('tt-range').max === '%d'`, last))

		shows := func(t *testing.T, seq uint64, lifecycle, attention string) {
			t.Helper()
			b.waitFor(t, 10*time.Second, fmt.Sprintf("sequence %d: %s, %s", seq, lifecycle, attention), fmt.Sprintf(
				`!document.getElementById('tt-banner').hidden && document.getElementById('tt-banner-seq').textContent === '%d' && `+
					`document.getElementById('exec-lifecycle').textContent === '%s' && document.getElementById('exec-attention').textContent === '%s'`,
				seq, lifecycle, attention))
			newest := eval[int](t, b, `Math.max(0, ...[...document.querySelectorAll('#timeline .item')].map(li => Number(li.dataset.seq)))`)
			if uint64(newest) > seq {
				t.Errorf("at sequence %d the timeline shows item %d", seq, newest)
			}
		}
		b.do(t, chromedp.Click(chromedp.CSS("#tt-first")))
		shows(t, 1, "starting", "none")
		b.do(t, chromedp.SetValue(chromedp.CSS("#tt-seq"), strconv.FormatUint(asked, 10)), chromedp.Click(chromedp.CSS("#tt-go")))
		shows(t, asked, "running", "awaiting-operator")
		var before struct {
			State struct{ Lifecycle, Attention string } `json:"state"`
		}
		s.call(t, "GET", fmt.Sprintf("/v1/executions/%s/replay?toSeq=%d&limit=0", id, asked-1), nil, &before)
		if before.State.Attention == "awaiting-operator" {
			t.Fatalf("at sequence %d the execution already awaits the operator", asked-1)
		}
		b.do(t, chromedp.Click(chromedp.CSS("#tt-prev")))
		shows(t, asked-1, before.State.Lifecycle, before.State.Attention)
		// Scrub with the slider, as a person drags it.
		eval[bool](t, b, fmt.Sprintf(`(() => { const r = document.getElementById('tt-range'); r.value = '%d'; r.dispatchEvent(new Event('input')); return true })()`, asked))
		shows(t, asked, "running", "awaiting-operator")
		b.do(t, chromedp.Click(chromedp.CSS("#tt-records-box summary")))
		b.waitFor(t, 10*time.Second, "the records up to there", fmt.Sprintf(`document.querySelectorAll('#tt-records tr').length === %d`, asked))
		offsets := eval[[]uint64](t, b, `[...document.querySelectorAll('#tt-records tr')].map(tr => Number(tr.dataset.offset))`)
		for i := 1; i < len(offsets); i++ {
			if offsets[i] >= offsets[i-1] {
				t.Fatalf("record offsets %v are not newest first, each with its own offset", offsets)
			}
		}
		b.do(t, chromedp.Click(chromedp.CSS("#tt-live")))
		b.waitFor(t, 10*time.Second, "the live view", `document.getElementById('tt-banner').hidden && document.getElementById('exec-lifecycle').textContent === 'completed'`)
		b.waitFor(t, 10*time.Second, "every record, live", fmt.Sprintf(`document.querySelectorAll('#tt-records tr').length === %d`, last))
	})

	t.Run("terminal recording", func(t *testing.T) {
		b.do(t, chromedp.Click(chromedp.CSS("#rec-load")))
		b.waitFor(t, 10*time.Second, "the player", `document.getElementById('rec-info').textContent.includes('event 0 of')`)
		b.do(t, chromedp.Click(chromedp.CSS("#rec-step")), chromedp.Click(chromedp.CSS("#rec-step")))
		b.waitFor(t, 5*time.Second, "two steps", `document.getElementById('rec-info').textContent.includes('event 2 of')`)
		b.do(t, chromedp.Click(chromedp.CSS("#rec-end")))
		b.waitFor(t, 5*time.Second, "the whole recording", `/echo: \{"message".*Also add the index on tenant_id\./.test(`+termText("rec-screen")+`) && `+
			termText("rec-screen")+`.includes('[exit 0]')`)
		if rec := eval[string](t, b, termText("rec-screen")); strings.Contains(rec, "@@agentjournal") {
			t.Errorf("the recording shows marker lines:\n%s", rec)
		}
	})

	t.Run("the list updates live and puts attention first", func(t *testing.T) {
		b.do(t, chromedp.Click(chromedp.CSS(".exec-head .back")))
		b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden && document.querySelector('#executions-body tr') !== null`)
		var blocked struct {
			Reference eventstore.Reference `json:"reference"`
		}
		s.call(t, "POST", "/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-deploy", "agent": "generic",
			"command": []string{s.agent, `signal:{"type":"blocked","payload":{"reason":"No credentials for the registry"}}`, "sleep:60s"}}, &blocked)
		b.waitFor(t, 20*time.Second, "the blocked execution, first and marked", fmt.Sprintf(
			`(() => { const tr = document.querySelector('#executions-body tr'); return tr && tr.dataset.id === '%s' && tr.dataset.attention === 'blocked' && tr.classList.contains('needs') && tr.querySelector('.mark').textContent === '!' })()`,
			blocked.Reference.AgentExecutionID))
		rows := eval[[]string](t, b, `[...document.querySelectorAll('#executions-body tr')].map(tr => tr.dataset.id + ' ' + tr.querySelector('td.row-lifecycle').textContent)`)
		if len(rows) != 2 || rows[1] != id+" completed" {
			t.Errorf("the list shows %q, want the blocked execution, then %s completed", rows, id)
		}
		b.screenshot(t, "executions list")
	})

	t.Run("events that come while the list loads are kept", func(t *testing.T) {
		// Hold the list's answer, computed before the launch below, until
		// the launched execution's events have come: the list must not
		// drop them when the answer lands.
		eval[bool](t, b, `(() => { const f = window.fetch; window.heldFetch = f; window.listLanded = false;
			window.fetch = (p, i) => String(p).startsWith('/v1/executions?')
				? f(p, i).then((r) => new Promise((ok) => setTimeout(() => {
					ok(r);
					setTimeout(() => { window.listLanded = true }, 200);
				}, 3000)))
				: f(p, i);
			document.getElementById('filters').requestSubmit(); return true })()`)
		defer eval[bool](t, b, `(() => { window.fetch = window.heldFetch; return true })()`)
		time.Sleep(500 * time.Millisecond)
		var quick struct {
			Reference eventstore.Reference `json:"reference"`
		}
		s.call(t, "POST", "/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-quick", "agent": "generic",
			"command": []string{s.agent, "exit:0"}}, &quick)
		b.waitFor(t, 20*time.Second, "the held list", `window.listLanded === true`)
		b.waitFor(t, 5*time.Second, "the execution launched while the list loaded", fmt.Sprintf(
			`document.querySelector('#executions-body tr[data-id="%s"]') !== null`, quick.Reference.AgentExecutionID))
	})

	if !eval[bool](t, b, `window.sameDocument === true`) {
		t.Error("the page reloaded: live updates must not need a reload")
	}
	b.checkNoExceptions(t)
}

// quiet waits until an execution's journal has stopped growing (the
// policy may still decide on the last observations after the process has
// ended) and returns its last sequence.
func (s *stack) quiet(t *testing.T, id string) uint64 {
	t.Helper()
	var last uint64
	stable := 0
	deadline := time.Now().Add(20 * time.Second)
	for stable < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the journal of %s keeps growing", id)
		}
		var v struct {
			Journal eventstore.Reference `json:"journal"`
		}
		s.call(t, "GET", "/v1/executions/"+id, nil, &v)
		if v.Journal.LastSequence == last {
			stable++
		} else {
			last, stable = v.Journal.LastSequence, 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	return last
}

// checkDelivered checks that the newest message of a type was delivered to
// the agent.
func (s *stack) checkDelivered(t *testing.T, id, messageType string) {
	t.Helper()
	var msgID string
	recs := s.journal(t, id)
	for _, r := range recs {
		if r.Type == "message.accepted" && r.MessageType == messageType {
			msgID = r.MessageID
		}
	}
	for _, r := range recs {
		if r.Type == "message.delivery" && r.MessageID == msgID {
			if r.Status != "delivered" {
				t.Errorf("the %s message %s was %s, want delivered", messageType, msgID, r.Status)
			}
			return
		}
	}
	t.Errorf("the journal records no delivery of the %s message %s", messageType, msgID)
}

// checkRequestCleared checks that a state change closed the input request.
func (s *stack) checkRequestCleared(t *testing.T, id, requestID string) {
	t.Helper()
	for _, r := range s.journal(t, id) {
		if r.Type == "state.changed" && string(r.CurrentInput) == "null" {
			return
		}
	}
	t.Errorf("the journal records no state change that clears input request %s", requestID)
}

func TestLoginRefusesAWrongToken(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	b.do(t, chromedp.Navigate(s.url+"/"))
	b.waitFor(t, 20*time.Second, "the sign-in form", `!document.getElementById('login-view').hidden`)
	b.do(t, chromedp.SendKeys(chromedp.CSS("#token-input"), "not-the-token"), chromedp.Click(chromedp.CSS("#token-submit")))
	b.waitFor(t, 10*time.Second, "the refusal", `!document.getElementById('login-error').hidden`)
	if msg := b.text(t, "#login-error"); !strings.Contains(msg, "the token is not valid") || !strings.Contains(msg, "401 unauthorized") {
		t.Errorf("the sign-in form shows %q, want the API's refusal in words", msg)
	}
	if got := eval[string](t, b, `String(localStorage.getItem('agentjournal.token'))`); got != "null" {
		t.Errorf("local storage kept the refused token %q", got)
	}
	b.do(t, chromedp.SetValue(chromedp.CSS("#token-input"), testToken), chromedp.Click(chromedp.CSS("#token-submit")))
	b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)
	b.screenshot(t, "empty executions list")
	b.checkNoExceptions(t)
}
