package benchkit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteText writes reports as one text report: the host line once, then a
// section per report. A section is the suite's title line, its set-up
// lines and configuration, a table with one row per result, the targets
// with their verdicts, what each result timed, and the notes. The table
// leaves out the columns no result uses.
func WriteText(w io.Writer, reps ...Report) error {
	var b strings.Builder
	if len(reps) > 0 {
		fmt.Fprintf(&b, "host: %s\n", reps[0].Host)
	}
	for _, r := range reps {
		b.WriteByte('\n')
		r.writeSection(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r Report) writeSection(b *strings.Builder) {
	fmt.Fprintf(b, "[%s] %s; the run took %s\n", r.Suite, r.Title, r.Elapsed.Round(100*time.Millisecond))
	for _, line := range r.Setup {
		fmt.Fprintf(b, "%s\n", line)
	}
	if len(r.Config) > 0 {
		settings := make([]string, len(r.Config))
		for i, s := range r.Config {
			settings[i] = s.Name + "=" + formatSetting(s.Value)
		}
		fmt.Fprintf(b, "config: %s\n", strings.Join(settings, " "))
	}
	b.WriteByte('\n')
	r.writeResults(b)

	var targets [][]string
	for _, res := range r.Results {
		for _, c := range res.Checks {
			targets = append(targets, []string{"  " + res.Name, c.Metric, FormatValue(c.Value, c.Unit), c.Bound(), c.Verdict()})
		}
	}
	if len(targets) > 0 {
		b.WriteString("\ntargets:\n")
		WriteTable(b, targets, 1, 4)
	}

	var names, methods []string
	for _, res := range r.Results {
		if res.Method != "" {
			names, methods = append(names, res.Name), append(methods, res.Method)
		}
	}
	if len(names) > 0 {
		b.WriteString("\nwhat was timed:\n")
		WriteNotes(b, names, methods)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(b, "  %s\n", n)
		}
	}
}

// column is one column of the results table.
type column struct {
	head string
	// left aligns the column left: it holds words.
	left bool
	cell func(Result) string
}

// writeResults writes the table of results, without the columns that no
// result has a value in.
func (r Report) writeResults(b *strings.Builder) {
	cols := []column{
		{head: "NAME", left: true, cell: func(res Result) string { return res.Name }},
		{head: "COUNT", cell: func(res Result) string { return nonZero(res.Count != 0, strconv.Itoa(res.Count)) }},
		{head: "ELAPSED", cell: func(res Result) string { return nonZero(res.Elapsed != 0, FormatDuration(res.Elapsed)) }},
		{head: "RATE", cell: func(res Result) string { return nonZero(res.Rate != 0, FormatValue(res.Rate, "")) }},
		{head: "UNIT", left: true, cell: func(res Result) string { return nonZero(res.Rate != 0, res.RateUnit) }},
		{head: "P50", cell: func(res Result) string { return nonZero(res.P50 != 0, FormatDuration(res.P50)) }},
		{head: "P99", cell: func(res Result) string { return nonZero(res.P99 != 0, FormatDuration(res.P99)) }},
		{head: "RATIO", left: true, cell: func(res Result) string {
			return nonZero(res.Baseline != "", FormatValue(res.Ratio, "x")+" "+res.Baseline)
		}},
	}
	// The figures' columns keep every result's order: a figure first met
	// in a later result goes before the next figure of that result that
	// has a column already, or last.
	var figures []string
	for _, res := range r.Results {
		for k, f := range res.Figures {
			if slices.Contains(figures, f.Name) {
				continue
			}
			at := len(figures)
			for _, next := range res.Figures[k+1:] {
				if i := slices.Index(figures, next.Name); i >= 0 {
					at = i
					break
				}
			}
			figures = slices.Insert(figures, at, f.Name)
		}
	}
	for _, name := range figures {
		cols = append(cols, column{head: strings.ToUpper(name), cell: func(res Result) string {
			i := slices.IndexFunc(res.Figures, func(f Figure) bool { return f.Name == name })
			if i < 0 {
				return ""
			}
			return FormatValue(res.Figures[i].Value, res.Figures[i].Unit)
		}})
	}
	cols = append(cols, column{head: "RESULT", left: true, cell: Result.Verdict})

	rows := make([][]string, len(r.Results)+1)
	var left []int
	for _, c := range cols {
		cells := make([]string, len(r.Results))
		used := false
		for i, res := range r.Results {
			cells[i] = c.cell(res)
			used = used || cells[i] != ""
		}
		if !used {
			continue
		}
		if c.left && len(rows[0]) > 0 {
			left = append(left, len(rows[0]))
		}
		rows[0] = append(rows[0], c.head)
		for i, cell := range cells {
			if cell == "" {
				cell = "-"
			}
			rows[i+1] = append(rows[i+1], cell)
		}
	}
	WriteTable(b, rows, left...)
}

// nonZero is s when the result has the figure, "" when it has not.
func nonZero(there bool, s string) string {
	if !there {
		return ""
	}
	return s
}

// WriteProgress writes one line on a result as soon as it is measured, to
// w when it is not nil. Progress is informational: a failing writer does
// not stop a run.
func WriteProgress(w io.Writer, res Result) {
	if w == nil {
		return
	}
	parts := []string{fmt.Sprintf("%d in %s", res.Count, FormatDuration(res.Elapsed))}
	if res.Rate != 0 {
		parts = append(parts, FormatValue(res.Rate, "")+" "+res.RateUnit)
	}
	if res.P99 != 0 {
		parts = append(parts, "p50 "+FormatDuration(res.P50)+", p99 "+FormatDuration(res.P99))
	}
	// A suite that measures the baseline later leaves the ratio 0 until
	// its report: a line then names no ratio rather than a false one.
	if res.Baseline != "" && res.Ratio != 0 {
		parts = append(parts, FormatValue(res.Ratio, "x")+" "+res.Baseline)
	}
	for _, f := range res.Figures {
		parts = append(parts, f.Name+" "+FormatValue(f.Value, f.Unit))
	}
	for _, c := range res.Checks {
		parts = append(parts, fmt.Sprintf("%s %s (target %s) %s", c.Metric, FormatValue(c.Value, c.Unit), c.Bound(), c.Verdict()))
	}
	fmt.Fprintf(w, "%s: %s\n", res.Name, strings.Join(parts, ", "))
}
