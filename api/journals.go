package api

import (
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
)

const (
	// DefaultMaxImportBody bounds the journal file of an import when
	// Config.MaxImportBody is 0.
	DefaultMaxImportBody = 64 << 20
	// maxPageBytes ends a page of entries early, after the entry that
	// takes it past this size: a page of large records stays a few MiB
	// whatever its limit.
	maxPageBytes = 4 << 20
)

// listJournals: GET /v1/journals, every journal the log holds, with its
// record count.
func (s *Server) listJournals(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	refs, err := s.cfg.Store.Journals(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Journals{Journals: orEmpty(refs)})
	return nil
}

// readJournal: GET /v1/journals/{id}, the reference of the journal of
// execution id, with its record count. An unknown one is 404 in the
// store's words, as the CLI prints them without a daemon.
func (s *Server) readJournal(w http.ResponseWriter, r *http.Request) error {
	return readByID(w, r, s.cfg.Store.Lookup)
}

// journalEntries: GET /v1/journals/{id}/entries?fromSeq=&limit=, the
// journal's records with their log offsets, oldest first. A stored record
// that does not decode is an entry with its offset and error instead of a
// record, and holds its sequence. next is the fromSeq of the following
// page; null when the journal has no more records now.
func (s *Server) journalEntries(w http.ResponseWriter, r *http.Request) error {
	from, limit, err := pageQuery(r, "fromSeq")
	if err != nil {
		return err
	}
	ref, err := s.cfg.Store.Lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	entries, more, err := readPage(s.cfg.Store.ReadJournal(r.Context(), ref, from), limit)
	if err != nil {
		return err
	}
	var next uint64
	if more {
		// Every entry holds one sequence, a record that does not decode
		// too.
		next = from + uint64(len(entries))
	}
	writeEntries(w, entries, next)
	return nil
}

// readPage reads up to limit entries, and fewer once they pass
// maxPageBytes, and says whether the read has more. A record that does not
// decode is an entry with its error. Another error ends the page before
// it, so that the next page is the one that answers it; an error before
// any entry is the answer.
func readPage(entries iter.Seq2[eventstore.Entry, error], limit uint64) (page []wire.PageEntry, more bool, err error) {
	page = []wire.PageEntry{}
	size := 0
	for e, err := range entries {
		var oe *eventstore.OffsetError
		entry := wire.PageEntry{Offset: e.Offset}
		switch {
		case errors.As(err, &oe):
			entry.Offset, entry.Error = oe.Offset, oe.Err.Error()
		case err != nil && len(page) > 0:
			return page, true, nil
		case err != nil:
			return nil, false, err
		default:
			data, err := eventstore.Encode(e.Record)
			if err != nil {
				return nil, false, fmt.Errorf("encode the record at offset %d: %w", e.Offset, err)
			}
			entry.Record, entry.Summary = data, eventstore.Summary(e.Record)
		}
		if uint64(len(page)) == limit || (len(page) > 0 && size+len(entry.Record)+len(entry.Error) > maxPageBytes) {
			return page, true, nil
		}
		size += len(entry.Record) + len(entry.Error)
		page = append(page, entry)
	}
	return page, false, nil
}

// writeEntries answers a page of entries and the cursor of the next one.
func writeEntries(w http.ResponseWriter, entries []wire.PageEntry, next uint64) {
	writeJSON(w, http.StatusOK, wire.Entries{Entries: entries, Next: cursor(next)})
}

// importJournal: POST /v1/journals, a journal file (JSONL, as 'journal
// export' writes it) as the body. Every line is checked before anything is
// written, and the records are written in one atomic write. A journal
// already stored with the same records is 200 with written 0; one that
// holds the first records of the file gets the rest (201); one with other
// records is refused 409.
func (s *Server) importJournal(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	store, ok := s.cfg.Store.(journalfile.Store)
	if !ok {
		return &apiError{status: http.StatusNotImplemented, code: wire.CodeInternal, message: "this daemon's journal store cannot import journals"}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxImportBody)
	records, err := journalfile.Read(r.Body)
	var tooBig *http.MaxBytesError
	var bad *journalfile.Error
	switch {
	case errors.As(err, &tooBig):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: wire.CodeTooLarge,
			message: fmt.Sprintf("the journal file is larger than %d bytes, the most this daemon takes in one import; nothing was imported "+
				"(stop the daemon and run 'agentjournal journal import FILE', which writes to the data directory itself)", tooBig.Limit)}
	case errors.As(err, &bad), errors.Is(err, journalfile.ErrEmpty):
		return invalidField("(body)", nil, "the journal file was refused, nothing was imported: %v", err)
	case err != nil:
		return err
	}
	if err := s.refuseDamaged(records[0].RecordBase().AgentExecutionID); err != nil {
		return err
	}
	// An import that the client abandons is atomic too: the log takes all
	// of it or nothing.
	res, err := journalfile.Import(r.Context(), store, records)
	switch {
	case errors.Is(err, journalfile.ErrDifferentJournal), errors.Is(err, eventstore.ErrConflict):
		return conflict("%v", err)
	case errors.Is(err, eventstore.ErrBatchTooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: wire.CodeTooLarge, message: err.Error()}
	case err != nil:
		return err
	}
	status := http.StatusCreated
	if res.Written == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, wire.ImportResult{Journal: res.Reference, Records: res.Records, Written: res.Written})
	return nil
}
