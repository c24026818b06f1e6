package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

const (
	// defaultPage is the page size of records and the log when none is given.
	defaultPage = 100
	// maxPage is the largest page of records and the log.
	maxPage = 1000
)

// timeline: GET /v1/executions/{id}/timeline?before=&limit=&all=, newest
// first. next is the before of the following, older page; null on the last
// page. The decisions that change nothing (execution.TimelineItem.Quiet)
// are left out unless all=true.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "before", "limit", "all"); err != nil {
		return err
	}
	before, err := uintParam(r, "before", 0, 0, math.MaxUint64)
	if err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", projections.DefaultTimelineLimit, 1, projections.MaxTimelineLimit)
	if err != nil {
		return err
	}
	all, err := boolParam(r, "all")
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	var items []execution.TimelineItem
	var next uint64
	err = s.projected(r.Context(), id, func() (err error) {
		items, next, err = s.cfg.Views.QueryTimeline(id, projections.TimelineQuery{Before: before, Limit: int(limit), All: all})
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.Timeline{Items: items, Next: cursor(next)})
	return nil
}

// boolParam reads an optional true/false query parameter; false when
// absent.
func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, invalidField(name, []string{"true", "false"}, "%q is not accepted", v)
	}
}

// cursor is a paging cursor, nil (null) for none.
func cursor(v uint64) *uint64 {
	if v == 0 {
		return nil
	}
	return &v
}

// pageQuery reads a page's query, and nothing else: its cursor (a
// sequence or an offset, 1 by default) and its limit.
func pageQuery(r *http.Request, cursor string) (from, limit uint64, err error) {
	if err := checkQuery(r, cursor, "limit"); err != nil {
		return 0, 0, err
	}
	if from, err = uintParam(r, cursor, 1, 1, math.MaxUint64); err != nil {
		return 0, 0, err
	}
	limit, err = uintParam(r, "limit", defaultPage, 1, maxPage)
	return from, limit, err
}

// records: GET /v1/executions/{id}/records?fromSeq=&limit=, the journal's
// records as stored, oldest first. next is the fromSeq of the following
// page; null when the journal has no more records now.
func (s *Server) records(w http.ResponseWriter, r *http.Request) error {
	from, limit, err := pageQuery(r, "fromSeq")
	if err != nil {
		return err
	}
	ref, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	records := []json.RawMessage{}
	var next uint64
	for e, err := range s.cfg.Store.ReadJournal(r.Context(), ref, from) {
		if err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		if uint64(len(records)) == limit {
			next = e.Record.RecordBase().Sequence
			break
		}
		data, err := json.Marshal(e.Record)
		if err != nil {
			return fmt.Errorf("encode record %s: %w", e.Record.RecordBase().RecordID, err)
		}
		records = append(records, data)
	}
	writeJSON(w, http.StatusOK, wire.Records{Records: records, Next: cursor(next)})
	return nil
}

// readLog: GET /v1/log?fromOffset=&limit=, every journal's records in log
// order. A stored record that does not decode is an entry with its offset
// and error instead of a record, so that a reader passes over it. next is
// the fromOffset of the following page; null when the log has no more
// records now.
func (s *Server) readLog(w http.ResponseWriter, r *http.Request) error {
	from, limit, err := pageQuery(r, "fromOffset")
	if err != nil {
		return err
	}
	entries, more, err := readPage(s.cfg.Store.ReadLog(r.Context(), from), limit)
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	var next uint64
	if more {
		next = entries[len(entries)-1].Offset + 1
	}
	writeEntries(w, entries, next)
	return nil
}

// replay: GET /v1/executions/{id}/replay?toSeq=&limit=, the state as of
// journal sequence toSeq (the whole journal when absent), replayed from
// the journal itself rather than read from the projection, and the last
// limit records up to there.
func (s *Server) replay(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "toSeq", "limit"); err != nil {
		return err
	}
	to, err := uintParam(r, "toSeq", math.MaxUint64, 1, math.MaxUint64)
	if err != nil {
		return err
	}
	limit, err := uintParam(r, "limit", defaultPage, 0, maxPage)
	if err != nil {
		return err
	}
	ref, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	var recs []eventstore.Record
	var offsets []uint64
	for e, err := range s.cfg.Store.ReadJournal(r.Context(), ref, 1) {
		if err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		if e.Record.RecordBase().Sequence > to {
			break
		}
		recs = append(recs, e.Record)
		offsets = append(offsets, e.Offset)
	}
	// A fork's state holds its parent's prefix, read through its link.
	st, err := execution.ReplayLineageTo(r.Context(), s.cfg.Store, ref, to)
	if err != nil {
		return fmt.Errorf("replay %s: %w", ref, err)
	}
	entries := []wire.LogEntry{}
	for i := max(0, len(recs)-int(limit)); i < len(recs); i++ {
		data, err := json.Marshal(recs[i])
		if err != nil {
			return fmt.Errorf("encode record %s: %w", recs[i].RecordBase().RecordID, err)
		}
		entries = append(entries, wire.LogEntry{Offset: offsets[i], Record: data, Summary: eventstore.Summary(recs[i])})
	}
	writeJSON(w, http.StatusOK, wire.Replay{ToSeq: st.Journal.LastSequence, State: st, Records: entries})
	return nil
}
