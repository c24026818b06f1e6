package narrative

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Markdown writes the narrative as a Markdown document: each run a story,
// turn by turn, each turn's records named once, in a footnote.
func Markdown(w io.Writer, n *Narrative) error {
	fmt.Fprintf(w, "# %s\n", mdText(title(n)))
	for i := range n.Runs {
		r := &n.Runs[i]
		if i > 0 {
			l := n.Between[i-1]
			fmt.Fprintf(w, "\n## Between runs %d and %d\n\n%s[^r%db]\n", i, i+1, mdText(l.Text), i+1)
		}
		mdRun(w, i, r)
		fmt.Fprintln(w)
		if i > 0 {
			fmt.Fprintf(w, "[^r%db]: %s\n", i+1, provenance(*n.Between[i-1].From, n.Between[i-1].Ref))
		}
		for _, t := range r.Story.Turns {
			fmt.Fprintf(w, "[^r%dt%d]: %s\n", i+1, t.N, provenance(t.First, t.Last))
		}
	}
	return nil
}

func mdRun(w io.Writer, i int, r *Run) {
	st := r.Story
	fmt.Fprintf(w, "\n## %s\n\n%s\n", mdText(runTitle(i, r)), mdText(storyMeta(r)))
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "\n**Partial journal:**\n\n")
		for _, m := range r.Missing {
			fmt.Fprintf(w, "- %s\n", mdText(m))
		}
	}
	mdList(w, st.Before)
	for _, t := range st.Turns {
		fmt.Fprintf(w, "\n### Turn %d[^r%dt%d]\n\n", t.N, i+1, t.N)
		fmt.Fprintf(w, "**Asked** by %s:\n\n%s\n", mdText(t.AskedBy), mdQuote(mdBlock(t.Asked)))
		if len(t.Calls) > 0 || len(t.Notes) > 0 {
			fmt.Fprintf(w, "\n**What it did**\n\n")
			for _, d := range didItems(t) {
				switch {
				case d.Targets != nil:
					fmt.Fprintf(w, "- %s (%d): %s\n", d.Label, len(d.Targets), strings.Join(mapStrings(d.Targets, mdCode), ", "))
				case d.Label != "":
					fmt.Fprintf(w, "- **%s**: %s\n", d.Label, mdText(d.Text))
				default:
					fmt.Fprintf(w, "- %s\n", mdText(d.Text))
				}
				if d.Output != "" {
					fmt.Fprintf(w, "\n%s\n", indent(mdFence(d.Output), "  "))
				}
			}
		}
		if len(t.Said) > 0 {
			fmt.Fprintf(w, "\n**What it said**\n")
			for _, s := range t.Said {
				// A quote keeps the agent's headings and lists inside it,
				// below the turn's own.
				fmt.Fprintf(w, "\n%s\n", mdQuote(mdInert(s)))
			}
		}
		if len(t.Waits) > 0 {
			fmt.Fprintf(w, "\n**Where it waited**\n\n")
			for _, wt := range t.Waits {
				fmt.Fprintf(w, "- %s\n", mdText(waitText(wt)))
			}
		}
		var end []string
		if t.Ended != "" {
			end = append(end, upper(t.Ended)+".")
		}
		if tk := tokensText(t.Tokens); tk != "" {
			end = append(end, "Tokens: "+tk+".")
		}
		if len(end) > 0 {
			fmt.Fprintf(w, "\n%s\n", mdText(strings.Join(end, " ")))
		}
	}
	fmt.Fprintf(w, "\n### How it ended\n")
	mdList(w, endingLines(r))
	if len(st.Todos) > 0 {
		fmt.Fprintf(w, "\n**Todos**\n\n")
		for _, it := range st.Todos {
			fmt.Fprintf(w, "- [%s] %s\n", mdText(string(it.Status)), mdText(it.Text))
		}
	}
	if len(st.After) > 0 {
		fmt.Fprintf(w, "\n**After the end**\n")
		mdList(w, st.After)
	}
}

func mdList(w io.Writer, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, s := range items {
		fmt.Fprintf(w, "- %s\n", mdText(s))
	}
}

