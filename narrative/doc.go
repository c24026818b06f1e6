// Package narrative turns execution journals into a narrative document:
// what was requested, what ran, which approvals and pauses happened, which
// artifacts and todos were produced, what interrupted a run and why it
// ended as it did. It reads records only (through a small source, so a
// store and an exported journal file read alike) and renders the result as
// Markdown, self-contained HTML or JSON. It owns neither the records nor
// their storage.
//
// Every line names the record it stands on by its event id, execution id
// and sequence. Lines copied from a record are marked observed; lines
// derived from several records (a blocked period, the tool calls of a
// turn) are marked inferred and name the records they span.
package narrative
