package transcript

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/termtext"
)

// Format is how a transcript is written.
type Format string

const (
	// FormatText is for a terminal or a plain text file: one line per
	// tool call, question, turn and end, the agent's Markdown rendered;
	// styled with colours when Options.Color is set.
	FormatText Format = "text"
	// FormatMarkdown is a Markdown document, for a page or a file.
	FormatMarkdown Format = "markdown"
)

// Formats are the formats, as a flag or the API's format parameter names
// them (json is the API's own: the entries as they are).
var Formats = []Format{FormatText, FormatMarkdown}

// Options say how a Writer writes. The zero value writes plain text.
type Options struct {
	Format Format
	// Color styles FormatText with SGR colours: for a terminal (see
	// UseColor).
	Color bool
	// Label is put before every line of FormatText, e.g. the short id of
	// the execution when several are followed at once.
	Label string
	// OutputLines is how many lines of a failed tool call's output are
	// shown; 5 when 0, none when negative.
	OutputLines int
}

// maxTarget bounds, in runes, the target a tool call's line shows.
const maxTarget = 100

// UseColor reports whether text written to w should be coloured: w is a
// terminal, NO_COLOR is unset or empty (no-color.org) and TERM is not
// "dumb". getenv reads the environment.
func UseColor(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	if !ok || getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// Writer writes a transcript as its records arrive: each record's entries
// are written before Add returns, in the order of the records, so that a
// follower of a running execution shows it as it goes.
type Writer struct {
	w    io.Writer
	opts Options
	b    Builder
	// wrote is set once an entry was written: a Markdown document puts a
	// blank line between two.
	wrote bool
}

// New returns a Writer to w.
func New(w io.Writer, opts Options) *Writer {
	if opts.Format == "" {
		opts.Format = FormatText
	}
	if opts.OutputLines == 0 {
		opts.OutputLines = 5
	}
	return &Writer{w: w, opts: opts}
}

// Add writes the entries r adds to the transcript, if any.
func (w *Writer) Add(r eventstore.Record) error {
	for _, e := range w.b.Add(r) {
		if err := w.Write(e); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes the tool calls that started and have not ended, as open:
// call it once the records have ended (the execution's end writes them
// itself).
func (w *Writer) Flush() error {
	for _, e := range w.b.Close() {
		if err := w.Write(e); err != nil {
			return err
		}
	}
	return nil
}

// Write writes one entry, built here or read from the API.
func (w *Writer) Write(e Entry) error {
	var lines []string
	if w.opts.Format == FormatMarkdown {
		lines = markdownEntry(e, w.opts)
		if w.wrote {
			lines = append([]string{""}, lines...)
		}
	} else {
		lines = textEntry(e, w.opts)
		if w.opts.Label != "" {
			label := w.opts.Label + " "
			if w.opts.Color {
				label = paint(true, w.opts.Label, sgrDim) + " "
			}
			for i := range lines {
				lines[i] = label + lines[i]
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	w.wrote = true
	_, err := io.WriteString(w.w, strings.Join(lines, "\n")+"\n")
	return err
}

// Render writes entries whole, in the format opts names.
func Render(w io.Writer, entries []Entry, opts Options) error {
	tw := New(w, opts)
	for _, e := range entries {
		if err := tw.Write(e); err != nil {
			return err
		}
	}
	return nil
}

func paint(color bool, s string, codes ...string) string {
	if !color || s == "" {
		return s
	}
	return "\x1b[" + strings.Join(codes, ";") + "m" + s + "\x1b[0m"
}

// textEntry renders e for a terminal or a text file.
func textEntry(e Entry, o Options) []string {
	c := o.Color
	switch e.Kind {
	case wire.TranscriptPrompt:
		return indented(paint(c, "▶ "+string(e.Source)+":", sgrBold, sgrMagenta)+" ", safeText(e.Text))
	case wire.TranscriptMessage:
		if e.Markdown {
			return terminalMarkdown(e.Text, c)
		}
		return strings.Split(strings.TrimRight(safeText(e.Text), "\n"), "\n")
	case wire.TranscriptTool:
		return toolText(e.Tool, o)
	case wire.TranscriptPlan:
		lines := []string{paint(c, "☰ plan", sgrBold, sgrBlue)}
		for _, it := range e.Plan {
			lines = append(lines, "  "+planBox(it.Status)+" "+oneLine(it.Text))
		}
		return lines
	case wire.TranscriptQuestion:
		q := e.Question
		lines := indented(paint(c, "? "+asked(q, oneLine)+":", sgrBold, sgrYellow)+" ", safeText(q.Question))
		for i, choice := range q.Choices {
			lines = append(lines, fmt.Sprintf("  %d. %s", i+1, oneLine(choice)))
		}
		return append(lines, paint(c, "  (request "+q.RequestID+")", sgrDim))
	case wire.TranscriptAnswer:
		return indented(paint(c, "↳ answer from "+string(e.Source)+":", sgrBold, sgrMagenta)+" ", safeText(e.Text))
	case wire.TranscriptNote:
		return indented(paint(c, "!", sgrBold, sgrYellow)+" ", safeText(e.Text))
	case wire.TranscriptTurn:
		t := e.Turn
		what := fmt.Sprintf("turn %d ended", t.Number)
		if t.Failed {
			what = fmt.Sprintf("turn %d failed", t.Number)
			if t.Reason != "" {
				what += ": " + oneLine(t.Reason)
			}
		}
		return []string{paint(c, "── "+join(what, tokens(t.Tokens), duration(t.DurationMs), "; "), sgrDim)}
	case wire.TranscriptEnd:
		end := e.End
		color := sgrGreen
		if end.Lifecycle != eventstore.LifecycleCompleted {
			color = sgrRed
		}
		what := string(end.Lifecycle)
		if end.Reason != "" {
			what += " (" + oneLine(end.Reason) + ")"
		}
		return []string{paint(c, "■ "+what, sgrBold, color) + suffix(join(tokens(end.Tokens), duration(end.DurationMs), ", "))}
	}
	return nil
}

// toolText is a tool call's line, and the start of a failed call's output.
func toolText(t *wire.TranscriptToolCall, o Options) []string {
	c := o.Color
	line := oneLine(t.Name)
	if t.Target != "" && t.Target != t.Name {
		line += ": " + clipRunes(oneLine(t.Target), maxTarget)
	}
	var mark, outcome string
	switch t.Status {
	case eventstore.ToolCallSucceeded:
		mark = paint(c, "✓", sgrGreen)
	case eventstore.ToolCallFailed:
		mark = paint(c, "✗", sgrRed)
		outcome = paint(c, failure(t, func(s string) string { return clipRunes(s, maxTarget) }), sgrRed)
	default:
		mark = paint(c, "…", sgrYellow)
		outcome = "did not end"
	}
	lines := []string{mark + " " + paint(c, line, sgrBold) + suffix(join(outcome, duration(t.DurationMs), ", "))}
	if t.Status != eventstore.ToolCallFailed || o.OutputLines < 0 {
		return lines
	}
	output := t.Output
	if output == "" {
		// Without an excerpt, the error's lines after its first are
		// what the call said.
		_, output, _ = strings.Cut(strings.TrimSpace(t.Error), "\n")
	}
	excerpt := strings.Split(strings.TrimRight(safeText(output), "\n"), "\n")
	// The error's first line is on the call's line already: output that
	// starts with it (Claude's "Exit code 3", a read's message) is not
	// said twice.
	said, _, _ := strings.Cut(strings.TrimSpace(safeText(t.Error)), "\n")
	for len(excerpt) > 0 && strings.TrimSpace(excerpt[0]) != "" && strings.TrimSpace(excerpt[0]) == strings.TrimSpace(said) {
		excerpt = excerpt[1:]
	}
	if strings.TrimSpace(strings.Join(excerpt, "\n")) == "" {
		return lines
	}
	more := len(excerpt) > o.OutputLines
	if more {
		excerpt = excerpt[:o.OutputLines]
	}
	for _, l := range excerpt {
		lines = append(lines, paint(c, "    │ "+l, sgrDim))
	}
	if more || t.OutputBytes > 0 {
		what := "    │ …"
		if t.OutputBytes > 0 {
			what += fmt.Sprintf(" (%d bytes in all)", t.OutputBytes)
		}
		lines = append(lines, paint(c, what, sgrDim))
	}
	return lines
}

// markdownEntry renders e as a block of a Markdown document.
func markdownEntry(e Entry, o Options) []string {
	switch e.Kind {
	case wire.TranscriptPrompt:
		return append([]string{"**Prompt** from " + string(e.Source) + ":", ""}, quoted(e.Text)...)
	case wire.TranscriptMessage:
		text := strings.TrimRight(safeText(e.Text), "\n")
		return strings.Split(text, "\n")
	case wire.TranscriptTool:
		t := e.Tool
		line := "- " + map[eventstore.ToolCallStatus]string{eventstore.ToolCallSucceeded: "✓", eventstore.ToolCallFailed: "✗"}[t.Status]
		if line == "- " {
			line = "- …"
		}
		line += " " + codeSpan(oneLine(t.Name))
		if t.Target != "" && t.Target != t.Name {
			line += " " + codeSpan(clipRunes(oneLine(t.Target), maxTarget))
		}
		outcome := ""
		switch t.Status {
		case eventstore.ToolCallFailed:
			outcome = failure(t, escapeMarkdown)
		case eventstore.ToolCallStarted:
			outcome = "did not end"
		}
		lines := []string{line + suffix(join(outcome, duration(t.DurationMs), ", "))}
		if t.Status == eventstore.ToolCallFailed && strings.TrimSpace(t.Output) != "" && o.OutputLines >= 0 {
			lines = append(lines, "")
			fence := strings.Repeat("`", max(3, longestRun(t.Output, '`')+1))
			lines = append(lines, "  "+fence)
			for _, l := range strings.Split(strings.TrimRight(safeText(t.Output), "\n"), "\n") {
				lines = append(lines, "  "+l)
			}
			lines = append(lines, "  "+fence)
		}
		return lines
	case wire.TranscriptPlan:
		lines := []string{"**Plan**", ""}
		for _, it := range e.Plan {
			// A task list knows done and not done; the other two are said.
			text := escapeMarkdown(oneLine(it.Text))
			switch it.Status {
			case eventstore.PlanItemDone:
				lines = append(lines, "- [x] "+text)
			case eventstore.PlanItemInProgress:
				lines = append(lines, "- [ ] "+text+" *(in progress)*")
			case eventstore.PlanItemDropped:
				lines = append(lines, "- ~~"+text+"~~ *(dropped)*")
			default:
				lines = append(lines, "- [ ] "+text)
			}
		}
		return lines
	case wire.TranscriptQuestion:
		q := e.Question
		what := upperFirst(asked(q, func(tool string) string { return codeSpan(oneLine(tool)) }))
		lines := []string{"**" + what + "** (request " + codeSpan(q.RequestID) + "):", ""}
		lines = append(lines, quoted(q.Question)...)
		if len(q.Choices) > 0 {
			lines = append(lines, "")
			for i, choice := range q.Choices {
				lines = append(lines, fmt.Sprintf("%d. %s", i+1, escapeMarkdown(oneLine(choice))))
			}
		}
		return lines
	case wire.TranscriptAnswer:
		return append([]string{"**Answer** from " + string(e.Source) + ":", ""}, quoted(e.Text)...)
	case wire.TranscriptNote:
		return []string{"*" + escapeMarkdown(oneLine(e.Text)) + "*"}
	case wire.TranscriptTurn:
		t := e.Turn
		what := fmt.Sprintf("Turn %d ended", t.Number)
		if t.Failed {
			what = fmt.Sprintf("Turn %d failed", t.Number)
			if t.Reason != "" {
				what += ": " + escapeMarkdown(oneLine(t.Reason))
			}
		}
		return []string{"---", "", "*" + join(what, tokens(t.Tokens), duration(t.DurationMs), "; ") + "*"}
	case wire.TranscriptEnd:
		end := e.End
		what := "**" + upperFirst(string(end.Lifecycle)) + "**"
		if end.Reason != "" {
			what += " (" + escapeMarkdown(oneLine(end.Reason)) + ")"
		}
		return []string{"---", "", what + suffix(join(tokens(end.Tokens), duration(end.DurationMs), ", "))}
	}
	return nil
}

// asked names what a question asks for: "question", or "permission"
// for the tool that tool writes.
func asked(q *wire.TranscriptQuestionAsked, tool func(string) string) string {
	if !q.Permission {
		return "question"
	}
	if q.Tool == "" {
		return "permission"
	}
	return "permission for " + tool(q.Tool)
}

// failure says how a tool call failed: its exit code and the first line of
// its error, which text writes.
func failure(t *wire.TranscriptToolCall, text func(string) string) string {
	out := "failed"
	if t.ExitCode != nil {
		out += fmt.Sprintf(", exit %d", *t.ExitCode)
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(safeText(t.Error)), "\n"); first != "" {
		out += ": " + text(first)
	}
	return out
}

// indented puts head before the first line of text and indents the others
// to line up under it.
func indented(head, text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	lines[0] = head + lines[0]
	for i := 1; i < len(lines); i++ {
		lines[i] = "  " + lines[i]
	}
	return lines
}

// quoted is text as a Markdown block quote.
func quoted(text string) []string {
	lines := strings.Split(strings.TrimRight(safeText(text), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("> "+l, " ")
	}
	return lines
}

func planBox(s eventstore.PlanItemStatus) string {
	switch s {
	case eventstore.PlanItemDone:
		return "[x]"
	case eventstore.PlanItemInProgress:
		return "[>]"
	case eventstore.PlanItemDropped:
		return "[-]"
	}
	return "[ ]"
}

// tokens says a turn's or an execution's tokens: "tokens 810 in, 102 out".
func tokens(u execution.Usage) string {
	var parts []string
	if u.InputTokens != nil {
		parts = append(parts, fmt.Sprintf("%d in", *u.InputTokens))
	}
	if u.OutputTokens != nil {
		parts = append(parts, fmt.Sprintf("%d out", *u.OutputTokens))
	}
	if len(parts) == 0 && u.TotalTokens != nil {
		return fmt.Sprintf("%d tokens", *u.TotalTokens)
	}
	if len(parts) == 0 {
		return ""
	}
	return "tokens " + strings.Join(parts, ", ")
}

// duration says a time in milliseconds to a tenth of a second, or a
// second from a minute on; "" for none.
func duration(ms int64) string {
	if ms <= 0 {
		return ""
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Minute {
		d = d.Round(100 * time.Millisecond)
	} else {
		d = d.Round(time.Second)
	}
	if d == 0 {
		// Too short to say.
		return ""
	}
	return d.String()
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// join joins the parts that are not empty with sep.
func join(parts ...string) string {
	sep := parts[len(parts)-1]
	var out []string
	for _, p := range parts[:len(parts)-1] {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// oneLine folds text onto one line: its white space, newlines included,
// to single spaces, and what a terminal would act on removed.
func oneLine(s string) string { return strings.Join(strings.Fields(safeText(s)), " ") }

// safeText is termtext.Strip: the text is the agent's, or its tools': it
// must not move the cursor, retitle the window or recolour what follows.
func safeText(s string) string { return termtext.Strip(s) }

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func textWidth(s string) int { return utf8.RuneCountInString(s) }

// codeSpan is s as Markdown inline code, fenced by more backticks than it
// holds in a row.
func codeSpan(s string) string {
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func longestRun(s string, c rune) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// escapeMarkdown escapes the characters that would make text in a line
// of a Markdown document read as markup.
func escapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>#|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
