package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// A phone's viewport, in CSS pixels.
const (
	phoneWidth  = 390
	phoneHeight = 844
)

// Stop asks before it stops: the question names the execution, Cancel and
// Escape back out with the agent still running, and only the confirmed
// answer ends it.
func TestStopAsksFirst(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	id := s.waiting(t, "t-stop")

	b.signIn(t, s)
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the Stop button", `!document.getElementById('exec-stop').hidden`)

	b.click(t, "#exec-stop")
	b.waitFor(t, 5*time.Second, "the question", `!document.getElementById('stop-confirm').hidden`)
	if q := b.text(t, "#stop-question"); !strings.Contains(q, id) {
		t.Errorf("the question says %q, want it to name %s", q, id)
	}
	if focus := eval[string](t, b, `document.activeElement.id`); focus != "stop-cancel" {
		t.Errorf("the focus is on #%s, want it on Cancel so that Enter does not stop", focus)
	}
	b.click(t, "#stop-cancel")
	b.waitFor(t, 5*time.Second, "the question to go", `document.getElementById('stop-confirm').hidden`)
	s.stillRunning(t, id)

	b.click(t, "#exec-stop")
	b.waitFor(t, 5*time.Second, "the question again", `!document.getElementById('stop-confirm').hidden`)
	b.do(t, chromedp.KeyEvent(kb.Escape))
	b.waitFor(t, 5*time.Second, "Escape to back out", `document.getElementById('stop-confirm').hidden`)
	s.stillRunning(t, id)

	b.stop(t)
	b.waitFor(t, 20*time.Second, "the stopped execution", `document.getElementById('exec-lifecycle').textContent !== 'running' && document.getElementById('exec-stop').hidden`)
	var v struct{ Lifecycle string }
	s.call(t, "GET", "/v1/executions/"+id, nil, &v)
	if v.Lifecycle == "running" {
		t.Errorf("%s is still running after Stop was confirmed", id)
	}
	b.checkNoExceptions(t)
}

// stop presses Stop on the execution's page and confirms it.
func (b *browser) stop(t *testing.T) {
	t.Helper()
	b.click(t, "#exec-stop")
	b.waitFor(t, 5*time.Second, "Stop's question", `!document.getElementById('stop-confirm').hidden`)
	b.click(t, "#stop-yes")
}

// stillRunning fails the test when the execution's process has ended,
// after giving a stop already sent the time to land.
func (s *stack) stillRunning(t *testing.T, id string) {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	var v struct {
		Lifecycle string
		Live      struct{ Running bool }
	}
	s.call(t, "GET", "/v1/executions/"+id, nil, &v)
	if v.Lifecycle != "running" || !v.Live.Running {
		t.Errorf("%s is %s (process running: %v) after backing out of Stop, want it running", id, v.Lifecycle, v.Live.Running)
	}
}

// wider is a JavaScript expression for the page's width and the visible
// elements whose right edge passes the viewport's, to say what to fix.
const wider = `(() => {
	const w = document.documentElement.clientWidth;
	const out = [...document.querySelectorAll('body *')].filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > w + 0.5)
		.slice(0, 8).map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : '') + ' ' + Math.round(e.getBoundingClientRect().right));
	return [String(document.documentElement.scrollWidth), ...out];
})()`

// Every page fits a phone: at 390 px wide, none scrolls sideways. Tables
// scroll in their own box; long ids wrap.
func TestPagesFitAPhone(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	ended := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-a-rather-long-owner-id-for-a-phone", "agent": "generic", "dir": t.TempDir(),
		"prompt": "prompt one", "command": s.turn("answer one")})
	running := s.waiting(t, "t-phone")
	s.ended(t, ended)

	b.do(t, chromedp.EmulateViewport(phoneWidth, phoneHeight))
	b.signIn(t, s)
	fits := func(page string) {
		t.Helper()
		got := eval[[]string](t, b, wider)
		if w, _ := strconv.Atoi(got[0]); w > phoneWidth {
			t.Errorf("the %s page is %s px wide on a %d px viewport, want %d; past the edge: %s", page, got[0], phoneWidth, phoneWidth, strings.Join(got[1:], ", "))
		}
	}
	b.waitFor(t, 20*time.Second, "the list's rows", `document.querySelectorAll('#executions-body tr').length === 2`)
	if !eval[bool](t, b, `document.getElementById('launch').open`) {
		t.Fatal("the launch form is closed, want it open so that its width is measured")
	}
	fits("executions list and launch form")

	for _, id := range []string{running, ended} {
		b.openExecution(t, id)
		b.waitFor(t, 20*time.Second, "the timeline", `document.querySelectorAll('#timeline li.item').length > 0`)
		fits("execution " + id)
		if id == running {
			b.click(t, "#exec-stop")
			b.waitFor(t, 5*time.Second, "Stop's question", `!document.getElementById('stop-confirm').hidden`)
			fits("execution " + id + " asking before Stop")
			b.click(t, "#stop-cancel")
		}
	}
	b.click(t, "#exec-session a")
	b.waitFor(t, 20*time.Second, "the session page", `!document.getElementById('session-view').hidden && document.querySelectorAll('#session-runs li.run').length > 0`)
	fits("session")

	eval[bool](t, b, `(location.hash = '#/sessions') !== ''`)
	b.waitFor(t, 20*time.Second, "the sessions list", `!document.getElementById('sessions-view').hidden && document.querySelectorAll('#sessions-body tr').length === 2`)
	fits("sessions")

	eval[bool](t, b, `(location.hash = '#/hosts') !== ''`)
	b.waitFor(t, 20*time.Second, "the hosts list", `!document.getElementById('hosts-view').hidden && document.querySelectorAll('#hosts-body tr').length > 0`)
	fits("hosts")

	eval[bool](t, b, `(location.hash = '#/search?q=prompt') !== ''`)
	// This stack keeps no search index: the form and its refusal are what is measured.
	b.waitFor(t, 20*time.Second, "the search's answer", `!document.getElementById('search-view').hidden &&
		(document.getElementById('search-info').textContent !== '' || !document.getElementById('search-error').hidden)`)
	fits("search")
	b.checkNoExceptions(t)
}