// endingLines are the run's ending, its total tokens, or why its end is
// unknown.
func endingLines(r *Run) []string {
	st := r.Story
	out := append([]string(nil), st.Ending...)
	if r.EndedAt == nil {
		out = append(out, "the journal records no end (last lifecycle: "+orUnknown(r.Lifecycle)+")")
	}
	if tk := tokensText(st.Tokens); tk != "" {
		out = append(out, "tokens in all: "+tk)
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// storyMeta is the run's line under its heading: when, how long, who for.
func storyMeta(r *Run) string {
	s := "started " + r.StartedAt.UTC().Format(time.RFC3339)
	if r.EndedAt != nil {
		s += fmt.Sprintf(", ended %s after %s", r.EndedAt.UTC().Format(time.RFC3339), r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond))
	}
	return s + fmt.Sprintf("; %d records; owner %s, session %s", r.Records, r.Owner, r.SessionID)
}

// did is one item of what a turn did: a group of calls that did not fail
// (Label and Targets), a failed or denied call (Label, Text, Output), or
// a note (Text).
type did struct {
	Label   string
	Targets []string
	Text    string
	Output  string
	// Class is failed or denied, for the page's style.
	Class string
}

// didItems tells a turn's calls grouped, then its failures and denials
// each with its error and output, then its notes.
func didItems(t Turn) []did {
	var out []did
	for _, g := range Groups {
		if done := callTargets(t.Calls, g); len(done) > 0 {
			out = append(out, did{Label: GroupTitles[g], Targets: done})
		}
	}
	for _, c := range t.Calls {
		if c.Status != eventstore.ToolCallFailed {
			continue
		}
		d := did{Label: failedWord(c), Text: failedText(c), Class: strings.ToLower(failedWord(c))}
		if c.Output != "" {
			d.Output = outputText(c)
		}
		out = append(out, d)
	}
	for _, n := range t.Notes {
		out = append(out, did{Text: n})
	}
	return out
}

// callTargets are the targets of g's calls that did not fail, in order;
// a call without a target is named by its tool.
func callTargets(calls []Call, g Group) []string {
	var out []string
	for _, c := range calls {
		if c.Group != g || c.Status == eventstore.ToolCallFailed {
			continue
		}
		t := c.Target
		if t == "" || g == Others && t == c.Name {
			t = c.Name
		} else if g == Others {
			t = c.Name + " " + t
		}
		out = append(out, t)
	}
	return out
}

func failedWord(c Call) string {
	if c.Denied {
		return "Denied"
	}
	return "Failed"
}

func failedText(c Call) string {
	s := c.Name
	if c.Target != "" && c.Target != c.Name {
		s += " " + c.Target
	}
	if c.ExitCode != nil {
		s += fmt.Sprintf(" (exit %d)", *c.ExitCode)
	}
	if c.Error != "" {
		s += ": " + strings.Join(strings.Fields(c.Error), " ")
	}
	return s
}

func outputText(c Call) string {
	out := strings.TrimRight(c.Output, "\n")
	if c.OutputBytes > int64(len(c.Output)) {
		out += fmt.Sprintf("\n[excerpt of %d bytes of output]", c.OutputBytes)
	}
	return out
}

func waitText(w Wait) string {
	var s string
	switch w.Kind {
	case "question":
		s = "asked: " + w.What
	case "permission":
		s = "asked " + w.What
	default:
		s = "blocked: " + w.What
	}
	switch {
	case w.AnsweredBy != "":
		s += "; " + w.AnsweredBy + " answered: " + w.Answer
	case w.Open != "" && w.Kind != "blocked":
		s += "; " + w.Open
	case w.Open != "":
		s += " (" + w.Open + ")"
	}
	return s
}

// tokensText says a usage, "" when none was reported.
func tokensText(u execution.Usage) string {
	var parts []string
	if u.InputTokens != nil {
		parts = append(parts, count(*u.InputTokens)+" in")
	}
	if u.OutputTokens != nil {
		parts = append(parts, count(*u.OutputTokens)+" out")
	}
	if u.TotalTokens != nil {
		parts = append(parts, count(*u.TotalTokens)+" in all")
	}
	return strings.Join(parts, ", ")
}

// count writes n with thousands separated by commas.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func provenance(from, to Ref) string {
	if from.Sequence == to.Sequence {
		return fmt.Sprintf("`%s` seq %d, event `%s`", to.ExecutionID, to.Sequence, to.EventID)
	}
	return fmt.Sprintf("`%s` seq %d–%d, events `%s` to `%s`", to.ExecutionID, from.Sequence, to.Sequence, from.EventID, to.EventID)
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// mdBlock is mdText kept on its lines: an operator's prompt is shown as
// written, line by line, but inert.
func mdBlock(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = mdText(l)
	}
	return strings.Join(lines, "\n")
}

