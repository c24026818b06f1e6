package transcript

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// SGR codes of the terminal renderer's styles.
const (
	sgrBold      = "1"
	sgrDim       = "2"
	sgrItalic    = "3"
	sgrUnderline = "4"
	sgrRed       = "31"
	sgrGreen     = "32"
	sgrYellow    = "33"
	sgrBlue      = "34"
	sgrMagenta   = "35"
	sgrCyan      = "36"
)

// markdownParser parses CommonMark; it is safe for concurrent use.
var markdownParser = goldmark.DefaultParser()

// terminalMarkdown renders Markdown source as lines for a terminal:
// headings, emphasis, code and links styled with SGR colours when color is
// set, and told in plain text otherwise (a heading underlined, a link's
// address after its text, code indented), lists with bullets or numbers,
// quotes behind a bar. The source's own escape sequences are not trusted:
// they are removed before it is parsed.
func terminalMarkdown(src string, color bool) []string {
	source := []byte(safeText(src))
	r := &mdTerminal{src: source, color: color}
	lines := r.blocks(markdownParser.Parse(text.NewReader(source)))
	// Trailing blank lines say nothing between entries.
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type mdTerminal struct {
	src   []byte
	color bool
}

// style wraps s in the SGR codes, and in outer's again after its end, so
// that a bold word inside a heading leaves the heading styled.
func (r *mdTerminal) style(s string, outer []string, codes ...string) string {
	if !r.color || s == "" {
		return s
	}
	out := "\x1b[" + strings.Join(codes, ";") + "m" + s + "\x1b[0m"
	if len(outer) > 0 {
		out += "\x1b[" + strings.Join(outer, ";") + "m"
	}
	return out
}

// blocks renders the block children of n, a blank line between two of
// them unless n is a tight list's item.
func (r *mdTerminal) blocks(n ast.Node) []string {
	var out []string
	tight := false
	if item, ok := n.(*ast.ListItem); ok {
		if list, ok := item.Parent().(*ast.List); ok {
			tight = list.IsTight
		}
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, r.block(c)...)
	}
	return out
}

func (r *mdTerminal) block(n ast.Node) []string {
	switch n := n.(type) {
	case *ast.Heading:
		line := r.inline(n, []string{sgrBold, sgrCyan})
		if r.color {
			return []string{r.style(line, nil, sgrBold, sgrCyan)}
		}
		switch n.Level {
		case 1:
			return []string{line, strings.Repeat("=", max(3, textWidth(line)))}
		case 2:
			return []string{line, strings.Repeat("-", max(3, textWidth(line)))}
		}
		return []string{strings.Repeat("#", n.Level) + " " + line}
	case *ast.Paragraph, *ast.TextBlock:
		return strings.Split(r.inline(n, nil), "\n")
	case *ast.List:
		return r.list(n)
	case *ast.Blockquote:
		var out []string
		for _, l := range r.blocks(n) {
			out = append(out, r.style("│", nil, sgrDim)+" "+l)
		}
		return out
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		var out []string
		lines := n.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			line := strings.TrimRight(string(seg.Value(r.src)), "\n")
			out = append(out, "    "+r.style(line, nil, sgrYellow))
		}
		return out
	case *ast.ThematicBreak:
		return []string{r.style("────────", nil, sgrDim)}
	case *ast.HTMLBlock:
		var out []string
		lines := n.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			out = append(out, strings.TrimRight(string(seg.Value(r.src)), "\n"))
		}
		return out
	}
	// A block this renderer does not know: its text, as it was written.
	return strings.Split(r.inline(n, nil), "\n")
}

func (r *mdTerminal) list(l *ast.List) []string {
	var out []string
	number := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = strconv.Itoa(number) + ". "
			number++
		}
		if len(out) > 0 && !l.IsTight {
			out = append(out, "")
		}
		indent := strings.Repeat(" ", textWidth(marker))
		for i, line := range r.blocks(item) {
			switch {
			case i == 0:
				out = append(out, r.style(marker, nil, sgrDim)+line)
			case line == "":
				out = append(out, "")
			default:
				out = append(out, indent+line)
			}
		}
	}
	return out
}

// inline renders the inline children of n into one string, its line
// breaks kept; outer are the SGR codes of the block around them.
func (r *mdTerminal) inline(n ast.Node, outer []string) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inlineNode(&b, c, outer)
	}
	return b.String()
}

func (r *mdTerminal) inlineNode(b *strings.Builder, n ast.Node, outer []string) {
	switch n := n.(type) {
	case *ast.Text:
		b.Write(n.Value(r.src))
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.WriteByte('\n')
		}
	case *ast.String:
		b.Write(n.Value)
	case *ast.CodeSpan:
		code := r.inline(n, outer)
		if r.color {
			b.WriteString(r.style(code, outer, sgrYellow))
		} else {
			b.WriteString("`" + code + "`")
		}
	case *ast.Emphasis:
		code := sgrItalic
		if n.Level >= 2 {
			code = sgrBold
		}
		b.WriteString(r.style(r.inline(n, append(outer[:len(outer):len(outer)], code)), outer, code))
	case *ast.Link:
		label := r.inline(n, outer)
		b.WriteString(r.style(label, outer, sgrUnderline, sgrBlue))
		if dest := string(n.Destination); dest != "" && dest != label {
			b.WriteString(" (" + r.style(dest, outer, sgrDim) + ")")
		}
	case *ast.AutoLink:
		b.WriteString(r.style(string(n.URL(r.src)), outer, sgrUnderline, sgrBlue))
	case *ast.Image:
		b.WriteString("[image: " + r.inline(n, outer) + "] (" + string(n.Destination) + ")")
	case *ast.RawHTML:
		segs := n.Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			b.Write(seg.Value(r.src))
		}
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.inlineNode(b, c, outer)
		}
	}
}
