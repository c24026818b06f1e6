package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/journalfile"
)

// journalFile builds a journal of execution id, its header and n-1
// activity updates, in a file store, and returns its lines as a journal
// file holds them.
func journalFile(t *testing.T, id string, n int) []string {
	t.Helper()
	records := fixtures.ActivityJournal(t, "t-journals", id, n)
	var file bytes.Buffer
	if err := journalfile.Write(&file, records); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(file.String(), "\n"), "\n")
}

// markedLines are a journal file's lines as an import stores them: its
// header marked imported (journalfile.MarkImported).
func markedLines(t *testing.T, lines []string) []string {
	t.Helper()
	records, err := journalfile.Read(strings.NewReader(body(lines)))
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := journalfile.Write(&file, journalfile.MarkImported(records)); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(file.String(), "\n"), "\n")
}

func body(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// page is an answer of GET /v1/log or GET /v1/journals/{id}/entries.
type page struct {
	Entries []struct {
		Offset uint64          `json:"offset"`
		Record json.RawMessage `json:"record"`
		Error  string          `json:"error"`
	} `json:"entries"`
	Next *uint64 `json:"next"`
}

type importAnswer struct {
	Journal eventstore.Reference `json:"journal"`
	Records int                  `json:"records"`
	Written int                  `json:"written"`
}

// logBytes is the whole log as the store reads it, to tell that a refused
// request wrote nothing.
func (r *rig) logBytes(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for e, err := range r.store.ReadLog(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		data, err := eventstore.Encode(e.Record)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s\n", e.Offset, data)
	}
	return b.String()
}

// TestJournalRoutes: a journal imported whole is listed, looked up and
// read page by page, its records as the store encodes them with their log
// offsets; importing it again writes nothing, and a journal holding the
// first records of the file gets the rest.
func TestJournalRoutes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var list struct {
		Journals []eventstore.Reference `json:"journals"`
	}
	r.call(t, "GET", "/v1/journals", nil, http.StatusOK, &list)
	if list.Journals == nil || len(list.Journals) != 0 {
		t.Fatalf("GET /v1/journals on an empty log: %+v, want an empty list", list)
	}

	lines := journalFile(t, "ae-routes", 10)
	var first importAnswer
	r.call(t, "POST", "/v1/journals", body(lines), http.StatusCreated, &first)
	if first.Records != 10 || first.Written != 10 || first.Journal.AgentExecutionID != "ae-routes" || first.Journal.RecordCount != 10 {
		t.Fatalf("import: %+v, want 10 records written to ae-routes", first)
	}
	var again importAnswer
	r.call(t, "POST", "/v1/journals", body(lines), http.StatusOK, &again)
	if again.Written != 0 || again.Records != 10 {
		t.Fatalf("second import: %+v, want 200 with nothing written", again)
	}

	// A journal holding the first records, as an interrupted import left
	// it, gets the rest.
	other := journalFile(t, "ae-resumed", 6)
	r.call(t, "POST", "/v1/journals", body(other[:2]), http.StatusCreated, nil)
	var resumed importAnswer
	r.call(t, "POST", "/v1/journals", body(other), http.StatusCreated, &resumed)
	if resumed.Written != 4 || resumed.Records != 6 {
		t.Fatalf("import after a partial one: %+v, want the remaining 4 of 6 written", resumed)
	}

	want, err := r.store.Journals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.call(t, "GET", "/v1/journals", nil, http.StatusOK, &list)
	if diff := cmp.Diff(want, list.Journals); diff != "" {
		t.Errorf("GET /v1/journals differs from the store's journals (-store +answer):\n%s", diff)
	}
	var ref eventstore.Reference
	r.call(t, "GET", "/v1/journals/ae-routes", nil, http.StatusOK, &ref)
	if ref != first.Journal {
		t.Errorf("GET /v1/journals/ae-routes = %+v, want %+v", ref, first.Journal)
	}

	// Page by page, the records are the file's lines, byte for byte.
	var offsets []uint64
	for e, err := range r.store.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, e.Offset)
	}
	var got []string
	var gotOffsets []uint64
	from := uint64(1)
	for pages := 0; ; pages++ {
		var p page
		r.call(t, "GET", fmt.Sprintf("/v1/journals/ae-routes/entries?fromSeq=%d&limit=4", from), nil, http.StatusOK, &p)
		for _, e := range p.Entries {
			got = append(got, string(e.Record))
			gotOffsets = append(gotOffsets, e.Offset)
		}
		if p.Next == nil {
			if pages != 2 {
				t.Errorf("read 10 records 4 at a time in %d pages, want 3", pages+1)
			}
			break
		}
		if *p.Next != from+uint64(len(p.Entries)) {
			t.Fatalf("page from %d of %d entries names next %d", from, len(p.Entries), *p.Next)
		}
		from = *p.Next
	}
	if diff := cmp.Diff(markedLines(t, lines), got); diff != "" {
		t.Errorf("entries differ from the imported file, its header marked imported (-file +entries):\n%s", diff)
	}
	if !slices.Equal(offsets, gotOffsets) {
		t.Errorf("entry offsets %v, want the log's %v", gotOffsets, offsets)
	}
	var past page
	r.call(t, "GET", "/v1/journals/ae-routes/entries?fromSeq=11", nil, http.StatusOK, &past)
	if len(past.Entries) != 0 || past.Next != nil {
		t.Errorf("entries past the end: %+v, want none and no next", past)
	}
}

