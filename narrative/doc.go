// Package narrative turns execution journals into a narrative document:
// what was requested, what ran, which approvals and pauses happened, which
// artifacts and todos were produced, what interrupted a run and why it
// ended as it did. It reads records only (through a small source, so a
// store and an exported journal file read alike) and renders the result as
// Markdown, self-contained HTML or JSON. It owns neither the records nor
// their storage.
//
// Markdown and HTML tell a run as a story, turn by turn (Story): what was
// asked, the tool calls grouped by what they did, the agent's messages as
// Markdown, the waits and who answered, the tokens of each turn, and how
// the run ended, each turn naming the records it spans once. Token totals
// are folded by execution.Usage, the rule the execution's state uses.
//
// The line form (Run.Lines; AuditMarkdown, AuditHTML and JSON) names on
// every line the record it stands on by its event id, execution id and
// sequence. Lines copied from a record are marked observed; lines derived
// from several records (a blocked period, the tool calls of a turn) are
// marked inferred and name the records they span.
package narrative
