//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package eventstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func openTestFileStore(t *testing.T, dir string) *FileStore {
	t.Helper()
	cfg := DefaultFileConfig(dir)
	cfg.MaxRecordSize = 4 << 10
	s, err := OpenFile(cfg)
	if err != nil {
		t.Fatalf("OpenFile(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fileTestRef(t *testing.T, owner OwnerEntity, ownerID, execID string) Reference {
	t.Helper()
	ref, err := NewReference(owner, ownerID, execID)
	if err != nil {
		t.Fatalf("NewReference(%s, %q, %q): %v", owner, ownerID, execID, err)
	}
	return ref
}

func fileTestHeader() *Header {
	return &Header{AgentID: "agent-1", ProtocolDescriptor: ProtocolDescriptor{Posture: PostureStructuredHeadless}}
}

func fileTestMessage(id string) *MessageAccepted {
	return &MessageAccepted{MessageID: id, Source: SourceOperator, MessageType: "prompt", Payload: json.RawMessage("{}")}
}

func mustEnsureFile(t *testing.T, s *FileStore, ref Reference) Reference {
	t.Helper()
	head, err := s.EnsureJournal(context.Background(), ref, fileTestHeader())
	if err != nil {
		t.Fatalf("EnsureJournal(%s): %v", ref, err)
	}
	return head
}

func mustAppendFile(t *testing.T, s *FileStore, ref Reference, r Record) Entry {
	t.Helper()
	e, err := s.Append(context.Background(), ref, r)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", ref, r.Kind(), err)
	}
	return e
}

func collectFile(t *testing.T, seq func(func(Entry, error) bool)) []Entry {
	t.Helper()
	var out []Entry
	for e, err := range seq {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// entryKeys renders entries as "agentExecutionId/sequence@offset".
func entryKeys(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		b := e.Record.RecordBase()
		out = append(out, fmt.Sprintf("%s/%d@%d", b.AgentExecutionID, b.Sequence, e.Offset))
	}
	return out
}

// encoded renders entries as offset and encoded record, for exact comparison.
func encoded(t *testing.T, entries []Entry) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		b, err := Encode(e.Record)
		if err != nil {
			t.Fatalf("encode offset %d: %v", e.Offset, err)
		}
		out = append(out, fmt.Sprintf("%d %s", e.Offset, b))
	}
	return out
}

func journalPath(t *testing.T, dir, execID string) string {
	t.Helper()
	name, err := journalFileName(execID)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, journalDirName, name)
}

func indexPath(dir string) string { return filepath.Join(dir, journalDirName, indexFileName) }

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFileStoreBasics(t *testing.T) {
	ctx := context.Background()
	s := openTestFileStore(t, t.TempDir())
	ref := fileTestRef(t, OwnerTask, "task-1", "exec-1")

	head := mustEnsureFile(t, s, ref)
	if head.RecordCount != 1 || head.LastSequence != 1 || head.JournalID != ref.JournalID {
		t.Fatalf("head after ensure = %+v, want 1 record of journal %s", head, ref.JournalID)
	}
	var offsets []uint64
	for i := 2; i <= 5; i++ {
		e := mustAppendFile(t, s, ref, fileTestMessage(fmt.Sprintf("m-%d", i)))
		if got := e.Record.RecordBase().Sequence; got != uint64(i) {
			t.Fatalf("append %d: sequence %d, want %d", i, got, i)
		}
		offsets = append(offsets, e.Offset)
	}
	if diff := cmp.Diff([]uint64{2, 3, 4, 5}, offsets); diff != "" {
		t.Fatalf("offsets (-want +got):\n%s", diff)
	}
	head, err := s.Head(ctx, ref)
	if err != nil || head.RecordCount != 5 || head.LastSequence != 5 {
		t.Fatalf("Head = %+v, %v; want 5 records", head, err)
	}

	for _, c := range []struct {
		name string
		from uint64
		want []string
	}{
		{"from 0", 0, []string{"exec-1/1@1", "exec-1/2@2", "exec-1/3@3", "exec-1/4@4", "exec-1/5@5"}},
		{"from 1", 1, []string{"exec-1/1@1", "exec-1/2@2", "exec-1/3@3", "exec-1/4@4", "exec-1/5@5"}},
		{"from the middle", 3, []string{"exec-1/3@3", "exec-1/4@4", "exec-1/5@5"}},
		{"from the head", 5, []string{"exec-1/5@5"}},
		{"past the head", 6, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := entryKeys(collectFile(t, s.ReadJournal(ctx, ref, c.from)))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("ReadJournal(%d) (-want +got):\n%s", c.from, diff)
			}
		})
	}

	missing := fileTestRef(t, OwnerTask, "task-1", "missing")
	if _, err := s.Head(ctx, missing); !errors.Is(err, ErrJournalNotFound) {
		t.Errorf("Head(missing): got %v, want ErrJournalNotFound", err)
	}
	if _, err := s.Append(ctx, missing, fileTestMessage("m")); !errors.Is(err, ErrJournalNotFound) {
		t.Errorf("Append(missing): got %v, want ErrJournalNotFound", err)
	}
	var errs []error
	for _, err := range s.ReadJournal(ctx, missing, 1) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrJournalNotFound) {
		t.Errorf("ReadJournal(missing): got %v, want one ErrJournalNotFound", errs)
	}
	if _, err := s.Append(ctx, ref, fileTestHeader()); err == nil {
		t.Errorf("Append accepted a header; headers go through EnsureJournal")
	}
}

