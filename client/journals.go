package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
)

// entryPageLimit is the page size Entries, LogEntries and FollowLog ask
// for: the daemon's largest, which still ends a page of large records
// early.
const entryPageLimit = 1000

// DefaultFollowPoll is how often FollowLog asks for new records once it has
// read the whole log, when its poll is 0.
const DefaultFollowPoll = 200 * time.Millisecond

// Journals lists every journal the daemon's log holds, with its record
// count, ordered by owner and execution id (GET /v1/journals).
func (c *Client) Journals(ctx context.Context) ([]eventstore.Reference, error) {
	var out wire.Journals
	if err := c.do(ctx, http.MethodGet, "/v1/journals", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Journals, nil
}

// Journal returns the reference of execution id's journal, with its record
// count (GET /v1/journals/{id}). An unknown id is ErrNotFound.
func (c *Client) Journal(ctx context.Context, id string) (eventstore.Reference, error) {
	var ref eventstore.Reference
	err := c.do(ctx, http.MethodGet, journalPath(id, ""), nil, nil, &ref)
	return ref, err
}

// Entries yields execution id's journal from sequence fromSeq (1 when 0),
// oldest first, with each record's log offset, asking the daemon a page at
// a time (GET /v1/journals/{id}/entries) until the journal's last record.
// A stored record that does not decode, at the daemon or here, is yielded
// as an *eventstore.OffsetError, its offset in the entry too, and reading
// goes on after it; any other error ends it (ErrNotFound for an unknown
// id, ErrDamaged for a journal that lacks records). Stop early by breaking
// out of the loop.
func (c *Client) Entries(ctx context.Context, id string, fromSeq uint64) iter.Seq2[LogEntry, error] {
	return c.pages(ctx, journalPath(id, "/entries"), "fromSeq", fromSeq, "the daemon's page of "+id+" from sequence")
}

// LogEntries yields every journal's records in log order from fromOffset
// (1 when 0), asking the daemon a page at a time (GET /v1/log) until the
// end of the log. A stored record that does not decode is yielded as an
// *eventstore.OffsetError and reading goes on after it; any other error
// ends it.
func (c *Client) LogEntries(ctx context.Context, fromOffset uint64) iter.Seq2[LogEntry, error] {
	return c.pages(ctx, "/v1/log", "fromOffset", fromOffset, "the daemon's page of the log from offset")
}

// pages yields the entries of path page by page, from the cursor param
// at from (1 when 0) until a page names no next one. what words a page
// whose next cursor does not move on.
func (c *Client) pages(ctx context.Context, path, param string, from uint64, what string) iter.Seq2[LogEntry, error] {
	return func(yield func(LogEntry, error) bool) {
		from := max(from, 1)
		for {
			page, next, err := c.entryPage(ctx, path, param, from)
			if err != nil {
				yield(LogEntry{}, err)
				return
			}
			for _, raw := range page {
				if !yield(DecodeEntry(raw)) {
					return
				}
			}
			if next == 0 {
				return
			}
			if next <= from {
				yield(LogEntry{}, fmt.Errorf("%s %d names %d as the next one", what, from, next))
				return
			}
			from = next
		}
	}
}

// FollowLog yields the log from fromOffset (1 when 0) in batches, as
// LogEntries reads it, and then the records appended after, asking the
// daemon for them every poll (DefaultFollowPoll when 0), until ctx ends,
// which ends it without an error. A stored record that does not decode is
// yielded as an *eventstore.OffsetError after the batch of the records
// before it, and following goes on after it; any other error ends it
// (the daemon went away, say).
func (c *Client) FollowLog(ctx context.Context, fromOffset uint64, poll time.Duration) iter.Seq2[[]LogEntry, error] {
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	return func(yield func([]LogEntry, error) bool) {
		from := max(fromOffset, 1)
		for {
			page, next, err := c.entryPage(ctx, "/v1/log", "fromOffset", from)
			if err != nil {
				if ctx.Err() == nil {
					yield(nil, err)
				}
				return
			}
			var batch []LogEntry
			for _, raw := range page {
				e, err := DecodeEntry(raw)
				if err == nil {
					batch = append(batch, e)
					continue
				}
				// The records before it come first, in log order.
				if len(batch) > 0 && !yield(batch, nil) {
					return
				}
				batch = nil
				if !yield(nil, err) {
					return
				}
			}
			if len(batch) > 0 && !yield(batch, nil) {
				return
			}
			if next > 0 && next <= from {
				yield(nil, fmt.Errorf("the daemon's page of the log from offset %d names %d as the next one", from, next))
				return
			}
			if next > 0 {
				from = next
				continue // more now
			}
			if len(page) > 0 {
				from = page[len(page)-1].Offset + 1
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
		}
	}
}

// ImportJournal sends a journal file, one record per line as 'agentjournal
// journal export' writes it, to the daemon's log (POST /v1/journals). The
// daemon checks every line first and writes the records in one atomic
// write, keeping their ids, times and sequences. A journal stored with the
// same records already is left as it is (Written 0). A bad file is
// ErrInvalidField, the message naming the lines; a journal stored with
// other records is ErrConflict; a file over the daemon's import limit is
// ErrTooLarge, the message saying the limit. Nothing is written then.
func (c *Client) ImportJournal(ctx context.Context, file io.Reader) (ImportResult, error) {
	resp, err := c.Request(ctx, http.MethodPost, "/v1/journals", nil, file, http.Header{"Content-Type": {"application/x-ndjson"}})
	if err != nil {
		return ImportResult{}, err
	}
	defer resp.Body.Close()
	var out ImportResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ImportResult{}, fmt.Errorf("read the answer to POST /v1/journals: %w", err)
	}
	return out, nil
}

// entryPage reads one page of entries of path from the cursor named
// fromName; next is the cursor of the following page, 0 at the end.
func (c *Client) entryPage(ctx context.Context, path, fromName string, from uint64) ([]wire.PageEntry, uint64, error) {
	var out wire.Entries
	if err := c.do(ctx, http.MethodGet, path, pageQuery(fromName, from, entryPageLimit), nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Entries, deref(out.Next), nil
}

func journalPath(id, rest string) string {
	return "/v1/journals/" + url.PathEscape(id) + rest
}