// TestJournalRoutesRefuseBadInput: every bad request is answered in the
// API's error shape, saying what is accepted, and writes nothing.
func TestJournalRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *api.Config) { c.MaxImportBody = 4096 })
	lines := journalFile(t, "ae-bad", 5)
	r.call(t, "POST", "/v1/journals", body(lines), http.StatusCreated, nil)
	before := r.logBytes(t)

	conflicting := slices.Clone(lines)
	conflicting[4] = strings.Replace(conflicting[4], `"recordId":"`, `"recordId":"x`, 1)
	broken := slices.Clone(lines)
	broken[2] = `{"recordId": "rec-1", `
	broken[3] = strings.Replace(broken[3], `"sequence":4`, `"sequence":7`, 1)
	big := journalFile(t, "ae-big", 40)

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, field              string
		says                     []string
	}{
		{"unknown id", "GET", "/v1/journals/ae-nosuch", "", 404, "not_found", "", []string{`"ae-nosuch"`}},
		{"unknown id's entries", "GET", "/v1/journals/ae-nosuch/entries", "", 404, "not_found", "", []string{`"ae-nosuch"`}},
		{"id longer than any id", "GET", "/v1/journals/" + strings.Repeat("x", 300), "", 404, "not_found", "", nil},
		{"id with a slash", "GET", "/v1/journals/" + url.PathEscape("../ae-bad"), "", 404, "not_found", "", nil},
		{"id with a NUL", "GET", "/v1/journals/ae%00bad/entries", "", 404, "not_found", "", nil},
		{"fromSeq 0", "GET", "/v1/journals/ae-bad/entries?fromSeq=0", "", 400, "invalid_field", "fromSeq", []string{"whole number from 1"}},
		{"fromSeq not a number", "GET", "/v1/journals/ae-bad/entries?fromSeq=ten", "", 400, "invalid_field", "fromSeq", []string{`"ten"`}},
		{"fromSeq negative", "GET", "/v1/journals/ae-bad/entries?fromSeq=-1", "", 400, "invalid_field", "fromSeq", nil},
		{"limit over the page", "GET", "/v1/journals/ae-bad/entries?limit=1001", "", 400, "invalid_field", "limit", []string{"1000"}},
		{"unknown parameter", "GET", "/v1/journals/ae-bad/entries?from=2", "", 400, "invalid_field", "from", []string{"fromSeq, limit"}},
		{"list takes no parameter", "GET", "/v1/journals?owner=Task", "", 400, "invalid_field", "owner", []string{"takes none"}},
		{"import takes no parameter", "POST", "/v1/journals?force=1", body(lines), 400, "invalid_field", "force", nil},
		{"empty file", "POST", "/v1/journals", "", 400, "invalid_field", "(body)", []string{"empty"}},
		{"malformed file", "POST", "/v1/journals", body(broken), 400, "invalid_field", "(body)",
			[]string{"nothing was imported", "line 3:", "not a JSON object", "line 4: has sequence 7, want 4"}},
		{"file over the limit", "POST", "/v1/journals", body(big), 413, "too_large", "", []string{"larger than 4096 bytes", "nothing was imported"}},
		{"a different journal is stored", "POST", "/v1/journals", body(conflicting), 409, "conflict", "",
			[]string{"already has a journal (5 records)", "differs at sequence 5", "nothing was written"}},
		{"wrong method", "DELETE", "/v1/journals/ae-bad", "", 405, "method_not_allowed", "", []string{"GET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b any
			if tc.body != "" {
				b = tc.body
			}
			e := r.fail(t, tc.method, tc.path, b, testToken, tc.status, tc.code, tc.field)
			for _, want := range tc.says {
				if !strings.Contains(e.Error.Message, want) {
					t.Errorf("message %q does not say %q", e.Error.Message, want)
				}
			}
		})
	}
	r.fail(t, "GET", "/v1/journals", nil, "", 401, "unauthorized", "")
	if after := r.logBytes(t); after != before {
		t.Errorf("refused requests changed the log:\n%s\nthen\n%s", before, after)
	}
}

