package lineage

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Formats the graph is written in.
const (
	FormatJSON = "json"
	FormatDOT  = "dot"
)

// Formats lists the accepted export formats.
var Formats = []string{FormatJSON, FormatDOT}

// nodeShape draws each kind of node as Graphviz users expect: runs as
// boxes, tool calls as diamonds, resources as folders, snapshots as
// cylinders (storage).
var nodeShape = map[NodeKind]string{
	NodeAgent:    "ellipse",
	NodeRun:      "box",
	NodeEvent:    "oval",
	NodeToolCall: "diamond",
	NodeResource: "folder",
	NodeSnapshot: "cylinder",
}

// WriteDOT writes the graph in Graphviz's DOT language: a digraph whose
// node ids are the graph's, each labelled, and whose edges are labelled
// with their kind (and RUN_HAS_EVENT with its sequence). Every string is
// quoted, so ids holding any character are safe.
func WriteDOT(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "digraph agentjournal {")
	fmt.Fprintln(bw, "  rankdir=LR;")
	fmt.Fprintln(bw, `  node [fontname="Helvetica", fontsize=10];`)
	fmt.Fprintln(bw, `  edge [fontname="Helvetica", fontsize=8];`)
	for _, n := range g.Nodes {
		label := n.Label
		if n.Kind == NodeEvent && n.EventKind != "" {
			label += `\n` + string(n.EventKind)
		}
		style := ""
		if n.External {
			style = `, style=dashed`
		}
		fmt.Fprintf(bw, "  %s [label=%s, shape=%s, tooltip=%s%s];\n", quote(n.ID), quoteLabel(label), nodeShape[n.Kind], quote(string(n.Kind)+" "+n.ID), style)
	}
	for _, e := range g.Edges {
		label := string(e.Kind)
		if e.Kind == RunHasEvent {
			label = fmt.Sprintf("%s %d", e.Kind, e.Seq)
		}
		fmt.Fprintf(bw, "  %s -> %s [label=%s];\n", quote(e.From), quote(e.To), quote(label))
	}
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

// quote makes s a DOT quoted string: only `"` needs escaping there, and a
// backslash is escaped too so that it stays literal; newlines become
// escapes so a statement stays on its line.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", ``)
	return `"` + r.Replace(s) + `"`
}

// quoteLabel quotes a label whose `\n` are meant as line breaks.
func quoteLabel(s string) string {
	parts := strings.Split(s, `\n`)
	for i, p := range parts {
		q := quote(p)
		parts[i] = q[1 : len(q)-1]
	}
	return `"` + strings.Join(parts, `\n`) + `"`
}