func TestFileStoreEnsureJournal(t *testing.T) {
	ctx := context.Background()
	s := openTestFileStore(t, t.TempDir())
	ref := fileTestRef(t, OwnerMission, "mission-1", "exec-1")
	mustEnsureFile(t, s, ref)
	mustAppendFile(t, s, ref, fileTestMessage("m-1"))

	// The same header again, fresh or with its id set, is a no-op.
	again := mustEnsureFile(t, s, ref)
	if again.LastSequence != 2 {
		t.Fatalf("second ensure: head %d, want 2", again.LastSequence)
	}
	h := fileTestHeader()
	h.RecordID = RecordID(ref.JournalID, KindHeader, "header")
	if _, err := s.EnsureJournal(ctx, ref, h); err != nil {
		t.Fatalf("ensure with the stored header id: %v", err)
	}

	other := fileTestHeader()
	other.RecordID = "rec-other-header"
	if _, err := s.EnsureJournal(ctx, ref, other); !errors.Is(err, ErrJournalExists) {
		t.Fatalf("ensure with a different header: got %v, want ErrJournalExists", err)
	}
	// One file per agent execution id: another owner of the same id is refused.
	foreign := fileTestRef(t, OwnerTask, "task-9", "exec-1")
	_, err := s.EnsureJournal(ctx, foreign, fileTestHeader())
	if !errors.Is(err, ErrJournalExists) || !strings.Contains(err.Error(), "Mission/mission-1/exec-1") {
		t.Fatalf("ensure of exec-1 under another owner: got %v, want ErrJournalExists naming Mission/mission-1/exec-1", err)
	}
	if _, err := s.Head(ctx, foreign); !errors.Is(err, ErrJournalNotFound) {
		t.Fatalf("Head of the refused journal: got %v, want ErrJournalNotFound", err)
	}
	if _, err := s.Append(ctx, foreign, fileTestMessage("x")); !errors.Is(err, ErrJournalNotFound) {
		t.Fatalf("Append to the refused journal: got %v, want ErrJournalNotFound", err)
	}
	if got := entryKeys(collectFile(t, s.ReadJournal(ctx, ref, 1))); len(got) != 2 {
		t.Fatalf("journal holds %v, want the header and one message", got)
	}
}

