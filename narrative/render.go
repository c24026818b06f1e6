package narrative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/termtext"
)

// Formats are the renderings Render writes, with their content types.
var Formats = map[string]string{
	"md":   "text/markdown; charset=utf-8",
	"html": "text/html; charset=utf-8",
	"json": "application/json",
}

// Render writes n in format: md, html or json. Markdown and HTML tell
// each run as a story, turn by turn; with audit they list every line on
// its record instead (AuditMarkdown, AuditHTML). JSON is the line form
// either way.
func Render(w io.Writer, n *Narrative, format string, audit bool) error {
	if format != "json" {
		// Agent text may hold escape sequences (a clipboard write, a
		// retitle, cursor moves): a document read in a terminal shows
		// them as escapes. JSON escapes them itself.
		var doc bytes.Buffer
		if err := render(&doc, n, format, audit); err != nil {
			return err
		}
		_, err := io.WriteString(w, termtext.EscapeDocument(doc.String()))
		return err
	}
	return render(w, n, format, audit)
}

func render(w io.Writer, n *Narrative, format string, audit bool) error {
	switch {
	case format == "json":
		return JSON(w, n)
	case (format == "md" || format == "") && audit:
		return AuditMarkdown(w, n)
	case format == "md" || format == "":
		return Markdown(w, n)
	case format == "html" && audit:
		return AuditHTML(w, n)
	case format == "html":
		return HTML(w, n)
	}
	return fmt.Errorf("unknown format %q (md, html or json)", format)
}

// JSON writes the narrative as one indented JSON document.
func JSON(w io.Writer, n *Narrative) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(n)
}

func title(n *Narrative) string {
	if n.Subject == "session" {
		return "Narrative of session " + n.SessionID
	}
	return "Narrative of execution " + n.ID
}

func runTitle(i int, r *Run) string {
	s := fmt.Sprintf("Run %d: %s (%s)", i+1, r.ExecutionID, r.AgentID)
	if r.Resumes != "" {
		s += ", resumes " + r.Resumes
	}
	return s
}

func runMeta(r *Run) string {
	s := "started " + r.StartedAt.UTC().Format(time.RFC3339)
	if r.EndedAt != nil {
		s += ", ended " + r.EndedAt.UTC().Format(time.RFC3339)
	}
	lc := r.Lifecycle
	if lc == "" {
		lc = "unknown"
	}
	s += ", final lifecycle " + lc
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s + fmt.Sprintf(", %d records, owner %s, session %s", r.Records, r.Owner, r.SessionID)
}

// mdText keeps agent text on one line and inert: Markdown renderers pass
// HTML through, so angle brackets and ampersands are escaped, and the
// characters that start emphasis, code or links are backslashed.
func mdText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '[', ']', '#', '|':
			b.WriteRune('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mdLine(w io.Writer, l Line) {
	anchor := fmt.Sprintf("`%s` seq %d, event `%s`", l.ExecutionID, l.Sequence, l.EventID)
	if l.From != nil {
		anchor = fmt.Sprintf("`%s` seq %d–%d, events `%s`…`%s`", l.ExecutionID, l.From.Sequence, l.Sequence, l.From.EventID, l.EventID)
	}
	fmt.Fprintf(w, "- **%s** %s — %s\n", l.Marker, mdText(l.Text), anchor)
}

// AuditMarkdown writes the narrative as a Markdown document of lines, each
// on its record.
func AuditMarkdown(w io.Writer, n *Narrative) error {
	fmt.Fprintf(w, "# %s\n\n", mdText(title(n)))
	fmt.Fprintf(w, "Lines marked **observed** restate one journal record as written; lines marked **inferred** are derived from the records they span.\n")
	for i := range n.Runs {
		r := &n.Runs[i]
		if i > 0 {
			fmt.Fprintf(w, "\n## Between runs %d and %d\n\n", i, i+1)
			mdLine(w, n.Between[i-1])
		}
		fmt.Fprintf(w, "\n## %s\n\n%s\n", mdText(runTitle(i, r)), mdText(runMeta(r)))
		if len(r.Missing) > 0 {
			fmt.Fprintf(w, "\n**Partial journal:**\n\n")
			for _, m := range r.Missing {
				fmt.Fprintf(w, "- %s\n", mdText(m))
			}
		}
		for _, s := range Sections {
			lines := r.Section(s)
			if len(lines) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n### %s\n\n", Titles[s])
			for _, l := range lines {
				mdLine(w, l)
			}
		}
	}
	return nil
}

// pageHead starts both pages, the story's and the lines': a
// Content-Security-Policy that allows the inline style alone, the title,
// and the style they share.
const pageHead = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}h3{font-size:1em;margin-bottom:.3em}
`

// page is self-contained: inline CSS, no script, no external resource.
// html/template escapes every text from the journal.
var page = template.Must(template.New("narrative").Funcs(template.FuncMap{
	"runTitle": runTitle, "runMeta": runMeta, "title": func(s Section) string { return Titles[s] },
	"inc": func(i int) int { return i + 1 }, "between": func(n *Narrative, i int) Line { return n.Between[i-1] },
}).Parse(pageHead + `ul{list-style:none;padding-left:0}li{margin:.2em 0}
.marker{display:inline-block;min-width:5.5em;font-size:.8em;font-weight:bold;text-transform:uppercase}
.observed .marker{color:#05662b}.inferred .marker{color:#8a4b00}.inferred{font-style:italic}
.ref{color:#666;font:12px monospace}.missing{background:#fff4d6;border-left:4px solid #e0a000;padding:.4em .8em}
.meta{color:#444}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Lines marked <strong>observed</strong> restate one journal record as written; lines marked <strong>inferred</strong> are derived from the records they span.</p>
{{- $n := .N}}
{{- range $i, $r := .N.Runs}}
{{- if $i}}
<h2>Between runs {{$i}} and {{inc $i}}</h2>
<ul>{{template "line" (between $n $i)}}</ul>
{{- end}}
<h2>{{runTitle $i $r}}</h2>
<p class="meta">{{runMeta $r}}</p>
{{- if $r.Missing}}
<div class="missing"><strong>Partial journal:</strong><ul>{{range $r.Missing}}<li>{{.}}</li>{{end}}</ul></div>
{{- end}}
{{- range $.Sections}}{{$lines := $r.Section .}}{{if $lines}}
<h3>{{title .}}</h3>
<ul>{{range $lines}}{{template "line" .}}{{end}}</ul>
{{- end}}{{end}}
{{- end}}
</body></html>
{{define "line"}}
<li class="{{.Marker}}"><span class="marker">{{.Marker}}</span> {{.Text}} <span class="ref">{{.ExecutionID}} seq {{if .From}}{{.From.Sequence}}–{{end}}{{.Sequence}} · {{if .From}}{{.From.EventID}} … {{end}}{{.EventID}}</span></li>
{{- end}}`))

// AuditHTML writes the narrative's lines, each on its record, as one
// self-contained HTML page.
func AuditHTML(w io.Writer, n *Narrative) error {
	return page.Execute(w, struct {
		Title    string
		N        *Narrative
		Sections []Section
	}{title(n), n, Sections})
}