// mdQuote quotes s, each line, so that its Markdown renders inside the
// quote.
func mdQuote(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

// mdCode is s as a code span, its delimiter longer than any run of
// backticks in it.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	tick := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return tick + " " + s + " " + tick
	}
	return tick + s + tick
}

// mdFence is s as a fenced code block, its fence longer than any run of
// backticks in it.
func mdFence(s string) string {
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + "\n" + s + "\n" + fence
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

func indent(s, by string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n")
}

// mdInert is an agent's Markdown with its raw HTML made text: a renderer
// that passes HTML through shows the tags instead of running them; the
// rest of the Markdown is kept as written.
func mdInert(s string) string {
	src := []byte(s)
	doc := markdown.Parser().Parse(text.NewReader(src))
	var at []int
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var segs *text.Segments
		switch n := n.(type) {
		case *ast.RawHTML:
			segs = n.Segments
		case *ast.HTMLBlock:
			segs = n.Lines()
			if n.HasClosure() {
				at = append(at, spans(src, n.ClosureLine.Start, n.ClosureLine.Stop)...)
			}
		}
		for i := 0; segs != nil && i < segs.Len(); i++ {
			sg := segs.At(i)
			at = append(at, spans(src, sg.Start, sg.Stop)...)
		}
		return ast.WalkContinue, nil
	})
	if len(at) == 0 {
		return s
	}
	slices.Sort(at)
	var b strings.Builder
	prev := 0
	for _, i := range slices.Compact(at) {
		b.Write(src[prev:i])
		b.WriteString("&lt;")
		prev = i + 1
	}
	b.Write(src[prev:])
	return b.String()
}

// spans are the offsets of the '<' in src[start:stop].
func spans(src []byte, start, stop int) []int {
	var out []int
	for i := start; i < stop && i < len(src); i++ {
		if src[i] == '<' {
			out = append(out, i)
		}
	}
	return out
}

// markdown renders an agent's message to HTML: goldmark leaves raw HTML
// out and drops dangerous link targets (javascript:, data: …) unless told
// otherwise, and images are made text here, so that the page loads
// nothing.
var markdown = goldmark.New(goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(noImages{}, 100))))

// noImages replaces each image by its alternative text and address.
type noImages struct{}

func (noImages) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	var images []*ast.Image
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if img, ok := n.(*ast.Image); ok && entering {
			images = append(images, img)
		}
		return ast.WalkContinue, nil
	})
	for _, img := range images {
		var alt bytes.Buffer
		for c := img.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				alt.Write(t.Segment.Value(reader.Source()))
			}
		}
		s := ast.NewString([]byte("[image: " + alt.String() + " " + string(img.Destination) + "]"))
		img.Parent().ReplaceChild(img.Parent(), img, s)
	}
}

func messageHTML(s string) (template.HTML, error) {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(s), &b); err != nil {
		return "", err
	}
	// goldmark escapes text and drops raw HTML: its output is safe as is.
	return template.HTML(b.String()), nil //nolint:gosec // see above
}

// htmlTurn is a turn as the page shows it.
type htmlTurn struct {
	N       int
	AskedBy string
	Asked   string
	Did     []did
	Said    []template.HTML
	Waits   []string
	End     string
	Ref     string
}

// htmlRun is a run as the page shows it.
type htmlRun struct {
	Title, Meta   string
	Between, BRef string
	// Next is the run's number, counted from 1.
	Next    int
	Missing []string
	Before  []string
	Turns   []htmlTurn
	Ending  []string
	Todos   []string
	After   []string
}

