package wire

import (
	"encoding/json"

	"github.com/agentjournal/agentjournal/eventstore"
)

// LogEntry is a record in its stored form (docs/records.md, for
// eventstore.Decode) with its log offset.
type LogEntry struct {
	Offset uint64          `json:"offset"`
	Record json.RawMessage `json:"record"`
	// Summary is the record told in one line for a person
	// (eventstore.Summary), as journal cat prints it.
	Summary string `json:"summary,omitempty"`
}

// PageEntry is one entry of a page of the log or of a journal: a record
// with its log offset, or, for a stored record that does not decode, the
// offset and why instead of the record, so that a reader passes over it.
type PageEntry struct {
	Offset uint64          `json:"offset"`
	Record json.RawMessage `json:"record,omitempty"`
	// Summary is the record told in one line for a person
	// (eventstore.Summary); none for an entry that does not decode.
	Summary string `json:"summary,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Entries answers GET /v1/log and GET /v1/journals/{id}/entries: a page of
// entries, oldest first.
type Entries struct {
	Entries []PageEntry `json:"entries"`
	// Next is where the following page starts (an offset of the log, a
	// sequence of a journal); nil (null) when there are no more records
	// now.
	Next *uint64 `json:"next"`
}

// Journals answers GET /v1/journals: every journal the log holds, with its
// record count, by owner and execution id.
type Journals struct {
	Journals []eventstore.Reference `json:"journals"`
}

// ImportResult answers POST /v1/journals.
type ImportResult struct {
	// Journal is the imported journal's reference.
	Journal eventstore.Reference `json:"journal"`
	// Records is how many records the file holds.
	Records int `json:"records"`
	// Written is how many of them the import wrote: 0 when the journal
	// was stored already, fewer than Records when the log held the first
	// ones (an interrupted import).
	Written int `json:"written"`
}

// RebuildProgress is one line of the NDJSON answer to POST
// /v1/projections/rebuild: records done of total after each transaction of
// the build, then a last line with the number of executions, or the error
// that stopped the rebuild.
type RebuildProgress struct {
	// Done is how many log records the new file holds; Total is how many
	// it is built up to.
	Done  uint64 `json:"done"`
	Total uint64 `json:"total"`
	// Executions is set on the last line of a rebuild that swapped its
	// file in.
	Executions *int `json:"executions,omitempty"`
	// Error is set on the last line of a rebuild that failed after it
	// began answering; the live read model is then unchanged.
	Error *ErrorDetail `json:"error,omitempty"`
}
