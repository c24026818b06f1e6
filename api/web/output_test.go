package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// tailLines is an agent's output of 300 lines that ends in a red, bold
// "error: boom", wrapped in escape sequences that mean nothing in a list
// of lines (erase the line, set the window's title); then, after each of
// two messages, ten lines more.
func tailLines(agent string) []string {
	cmd := []string{agent}
	for i := 1; i < 300; i++ {
		cmd = append(cmd, fmt.Sprintf("say:line %03d", i))
	}
	cmd = append(cmd, "say:\x1b[2K\x1b]0;building\x07\x1b[1;31merror: boom\x1b[0m (see above)")
	for round := 1; round <= 2; round++ {
		cmd = append(cmd, "echo:1")
		for i := 1; i <= 10; i++ {
			cmd = append(cmd, fmt.Sprintf("say:more %d.%d", round, i))
		}
	}
	return append(cmd, "wait")
}

// The output card opens at its newest line, shows ANSI colours as styled
// text with no escape written out, keeps to the tail as lines come, and
// keeps what the reader scrolled up to read where it is.
func TestOutputCardTail(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	id := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-tail", "agent": "generic", "command": tailLines(s.agent)})
	b.signIn(t, s)
	b.openExecution(t, id)

	const box = `document.getElementById('output-lines')`
	// visible is true when the line whose text starts with its argument
	// is inside the box's scrolled view.
	const visible = `((start) => { const b = ` + box + `.getBoundingClientRect();
		const l = [...` + box + `.querySelectorAll('.line')].find((l) => l.textContent.startsWith(start));
		if (!l) return false; const r = l.getBoundingClientRect(); return r.top >= b.top - 1 && r.bottom <= b.bottom + 1 })`
	b.waitFor(t, 20*time.Second, "the error line", `!document.getElementById('output-card').hidden && `+box+`.textContent.includes('error: boom')`)
	b.waitFor(t, 5*time.Second, "the error line in view on opening", visible+`('error: boom')`)
	if got := eval[bool](t, b, visible+`('line 260')`); got {
		t.Errorf("line 260 is in view with the newest line, want the box scrolled to its end")
	}
	if !eval[bool](t, b, `document.getElementById('output-newest').hidden`) {
		t.Errorf("Jump to newest is offered at the newest line, want it hidden")
	}

	text := eval[string](t, b, box+`.textContent`)
	for _, leak := range []string{"\\x1b", "[31m", "[2K", "[0m", "building"} {
		if strings.Contains(text, leak) {
			t.Errorf("the output shows %q, want escape sequences rendered or removed; its last line is %q", leak, text[strings.LastIndex(text, "line 299"):])
		}
	}
	if !strings.Contains(text, "line 299error: boom (see above)") {
		t.Errorf("the output ends %q, want line 299 then error: boom (see above)", text[max(0, len(text)-60):])
	}
	type look struct{ Text, Colour, Weight, LineColour string }
	red := eval[look](t, b, `(() => { const s = [...`+box+`.querySelectorAll('.line span')].find((s) => s.textContent === 'error: boom');
		if (!s) return {}; const c = getComputedStyle(s);
		return {text: s.textContent, colour: c.color, weight: c.fontWeight, lineColour: getComputedStyle(s.parentElement).color} })()`)
	var r, g, bl int
	fmt.Sscanf(red.Colour, "rgb(%d, %d, %d)", &r, &g, &bl)
	if red.Text != "error: boom" || r < 150 || g > 100 || bl > 100 || red.Colour == red.LineColour || red.Weight != "700" {
		t.Errorf("the error is drawn as %+v, want a span of its own in bold red", red)
	}
	if plain := eval[int](t, b, box+`.querySelector('.line').querySelectorAll('span').length`); plain != 0 {
		t.Errorf("a line with no escapes holds %d spans, want its bare text", plain)
	}

	goOn := func() {
		s.call(t, "POST", "/v1/executions/"+id+"/messages", map[string]any{"type": "prompt", "payload": map[string]any{"text": "go on"}}, nil)
	}
	// At the tail, the box follows new lines.
	goOn()
	b.waitFor(t, 20*time.Second, "the newest line followed into view", visible+`('more 1.10')`)

	// Scrolled up, it stays on what the reader reads while lines come,
	// and offers to jump to the newest.
	eval[bool](t, b, `(() => { const b = `+box+`; const l = [...b.querySelectorAll('.line')].find((l) => l.textContent === 'line 280');
		b.scrollTop += l.getBoundingClientRect().top - b.getBoundingClientRect().top; return true })()`)
	b.waitFor(t, 5*time.Second, "Jump to newest", `!document.getElementById('output-newest').hidden`)
	const first = `(() => { const b = ` + box + `.getBoundingClientRect();
		return [...` + box + `.querySelectorAll('.line')].find((l) => l.getBoundingClientRect().bottom > b.top + 1).textContent })()`
	if top := eval[string](t, b, first); top != "line 280" {
		t.Fatalf("the box shows %q at its top after scrolling up, want line 280", top)
	}
	goOn()
	b.waitFor(t, 20*time.Second, "the lines of the second message", box+`.textContent.includes('more 2.10')`)
	if top := eval[string](t, b, first); top != "line 280" {
		t.Errorf("after new lines came the box shows %q at its top, want line 280 where the reader left it", top)
	}
	if eval[bool](t, b, visible+`('more 2.10')`) {
		t.Errorf("the newest line was scrolled into view, want the box left where the reader scrolled it")
	}
	b.click(t, "#output-newest")
	b.waitFor(t, 5*time.Second, "the newest line after Jump to newest", visible+`('more 2.10')`)
	if !eval[bool](t, b, `document.getElementById('output-newest').hidden`) {
		t.Errorf("Jump to newest is still offered at the newest line, want it hidden")
	}
	b.checkNoExceptions(t)
}

// Opening another execution, or another page, starts at the top of the
// window, whatever the last one was scrolled to.
func TestNewPageStartsAtTheTop(t *testing.T) {
	b := newBrowser(t)
	s := startStack(t)
	first := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-first", "agent": "generic", "command": tailLines(s.agent)})
	second := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-second", "agent": "generic", "command": tailLines(s.agent)})
	b.signIn(t, s)
	for _, id := range []string{first, second} {
		b.openExecution(t, id)
		b.waitFor(t, 20*time.Second, "the output", `!document.getElementById('output-card').hidden`)
		y := eval[float64](t, b, `(window.scrollTo(0, document.documentElement.scrollHeight), window.scrollY)`)
		if y <= 0 {
			t.Fatalf("the execution's page does not scroll (height %v): the test needs a page taller than the window",
				eval[float64](t, b, `document.documentElement.scrollHeight`))
		}
	}
	b.openExecution(t, first)
	b.waitFor(t, 20*time.Second, "the first's output", `!document.getElementById('output-card').hidden`)
	if y := eval[float64](t, b, `window.scrollY`); y != 0 {
		t.Errorf("opening another execution shows it scrolled down by %vpx, want its top", y)
	}
	eval[bool](t, b, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	eval[bool](t, b, `(location.hash = '#/', true)`)
	b.waitFor(t, 20*time.Second, "the executions list", `!document.getElementById('list-view').hidden`)
	if y := eval[float64](t, b, `window.scrollY`); y != 0 {
		t.Errorf("the list opened from a scrolled execution's page is scrolled down by %vpx, want its top", y)
	}
	b.checkNoExceptions(t)
}