func htmlRuns(n *Narrative) ([]htmlRun, error) {
	var out []htmlRun
	for i := range n.Runs {
		r := &n.Runs[i]
		st := r.Story
		hr := htmlRun{Next: i + 1, Title: runTitle(i, r), Meta: storyMeta(r), Missing: r.Missing, Before: st.Before, Ending: endingLines(r), After: st.After}
		if i > 0 {
			l := n.Between[i-1]
			hr.Between, hr.BRef = l.Text, plain(provenance(*l.From, l.Ref))
		}
		for _, it := range st.Todos {
			hr.Todos = append(hr.Todos, fmt.Sprintf("[%s] %s", it.Status, it.Text))
		}
		for _, t := range st.Turns {
			ht := htmlTurn{N: t.N, AskedBy: t.AskedBy, Asked: t.Asked, Did: didItems(t), Ref: plain(provenance(t.First, t.Last))}
			for _, s := range t.Said {
				h, err := messageHTML(s)
				if err != nil {
					return nil, err
				}
				ht.Said = append(ht.Said, h)
			}
			for _, w := range t.Waits {
				ht.Waits = append(ht.Waits, waitText(w))
			}
			var end []string
			if t.Ended != "" {
				end = append(end, upper(t.Ended)+".")
			}
			if tk := tokensText(t.Tokens); tk != "" {
				end = append(end, "Tokens: "+tk+".")
			}
			ht.End = strings.Join(end, " ")
			hr.Turns = append(hr.Turns, ht)
		}
		out = append(out, hr)
	}
	return out, nil
}

func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// storyPage is self-contained: inline CSS, no script, no external
// resource. html/template escapes every text from the journal; agents'
// messages come rendered by messageHTML.
var storyPage = template.Must(template.New("story").Parse(pageHead + `.asked,.said{border-left:3px solid #bbb;margin:.4em 0;padding:.1em .8em;background:#f7f7f7}.asked{white-space:pre-wrap}
.said{border-color:#5a8ad8}pre{background:#f3f3f3;padding:.5em;overflow-x:auto;white-space:pre-wrap}
.failed{color:#a01010}.denied{color:#8a4b00}
.ref{color:#666;font:12px monospace}.missing{background:#fff4d6;border-left:4px solid #e0a000;padding:.4em .8em}
.meta{color:#444}
</style></head><body>
<h1>{{.Title}}</h1>
{{- range $i, $r := .Runs}}
{{- if $i}}
<h2>Between runs {{$i}} and {{.Next}}</h2>
<p>{{.Between}}</p>
<p class="ref">{{.BRef}}</p>
{{- end}}
<h2>{{.Title}}</h2>
<p class="meta">{{.Meta}}</p>
{{- if .Missing}}
<div class="missing"><strong>Partial journal:</strong><ul>{{range .Missing}}<li>{{.}}</li>{{end}}</ul></div>
{{- end}}
{{- with .Before}}
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- range .Turns}}
<section>
<h3>Turn {{.N}}</h3>
<p><strong>Asked</strong> by {{.AskedBy}}:</p>
<div class="asked">{{.Asked}}</div>
{{- with .Did}}
<p><strong>What it did</strong></p>
<ul>
{{- range .}}
<li{{with .Class}} class="{{.}}"{{end}}>{{if .Targets}}{{.Label}} ({{len .Targets}}): {{range $j, $t := .Targets}}{{if $j}}, {{end}}<code>{{$t}}</code>{{end}}{{else if .Label}}<strong>{{.Label}}</strong>: {{.Text}}{{else}}{{.Text}}{{end}}
{{- with .Output}}<pre>{{.}}</pre>{{end}}</li>
{{- end}}
</ul>
{{- end}}
{{- with .Said}}
<p><strong>What it said</strong></p>
{{- range .}}
<div class="said">{{.}}</div>
{{- end}}
{{- end}}
{{- with .Waits}}
<p><strong>Where it waited</strong></p>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- with .End}}
<p>{{.}}</p>
{{- end}}
<p class="ref">{{.Ref}}</p>
</section>
{{- end}}
<h3>How it ended</h3>
<ul>{{range .Ending}}<li>{{.}}</li>{{end}}</ul>
{{- with .Todos}}
<p><strong>Todos</strong></p>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- with .After}}
<p><strong>After the end</strong></p>
<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
{{- end}}
</body></html>
`))

// HTML writes the narrative as one self-contained HTML page, each run a
// story, turn by turn.
func HTML(w io.Writer, n *Narrative) error {
	runs, err := htmlRuns(n)
	if err != nil {
		return err
	}
	return storyPage.Execute(w, struct {
		Title string
		Runs  []htmlRun
	}{title(n), runs})
}
