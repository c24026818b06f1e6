package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
)

// RecordsReader reads a journal's records without their log offsets, which
// a replay does not need: on JetStream that needs no consumer, whose set-up
// costs as much as reading a couple of hundred records. Both stores
// implement it.
type RecordsReader interface {
	// ReadRecords returns the journal's records from sequence 1 up to the
	// bound (its head when 0), in order. A journal the store does not hold
	// is ErrJournalNotFound; a record that does not decode, or a hole in
	// the sequence, is an error: a replay that needs to say where reads
	// with ReadJournal instead.
	ReadRecords(ctx context.Context, b JournalBound) ([]Record, error)
}

var (
	_ RecordsReader = (*JetStreamStore)(nil)
	_ RecordsReader = (*FileStore)(nil)
)

// recordsPage bounds one batch request; a longer journal is read page by
// page, each page from the log offset after the last one read. A variable
// so that a test can make pages short.
var recordsPage = 10000

// ReadRecords implements RecordsReader with batched direct gets of the
// journal's subject without headers. A replicated stream reads through
// ReadJournals instead: a direct get is answered by any replica, which may
// lag what the leader acknowledged.
func (s *JetStreamStore) ReadRecords(ctx context.Context, b JournalBound) ([]Record, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.replicated() {
		return collectRecords(s.ReadJournals(ctx, []JournalBound{b}))
	}
	ref, subj, err := s.resolve(b.Ref)
	if err != nil {
		return nil, err
	}
	nc := s.js.Conn()
	var out []Record
	start := uint64(1)
	for {
		want := recordsPage
		if b.To > 0 {
			want = int(min(uint64(recordsPage), b.To-uint64(len(out))))
		}
		next, done, err := s.recordsPage(ctx, nc, ref, subj, start, want, &out)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		if done || (b.To > 0 && uint64(len(out)) >= b.To) {
			break
		}
		start = next
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read %s: %w", ref, ErrJournalNotFound)
	}
	return out, nil
}

// recordsPage reads up to n records of subj from log offset start into
// out, and says where the next page starts and whether the journal has no
// more.
func (s *JetStreamStore) recordsPage(ctx context.Context, nc *nats.Conn, ref Reference, subj string, start uint64, n int, out *[]Record) (next uint64, done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	inbox := nc.NewRespInbox()
	// Room for the whole page and its end: a full channel drops messages.
	msgs := make(chan *nats.Msg, n+1)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return 0, false, err
	}
	defer sub.Unsubscribe()
	req := fmt.Appendf(nil, `{"seq":%d,"next_by_subj":%q,"batch":%d,"no_hdr":true}`, start, subj, n)
	if err := nc.PublishRequest(s.apiPrefix+"DIRECT.GET."+s.cfg.Stream, inbox, req); err != nil {
		return 0, false, err
	}
	for {
		var m *nats.Msg
		select {
		case m = <-msgs:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
		if len(m.Data) > 0 {
			r, err := Decode(m.Data)
			if err != nil {
				return 0, false, err
			}
			if want := uint64(len(*out)) + 1; r.RecordBase().Sequence != want {
				return 0, false, &GapError{Journal: ref.JournalID, AgentExecutionID: ref.AgentExecutionID, From: want, To: max(r.RecordBase().Sequence, want+1) - 1}
			}
			*out = append(*out, r)
			continue
		}
		switch status := m.Header.Get("Status"); status {
		case "404":
			// Nothing at or after start.
			return 0, true, nil
		case "204":
			pending, err1 := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
			last, err2 := strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return 0, false, fmt.Errorf("end of a batch without its counts: %w", err)
			}
			return last + 1, pending == 0, nil
		default:
			return 0, false, fmt.Errorf("direct get answered %s %s", status, m.Header.Get("Description"))
		}
	}
}

// ReadRecords implements RecordsReader.
func (s *FileStore) ReadRecords(ctx context.Context, b JournalBound) ([]Record, error) {
	return collectRecords(s.ReadJournals(ctx, []JournalBound{b}))
}

func collectRecords(entries func(yield func(Entry, error) bool)) ([]Record, error) {
	var out []Record
	for e, err := range entries {
		if err != nil {
			return nil, err
		}
		out = append(out, e.Record)
	}
	return out, nil
}