// TestUndecodableRecordsArePassedOver: a stored record that does not
// decode is an entry with its offset and error, in the log and in its
// journal, not an error answer that would end the read there.
func TestUndecodableRecordsArePassedOver(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	lines := journalFile(t, "ae-foreign", 3)
	r.call(t, "POST", "/v1/journals", body(lines), http.StatusCreated, nil)
	ref := r.lookup(t, "ae-foreign")
	subj, err := ref.Subject("journal")
	if err != nil {
		t.Fatal(err)
	}
	// A foreign writer's record on the journal's subject, which holds the
	// journal's next sequence, and one on a subject of its own.
	js := r.bus.JetStream()
	bad, err := js.Publish(context.Background(), subj, []byte(`{"sequence":4,"type":"message.accepted","bogus":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), "journal.foreign.writer", []byte(`not json`)); err != nil {
		t.Fatal(err)
	}

	var log page
	r.call(t, "GET", "/v1/log", nil, http.StatusOK, &log)
	if len(log.Entries) != 5 {
		t.Fatalf("GET /v1/log: %d entries, want the 3 records and the 2 that do not decode", len(log.Entries))
	}
	for i, e := range log.Entries {
		if (i < 3) != (e.Error == "") || (i < 3) != (e.Record != nil) {
			t.Errorf("log entry %d: %+v, want records first, then two entries with an error and no record", i, e)
		}
	}
	if e := log.Entries[3]; e.Offset != bad.Sequence || !strings.Contains(e.Error, "unknown field") {
		t.Errorf("log entry 4: offset %d error %q, want offset %d saying the field is unknown", e.Offset, e.Error, bad.Sequence)
	}

	var entries page
	r.call(t, "GET", "/v1/journals/ae-foreign/entries?limit=3", nil, http.StatusOK, &entries)
	if entries.Next == nil || *entries.Next != 4 {
		t.Fatalf("first page of 3: next %v, want 4", entries.Next)
	}
	r.call(t, "GET", "/v1/journals/ae-foreign/entries?fromSeq=4", nil, http.StatusOK, &entries)
	if len(entries.Entries) != 1 || entries.Entries[0].Offset != bad.Sequence || entries.Entries[0].Error == "" || entries.Next != nil {
		t.Errorf("page from sequence 4: %+v, want the record that does not decode, at offset %d", entries, bad.Sequence)
	}
}

// TestJournalRoutesMatchOpenAPI validates the requests and answers of the
// journal routes, errors included, against the document the server
// serves.
func TestJournalRoutesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// A journal file is JSONL: text, one JSON value a line, which the
	// validator's JSON decoder would take for one malformed value.
	v := servedValidator(t, r.http.URL, config.WithFormatAssertions(), config.WithBodyDecoder("application/x-ndjson", content.TextDecoder()))
	check := func(method, path, contentType, body string, status int) {
		t.Helper()
		if got, _, data := validatedCall(t, v, r.http.URL, method, path, contentType, body); got != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, got, data, status)
		}
	}
	lines := journalFile(t, "ae-openapi", 4)
	check("POST", "/v1/journals", "application/x-ndjson", body(lines), 201)
	check("POST", "/v1/journals", "application/x-ndjson", body(lines), 200)
	if _, err := r.bus.JetStream().Publish(context.Background(), "journal.foreign.writer", []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	check("GET", "/v1/journals/ae-openapi", "", "", 200)
	check("GET", "/v1/journals/ae-openapi/entries?fromSeq=2&limit=2", "", "", 200)
	check("GET", "/v1/log", "", "", 200) // with an entry that does not decode
	check("GET", "/v1/journals/ae-nosuch", "", "", 404)
	check("GET", "/v1/journals/ae-openapi/entries?fromSeq=0", "", "", 400)
	check("POST", "/v1/journals", "application/x-ndjson", body(lines[1:]), 400)
}