func TestFileStoreReadLogInterleaved(t *testing.T) {
	ctx := context.Background()
	s := openTestFileStore(t, t.TempDir())
	refs := []Reference{
		fileTestRef(t, OwnerTask, "t", "b"),
		fileTestRef(t, OwnerMission, "m", "a"),
		fileTestRef(t, OwnerSystem, "s", "c"),
	}
	var want []string
	for _, ref := range refs {
		mustEnsureFile(t, s, ref)
		want = append(want, fmt.Sprintf("%s/1@%d", ref.AgentExecutionID, len(want)+1))
	}
	for i := 0; i < 4; i++ {
		for _, ref := range refs {
			e := mustAppendFile(t, s, ref, fileTestMessage(fmt.Sprintf("m-%d", i)))
			want = append(want, fmt.Sprintf("%s/%d@%d", ref.AgentExecutionID, i+2, e.Offset))
		}
	}
	got := entryKeys(collectFile(t, s.ReadLog(ctx, 0)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ReadLog(0) (-want +got):\n%s", diff)
	}
	for i, w := range want {
		if !strings.HasSuffix(w, fmt.Sprintf("@%d", i+1)) {
			t.Fatalf("entry %d is %s: offsets not gapless", i, w)
		}
	}
	if diff := cmp.Diff(want[6:], entryKeys(collectFile(t, s.ReadLog(ctx, 7)))); diff != "" {
		t.Fatalf("ReadLog(7) (-want +got):\n%s", diff)
	}
	if n := len(collectFile(t, s.ReadLog(ctx, uint64(len(want)+1)))); n != 0 {
		t.Fatalf("ReadLog past the end: %d entries, want 0", n)
	}
	if last, err := s.LastOffset(ctx); err != nil || last != uint64(len(want)) {
		t.Fatalf("LastOffset = %d, %v; want %d", last, err, len(want))
	}

	journals, err := s.Journals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range journals {
		if j.RecordCount != 5 || j.LastSequence != 5 {
			t.Errorf("journal %s has counters %d/%d, want 5/5", j, j.RecordCount, j.LastSequence)
		}
		names = append(names, j.String())
	}
	if diff := cmp.Diff([]string{"Mission/m/a", "System/s/c", "Task/t/b"}, names); diff != "" {
		t.Fatalf("Journals order (-want +got):\n%s", diff)
	}

	got1, err := s.Lookup(ctx, "c")
	if err != nil || got1.JournalID != refs[2].JournalID || got1.LastSequence != 5 {
		t.Fatalf("Lookup(c) = %+v, %v; want %s with 5 records", got1, err, refs[2].JournalID)
	}
	if _, err := s.Lookup(ctx, "nope"); !errors.Is(err, ErrJournalNotFound) {
		t.Fatalf("Lookup(nope): got %v, want ErrJournalNotFound", err)
	}
	if _, err := s.Lookup(ctx, ""); !errors.Is(err, ErrInvalidID) {
		t.Fatalf(`Lookup(""): got %v, want ErrInvalidID`, err)
	}
}

func TestFileStoreDuplicateAppend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestFileStore(t, dir)
	ref := fileTestRef(t, OwnerTask, "t", "exec-dup")
	mustEnsureFile(t, s, ref)
	first := mustAppendFile(t, s, ref, fileTestMessage("m-1"))
	mustAppendFile(t, s, ref, fileTestMessage("m-2"))

	check := func(s *FileStore) {
		t.Helper()
		again := mustAppendFile(t, s, ref, fileTestMessage("m-1"))
		if again.Offset != first.Offset || again.Record.RecordBase().Sequence != 2 {
			t.Fatalf("duplicate append = offset %d seq %d, want the stored offset %d seq 2",
				again.Offset, again.Record.RecordBase().Sequence, first.Offset)
		}
		if diff := cmp.Diff(encoded(t, []Entry{first}), encoded(t, []Entry{again})); diff != "" {
			t.Fatalf("duplicate append returned another record (-first +again):\n%s", diff)
		}
		if h, err := s.Head(ctx, ref); err != nil || h.LastSequence != 3 {
			t.Fatalf("head after duplicate = %+v, %v; want 3", h, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// After a reopen the record ids are loaded from the file.
	check(openTestFileStore(t, dir))
}

func TestFileStoreHostileIDs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s := openTestFileStore(t, dir)
	hostile := []string{
		"../../etc/passwd", "a/b", ".a", "..b", "*", ">", "with space", " ", "ünïcode", "日本語",
		"%41", "-_-", "a\x00b", "..\\..\\x", "log.index", ".lock",
		strings.Repeat("é", 100),     // escapes to 600 bytes: longer than a file name may be
		strings.Repeat("é", 100)[2:], // shares that prefix
	}
	for i, id := range hostile {
		ref := fileTestRef(t, OwnerRepository, "../repo/with.dots", id)
		mustEnsureFile(t, s, ref)
		mustAppendFile(t, s, ref, fileTestMessage(fmt.Sprintf("m-%d", i)))
	}
	for _, id := range hostile {
		ref, err := s.Lookup(ctx, id)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", id, err)
		}
		if ref.AgentExecutionID != id || ref.LastSequence != 2 {
			t.Fatalf("Lookup(%q) = %+v, want its journal with 2 records", id, ref)
		}
		if got := collectFile(t, s.ReadJournal(ctx, ref, 2)); len(got) != 1 {
			t.Fatalf("ReadJournal(%q, 2): %d records, want 1", id, len(got))
		}
	}
	if got := collectFile(t, s.ReadLog(ctx, 1)); len(got) != 2*len(hostile) {
		t.Fatalf("ReadLog: %d records, want %d", len(got), 2*len(hostile))
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(filepath.Join(dir, journalDirName), path)
		if err != nil || strings.HasPrefix(rel, "..") || strings.ContainsRune(rel, filepath.Separator) {
			t.Errorf("file %s is outside %s/%s", path, dir, journalDirName)
		}
		if len(d.Name()) > maxFileName {
			t.Errorf("file name %s is %d bytes, want at most %d", d.Name(), len(d.Name()), maxFileName)
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// One file per journal, the index and the lock.
	if len(files) != len(hostile)+2 {
		t.Fatalf("%d files %v, want %d", len(files), files, len(hostile)+2)
	}
	// Reopened, every journal is found again under its file name.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestFileStore(t, dir)
	refs, err := s.Journals(ctx)
	if err != nil || len(refs) != len(hostile) {
		t.Fatalf("Journals after reopen: %d, %v; want %d", len(refs), err, len(hostile))
	}
}

func TestFileStoreReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestFileStore(t, dir)
	refs := []Reference{fileTestRef(t, OwnerTask, "t", "one"), fileTestRef(t, OwnerMission, "m", "two")}
	for _, ref := range refs {
		mustEnsureFile(t, s, ref)
	}
	for i := 0; i < 20; i++ {
		mustAppendFile(t, s, refs[i%2], fileTestMessage(fmt.Sprintf("m-%d", i)))
	}
	before := encoded(t, collectFile(t, s.ReadLog(ctx, 1)))
	beforeJournals, err := s.Journals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestFileStore(t, dir)
	if diff := cmp.Diff(before, encoded(t, collectFile(t, s.ReadLog(ctx, 1)))); diff != "" {
		t.Fatalf("log after reopen (-before +after):\n%s", diff)
	}
	afterJournals, err := s.Journals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(beforeJournals, afterJournals); diff != "" {
		t.Fatalf("journals after reopen (-before +after):\n%s", diff)
	}
	e := mustAppendFile(t, s, refs[0], fileTestMessage("after"))
	if e.Offset != 23 || e.Record.RecordBase().Sequence != 12 {
		t.Fatalf("append after reopen: offset %d seq %d, want offset 23 seq 12", e.Offset, e.Record.RecordBase().Sequence)
	}
}

// crashFixture writes two journals and closes the store, returning the log
// as it was.
func crashFixture(t *testing.T, dir string) (Reference, Reference, []string) {
	t.Helper()
	s := openTestFileStore(t, dir)
	a, b := fileTestRef(t, OwnerTask, "t", "a"), fileTestRef(t, OwnerTask, "t", "b")
	mustEnsureFile(t, s, a)
	mustEnsureFile(t, s, b)
	for i := 0; i < 3; i++ {
		mustAppendFile(t, s, a, fileTestMessage(fmt.Sprintf("a-%d", i)))
		mustAppendFile(t, s, b, fileTestMessage(fmt.Sprintf("b-%d", i)))
	}
	log := encoded(t, collectFile(t, s.ReadLog(context.Background(), 1)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return a, b, log
}

func TestFileStoreRecoversTornLines(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		tear func(t *testing.T, dir string)
	}{
		{"journal line without newline", func(t *testing.T, dir string) {
			appendBytes(t, journalPath(t, dir, "a"), []byte(`{"recordId":"rec-torn","sequ`))
		}},
		{"journal line of zeros", func(t *testing.T, dir string) {
			appendBytes(t, journalPath(t, dir, "b"), append(bytes.Repeat([]byte{0}, 100), '\n'))
		}},
		{"index line without newline", func(t *testing.T, dir string) {
			appendBytes(t, indexPath(dir), []byte(`{"offset":9,"ownerEnt`))
		}},
		{"index line not JSON", func(t *testing.T, dir string) {
			appendBytes(t, indexPath(dir), []byte("{\"offset\":9,\x00\x00\n"))
		}},
		{"both", func(t *testing.T, dir string) {
			appendBytes(t, journalPath(t, dir, "a"), []byte(`{"recordId":`))
			appendBytes(t, indexPath(dir), []byte(`{"offset":9`))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a, _, before := crashFixture(t, dir)
			sizes := map[string]int64{}
			for _, p := range []string{journalPath(t, dir, "a"), journalPath(t, dir, "b"), indexPath(dir)} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				sizes[p] = fi.Size()
			}
			c.tear(t, dir)

			s := openTestFileStore(t, dir)
			if diff := cmp.Diff(before, encoded(t, collectFile(t, s.ReadLog(ctx, 1)))); diff != "" {
				t.Fatalf("log after recovery (-before +after):\n%s", diff)
			}
			for p, size := range sizes {
				if fi, err := os.Stat(p); err != nil || fi.Size() != size {
					t.Errorf("%s is %d bytes after recovery, want %d (the torn line cut off)", p, fi.Size(), size)
				}
			}
			e := mustAppendFile(t, s, a, fileTestMessage("after"))
			if e.Offset != uint64(len(before))+1 || e.Record.RecordBase().Sequence != 5 {
				t.Fatalf("append after recovery: offset %d seq %d, want offset %d seq 5", e.Offset, e.Record.RecordBase().Sequence, len(before)+1)
			}
		})
	}
}

func TestFileStoreRecoversTornHeader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, _, before := crashFixture(t, dir)
	path := journalPath(t, dir, "c")
	if err := os.WriteFile(path, []byte(`{"recordId":"rec-`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTestFileStore(t, dir)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the file of a torn header: stat %v, want it removed", err)
	}
	if n := len(collectFile(t, s.ReadLog(ctx, 1))); n != len(before) {
		t.Fatalf("log after recovery: %d records, want %d", n, len(before))
	}
	c := fileTestRef(t, OwnerTask, "t", "c")
	if h := mustEnsureFile(t, s, c); h.LastSequence != 1 {
		t.Fatalf("ensure after recovery: head %d, want 1", h.LastSequence)
	}
}

func TestFileStoreReindexesUnindexedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b, before := crashFixture(t, dir)

	// The last two appends (a's and b's sequence 4, offsets 7 and 8) reached
	// their journal files but not the index, whose last line is torn.
	lines := readLines(t, indexPath(dir))
	lines = lines[:len(lines)-1] // SplitAfter leaves an empty last element
	kept := strings.Join(lines[:len(lines)-2], "") + lines[len(lines)-2][:10]
	if err := os.WriteFile(indexPath(dir), []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}

	s := openTestFileStore(t, dir)
	got := collectFile(t, s.ReadLog(ctx, 1))
	if diff := cmp.Diff(before, encoded(t, got)); diff != "" {
		t.Fatalf("log after re-indexing (-before +after):\n%s", diff)
	}
	for _, ref := range []Reference{a, b} {
		if h, err := s.Head(ctx, ref); err != nil || h.LastSequence != 4 {
			t.Fatalf("Head(%s) = %+v, %v; want 4 records", ref, h, err)
		}
		entries := collectFile(t, s.ReadJournal(ctx, ref, 4))
		if len(entries) != 1 || entries[0].Offset < 7 {
			t.Fatalf("ReadJournal(%s, 4) = %v, want one re-indexed entry", ref, entryKeys(entries))
		}
	}
	// The index on disk is whole again: a second reopen reads the same log.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idx := readLines(t, indexPath(dir))
	if len(idx) != len(before)+1 || idx[len(idx)-1] != "" {
		t.Fatalf("index has %d lines after re-indexing, want %d", len(idx)-1, len(before))
	}
	var last indexLine
	if err := json.Unmarshal([]byte(idx[len(idx)-2]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Offset != uint64(len(before)) || last.Sequence != 4 {
		t.Fatalf("last index line = %+v, want offset %d sequence 4", last, len(before))
	}
	s = openTestFileStore(t, dir)
	if diff := cmp.Diff(before, encoded(t, collectFile(t, s.ReadLog(ctx, 1)))); diff != "" {
		t.Fatalf("log after a second reopen (-before +after):\n%s", diff)
	}
}

func TestFileStoreCorruptMiddleLine(t *testing.T) {
	ctx := context.Background()

	t.Run("index", func(t *testing.T) {
		dir := t.TempDir()
		crashFixture(t, dir)
		lines := readLines(t, indexPath(dir))
		lines[3] = "{not json}\n"
		if err := os.WriteFile(indexPath(dir), []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenFile(DefaultFileConfig(dir))
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Line != 4 || ce.Path != indexPath(dir) {
			t.Fatalf("OpenFile: got %v, want a CorruptError at line 4 of %s", err, indexPath(dir))
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), indexPath(dir)) || !strings.Contains(err.Error(), "line 4") {
			t.Fatalf("OpenFile: error %q does not name the file and line", err)
		}
		// The failed open released the lock.
		if _, err := OpenFile(DefaultFileConfig(dir)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("second OpenFile: got %v, want ErrCorrupt again (not a lock error)", err)
		}
	})

	t.Run("journal", func(t *testing.T) {
		dir := t.TempDir()
		a, _, _ := crashFixture(t, dir)
		path := journalPath(t, dir, "a")
		lines := readLines(t, path)
		// Same length, so the line ends stay put: only the read that meets
		// the line can tell.
		lines[2] = strings.Repeat("x", len(lines[2])-1) + "\n"
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		s := openTestFileStore(t, dir)
		var errs []error
		for _, err := range s.ReadJournal(ctx, a, 1) {
			if err != nil {
				errs = append(errs, err)
			}
		}
		var ce *CorruptError
		if len(errs) != 1 || !errors.As(errs[0], &ce) || ce.Line != 3 || ce.Path != path {
			t.Fatalf("ReadJournal: got errors %v, want one CorruptError at line 3 of %s", errs, path)
		}
		var logErrs []error
		for _, err := range s.ReadLog(ctx, 1) {
			if err != nil {
				logErrs = append(logErrs, err)
			}
		}
		if len(logErrs) != 1 || !strings.Contains(logErrs[0].Error(), path) || !strings.Contains(logErrs[0].Error(), "line 3") {
			t.Fatalf("ReadLog: got errors %v, want one naming line 3 of %s", logErrs, path)
		}
		if _, err := s.Append(ctx, a, fileTestMessage("new")); !errors.As(err, &ce) || ce.Line != 3 {
			t.Fatalf("Append (which loads the record ids): got %v, want a CorruptError at line 3", err)
		}
	})

	t.Run("index points past a journal", func(t *testing.T) {
		dir := t.TempDir()
		crashFixture(t, dir)
		path := journalPath(t, dir, "b")
		lines := readLines(t, path)
		if err := os.WriteFile(path, []byte(strings.Join(lines[:2], "")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenFile(DefaultFileConfig(dir))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("OpenFile: got %v, want ErrCorrupt naming %s", err, path)
		}
	})
}

func TestFileStoreRecordTooLarge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestFileStore(t, dir)
	ref := fileTestRef(t, OwnerTask, "t", "big")
	mustEnsureFile(t, s, ref)
	mustAppendFile(t, s, ref, fileTestMessage("small"))
	sizeBefore := func() int64 {
		fi, err := os.Stat(journalPath(t, dir, "big"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}()
	big := fileTestMessage("big")
	big.Payload = json.RawMessage(`"` + strings.Repeat("x", 5<<10) + `"`)
	if _, err := s.Append(ctx, ref, big); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("oversize append: got %v, want ErrRecordTooLarge", err)
	}
	if h, err := s.Head(ctx, ref); err != nil || h.LastSequence != 2 {
		t.Fatalf("head after oversize append = %+v, %v; want 2", h, err)
	}
	if fi, err := os.Stat(journalPath(t, dir, "big")); err != nil || fi.Size() != sizeBefore {
		t.Fatalf("journal file grew on a refused append")
	}
	if last, _ := s.LastOffset(ctx); last != 2 {
		t.Fatalf("LastOffset %d after a refused append, want 2", last)
	}
	if e := mustAppendFile(t, s, ref, fileTestMessage("after")); e.Offset != 3 || e.Record.RecordBase().Sequence != 3 {
		t.Fatalf("append after a refused one: offset %d seq %d, want 3 and 3", e.Offset, e.Record.RecordBase().Sequence)
	}
}

func TestFileStoreLocksDir(t *testing.T) {
	dir := t.TempDir()
	s := openTestFileStore(t, dir)
	_, err := OpenFile(DefaultFileConfig(dir))
	if !errors.Is(err, ErrDirLocked) || !strings.Contains(err.Error(), filepath.Join(dir, journalDirName)) {
		t.Fatalf("second OpenFile: got %v, want ErrDirLocked naming the directory", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openTestFileStore(t, dir)
}

func TestFileStoreConfig(t *testing.T) {
	_, err := OpenFile(FileConfig{MaxRecordSize: -1})
	if err == nil || !strings.Contains(err.Error(), "dir is required") || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("OpenFile with a bad config: got %v, want both problems", err)
	}
}

func TestFileStoreClosed(t *testing.T) {
	ctx := context.Background()
	s := openTestFileStore(t, t.TempDir())
	ref := fileTestRef(t, OwnerTask, "t", "closed")
	mustEnsureFile(t, s, ref)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Append(ctx, ref, fileTestMessage("m")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.EnsureJournal(ctx, ref, fileTestHeader()); !errors.Is(err, ErrClosed) {
		t.Errorf("EnsureJournal after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Head(ctx, ref); !errors.Is(err, ErrClosed) {
		t.Errorf("Head after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Journals(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Journals after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Lookup(ctx, "closed"); !errors.Is(err, ErrClosed) {
		t.Errorf("Lookup after Close: got %v, want ErrClosed", err)
	}
	for _, seq := range []func(func(Entry, error) bool){s.ReadJournal(ctx, ref, 1), s.ReadLog(ctx, 1)} {
		for _, err := range seq {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("read after Close: got %v, want ErrClosed", err)
			}
		}
	}
}

func TestFileStoreConcurrentReadsAndAppends(t *testing.T) {
	ctx := context.Background()
	s := openTestFileStore(t, t.TempDir())
	const journals, each = 4, 100
	refs := make([]Reference, journals)
	for i := range refs {
		refs[i] = fileTestRef(t, OwnerTask, "t", fmt.Sprintf("exec-%d", i))
		mustEnsureFile(t, s, refs[i])
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, ref := range refs {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				if _, err := s.Append(ctx, ref, fileTestMessage(fmt.Sprintf("m-%d", i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				var prev uint64
				next := map[string]uint64{}
				for e, err := range s.ReadLog(ctx, 1) {
					if err != nil {
						t.Error(err)
						return
					}
					b := e.Record.RecordBase()
					if e.Offset != prev+1 || b.Sequence != next[b.JournalID]+1 {
						t.Errorf("offset %d after %d, sequence %d after %d", e.Offset, prev, b.Sequence, next[b.JournalID])
						return
					}
					prev, next[b.JournalID] = e.Offset, b.Sequence
				}
				for _, ref := range refs {
					h, err := s.Head(ctx, ref)
					if err != nil {
						t.Error(err)
						return
					}
					var n uint64
					for _, err := range s.ReadJournal(ctx, ref, 1) {
						if err != nil {
							t.Error(err)
							return
						}
						n++
					}
					if n < h.LastSequence {
						t.Errorf("ReadJournal(%s) read %d records after head %d", ref, n, h.LastSequence)
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if n := len(collectFile(t, s.ReadLog(ctx, 1))); n != journals*(each+1) {
		t.Fatalf("log has %d records, want %d", n, journals*(each+1))
	}
}

func TestFileStoreManyJournalsBeyondOpenFileLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestFileStore(t, dir)
	n := maxOpenWriters + maxOpenReaders + 10
	var refs []Reference
	for i := 0; i < n; i++ {
		ref := fileTestRef(t, OwnerMission, "m", fmt.Sprintf("exec-%03d", i))
		refs = append(refs, ref)
		mustEnsureFile(t, s, ref)
	}
	for round := 0; round < 2; round++ {
		for _, ref := range refs {
			mustAppendFile(t, s, ref, fileTestMessage(fmt.Sprintf("m-%d", round)))
		}
	}
	if s.writers.Len() > maxOpenWriters {
		t.Fatalf("%d journal files open for writing, want at most %d", s.writers.Len(), maxOpenWriters)
	}
	next := map[string]uint64{}
	count := 0
	for e, err := range s.ReadLog(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		b := e.Record.RecordBase()
		if b.Sequence != next[b.JournalID]+1 {
			t.Fatalf("journal %s: sequence %d after %d", b.AgentExecutionID, b.Sequence, next[b.JournalID])
		}
		next[b.JournalID] = b.Sequence
		count++
	}
	if count != 3*n {
		t.Fatalf("log has %d records, want %d", count, 3*n)
	}
}

// crashDirEnv tells the test binary, started again by TestFileStoreKill9, to
// append until it is killed.
const crashDirEnv = "EVENTSTORE_FILESTORE_CRASH_DIR"

// TestFileStoreCrashChild is the process TestFileStoreKill9 kills: it
// appends round robin to three journals and reports each acknowledged
// append as "ack <offset> <recordId>".
func TestFileStoreCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("started by TestFileStoreKill9 only")
	}
	s, err := OpenFile(DefaultFileConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var refs []Reference
	for _, id := range []string{"x", "y", "z"} {
		ref := fileTestRef(t, OwnerTask, "t", id)
		if _, err := s.EnsureJournal(ctx, ref, fileTestHeader()); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	for i := 0; ; i++ {
		e, err := s.Append(ctx, refs[i%len(refs)], fileTestMessage(fmt.Sprintf("m-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ack %d %s\n", e.Offset, e.Record.RecordBase().RecordID)
	}
}

func TestFileStoreKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreCrashChild$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]string{}
	var last uint64
	sc := bufio.NewScanner(out)
	for len(acked) < 300 && sc.Scan() {
		var off uint64
		var id string
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %s", &off, &id); err == nil {
			acked[off], last = id, off
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // killed: the error only says so
	if len(acked) < 300 {
		t.Fatalf("the child acknowledged %d appends before it stopped, want 300", len(acked))
	}

	s := openTestFileStore(t, dir)
	next := map[string]uint64{}
	var n uint64
	for e, err := range s.ReadLog(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		b := e.Record.RecordBase()
		if e.Offset != n || b.Sequence != next[b.JournalID]+1 {
			t.Fatalf("after kill -9: offset %d sequence %d, want offset %d sequence %d", e.Offset, b.Sequence, n, next[b.JournalID]+1)
		}
		next[b.JournalID] = b.Sequence
		if id, ok := acked[e.Offset]; ok && id != b.RecordID {
			t.Fatalf("offset %d holds %s, but %s was acknowledged there", e.Offset, b.RecordID, id)
		}
	}
	if n < last {
		t.Fatalf("after kill -9 the log ends at %d, but offset %d was acknowledged", n, last)
	}
	// The recovered store takes appends where the log ended.
	e := mustAppendFile(t, s, fileTestRef(t, OwnerTask, "t", "x"), fileTestMessage("after-crash"))
	if e.Offset != n+1 {
		t.Fatalf("append after recovery: offset %d, want %d", e.Offset, n+1)
	}
}
