package integrity

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Span is a run of missing numbers, First to Last inclusive: journal
// sequences in a journal's finding, log offsets in the log's.
type Span struct{ First, Last uint64 }

// Finding is one damaged journal, or the log as a whole when
// AgentExecutionID is empty: what is missing and how it was seen.
type Finding struct {
	AgentExecutionID string
	JournalID        string
	// Missing are the journal sequences (the log offsets, for the log)
	// known to be lost, when they are known.
	Missing []Span
	// Why says how each part was seen, in words.
	Why []string
}

// maxSpansSaid bounds the spans a finding's text lists.
const maxSpansSaid = 8

// String says what is missing and what to do.
func (f Finding) String() string {
	var b strings.Builder
	if f.AgentExecutionID == "" {
		b.WriteString("the log")
		if len(f.Missing) > 0 {
			b.WriteString(" lacks offsets " + spans(f.Missing))
		}
	} else {
		b.WriteString("execution " + f.AgentExecutionID)
		if len(f.Missing) > 0 {
			b.WriteString(" lacks sequences " + spans(f.Missing))
		} else {
			b.WriteString(" is damaged")
		}
	}
	if len(f.Why) > 0 {
		b.WriteString(" (" + strings.Join(f.Why, "; ") + ")")
	}
	if f.AgentExecutionID == "" {
		b.WriteString(": restore the journals that lost records from their exports; 'agentjournal journal verify' names them")
	} else {
		b.WriteString(": restore it from an export, or run 'agentjournal journal verify' for details")
	}
	return b.String()
}

// spans words spans as "3, 7 to 9", at most maxSpansSaid of them.
func spans(s []Span) string {
	var parts []string
	for i, sp := range s {
		if i == maxSpansSaid {
			parts = append(parts, fmt.Sprintf("and %d more runs", len(s)-i))
			break
		}
		if sp.First == sp.Last {
			parts = append(parts, fmt.Sprint(sp.First))
		} else {
			parts = append(parts, fmt.Sprintf("%d to %d", sp.First, sp.Last))
		}
	}
	return strings.Join(parts, ", ")
}

// Count is how many numbers the finding's spans name.
func (f Finding) Count() uint64 {
	var n uint64
	for _, s := range f.Missing {
		n += s.Last - s.First + 1
	}
	return n
}

// merge adds g's spans and reasons to f: the union of the spans, each
// reason once.
func (f *Finding) merge(g Finding) {
	f.JournalID = cmp.Or(f.JournalID, g.JournalID)
	f.Missing = union(append(slices.Clone(f.Missing), g.Missing...))
	for _, w := range g.Why {
		if !slices.Contains(f.Why, w) {
			f.Why = append(f.Why, w)
		}
	}
}

// union sorts spans and joins those that overlap or touch.
func union(s []Span) []Span {
	slices.SortFunc(s, func(a, b Span) int { return cmp.Compare(a.First, b.First) })
	var out []Span
	for _, sp := range s {
		if n := len(out); n > 0 && sp.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, sp.Last)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// findings gathers findings, one per execution (and one for the log).
type findings map[string]*Finding

func (fs findings) add(f Finding) {
	if have, ok := fs[f.AgentExecutionID]; ok {
		have.merge(f)
		return
	}
	f.Missing = union(slices.Clone(f.Missing))
	fs[f.AgentExecutionID] = &f
}

// list returns the findings sorted, the log's first.
func (fs findings) list() []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Finding) int { return cmp.Compare(a.AgentExecutionID, b.AgentExecutionID) })
	return out
}
