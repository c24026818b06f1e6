package journalfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/journalfile"
)

// journal writes execution id's journal, its header and n-1 activity
// updates, into a file store and returns it as a journal file.
func journal(t *testing.T, id string, n int) []byte {
	t.Helper()
	s := openFile(t)
	ctx := context.Background()
	ref := storetest.Ref(eventstore.OwnerTask, "t-file", id)
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("generic")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if _, err := s.Append(ctx, ref, storetest.Activity(ref.JournalID, i)); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := journalfile.Write(&b, read(t, s, ref)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func openFile(t *testing.T) *eventstore.FileStore {
	t.Helper()
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// read is fixtures.ReadJournal.
var read = fixtures.ReadJournal

// TestReadWrite: Read takes back what Write wrote, record for record.
func TestReadWrite(t *testing.T) {
	t.Parallel()
	file := journal(t, "ae-rw", 5)
	records, err := journalfile.Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := journalfile.Write(&again, records); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(file), again.String()); diff != "" {
		t.Errorf("written again differs (-first +again):\n%s", diff)
	}
}

// TestReadNamesEveryBadLine: each problem names its line; beyond twenty,
// the rest are counted.
func TestReadNamesEveryBadLine(t *testing.T) {
	t.Parallel()
	lines := strings.Split(strings.TrimSuffix(string(journal(t, "ae-bad", 30)), "\n"), "\n")
	for _, tc := range []struct {
		name string
		edit func([]string) []string
		want []string
	}{
		{"one problem", func(l []string) []string { l[2] = "{"; return l }, []string{"line 3: ", "not a JSON object"}},
		{"two problems", func(l []string) []string { l[1], l[4] = "", "[]"; return l }, []string{"2 problems:", "line 2: blank", "line 5: "}},
		{"more than twenty", func(l []string) []string {
			for i := 1; i < len(l); i++ {
				l[i] = " "
			}
			return l
		}, []string{"29 problems:", "line 21: blank", "… and 9 more"}},
		{"header not first", func(l []string) []string { return l[1:] }, []string{"line 1: is a activity.updated record; the first line must be the journal.header"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := journalfile.Read(strings.NewReader(strings.Join(tc.edit(append([]string(nil), lines...)), "\n")))
			var fe *journalfile.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Read: %v, want a *journalfile.Error", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	if _, err := journalfile.Read(strings.NewReader("")); !errors.Is(err, journalfile.ErrEmpty) {
		t.Errorf("Read of an empty file: %v, want ErrEmpty", err)
	}
}

// TestImport runs the import's cases on a store without atomic batches,
// record by record, and on the log, in one batch: a new journal, the same
// again, the rest of a journal whose first records are stored, and a
// journal stored with other records, refused with nothing written.
func TestImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) journalfile.Store
	}{
		{"file store", func(t *testing.T) journalfile.Store { return openFile(t) }},
		{"log", func(t *testing.T) journalfile.Store {
			b := fixtures.StartNATS(t)
			s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.store(t)
			records, err := journalfile.Read(bytes.NewReader(journal(t, "ae-import", 8)))
			if err != nil {
				t.Fatal(err)
			}
			ref := storetest.Ref(eventstore.OwnerTask, "t-file", "ae-import")
			check := func(what string, res journalfile.Result, err error, written int) {
				t.Helper()
				if err != nil || res.Written != written || res.Records != len(records) || res.Reference.AgentExecutionID != "ae-import" {
					t.Fatalf("%s: %+v, %v; want %d of %d written", what, res, err, written, len(records))
				}
			}
			res, err := journalfile.Import(ctx, s, records[:3])
			if err != nil || res.Written != 3 {
				t.Fatalf("import of the first 3: %+v, %v", res, err)
			}
			res, err = journalfile.Import(ctx, s, records)
			check("import of the whole after the first 3", res, err, 5)
			res, err = journalfile.Import(ctx, s, records)
			check("import again", res, err, 0)
			if diff := cmp.Diff(journalfile.MarkImported(records), read(t, s, ref)); diff != "" {
				t.Errorf("stored journal differs from the file (-file +stored):\n%s", diff)
			}

			other, err := journalfile.Read(bytes.NewReader(journal(t, "ae-import", 8)))
			if err != nil {
				t.Fatal(err)
			}
			other[6].RecordBase().RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindActivity, "another")
			_, err = journalfile.Import(ctx, s, other)
			var de *journalfile.DifferentJournalError
			if !errors.Is(err, journalfile.ErrDifferentJournal) || !errors.As(err, &de) || de.Stored != 8 ||
				!strings.Contains(err.Error(), fmt.Sprintf("differs at sequence 7 (stored record %s", records[6].RecordBase().RecordID)) {
				t.Errorf("import of a different journal: %v, want a DifferentJournalError at sequence 7", err)
			}
			_, err = journalfile.Import(ctx, s, records[:5])
			if !errors.Is(err, journalfile.ErrDifferentJournal) || !strings.Contains(err.Error(), "is longer than the file") {
				t.Errorf("import of a shorter file: %v, want a DifferentJournalError saying the stored one is longer", err)
			}
			if diff := cmp.Diff(journalfile.MarkImported(records), read(t, s, ref)); diff != "" {
				t.Errorf("refused imports changed the journal (-file +stored):\n%s", diff)
			}
		})
	}
}
