package outputlog_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

func TestRotationKeepsTheFilesBoundedAndTheNewestLines(t *testing.T) {
	dir := t.TempDir()
	const limit = 8 << 10
	w, err := outputlog.Open(dir, "exec-1", outputlog.Options{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const lines = 2000 // about 150 kB of entries, over 18 times the limit
	for i := 1; i <= lines; i++ {
		stream := outputlog.Stdout
		if i%2 == 0 {
			stream = outputlog.Stderr
		}
		if err := w.Write(stream, []byte(fmt.Sprintf("line %d %s", i, strings.Repeat("x", 20)))); err != nil {
			t.Fatal(err)
		}
	}
	cur, old, _ := outputlog.Paths(dir, "exec-1")
	var total int64
	for _, path := range []string{cur, old} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > limit {
			t.Errorf("%s is %d bytes, want at most %d", path, info.Size(), limit)
		}
		total += info.Size()
	}
	if total < limit {
		t.Errorf("the two files hold %d bytes, want at least a limit's worth (%d)", total, limit)
	}
	p, err := outputlog.Read(dir, "exec-1", 1, 100000, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Last != lines || p.Entries[len(p.Entries)-1].N != lines {
		t.Fatalf("last line %d, want %d", p.Last, lines)
	}
	if p.First <= 1 || p.First != p.Entries[0].N {
		t.Errorf("first kept line %d (entries start at %d), want the oldest rotated away", p.First, p.Entries[0].N)
	}
	for i, e := range p.Entries {
		if want := p.First + uint64(i); e.N != want || !strings.HasPrefix(e.Line, fmt.Sprintf("line %d ", want)) {
			t.Fatalf("entry %d is %d %q, want line %d: the kept lines are not the newest in order", i, e.N, e.Line, want)
		}
	}
	tail, err := outputlog.Tail(dir, "exec-1", 3, outputlog.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(tail.Entries) != 3 || tail.Entries[2].N != lines || tail.Entries[0].N != lines-4 {
		t.Errorf("tail of stderr is %+v, want lines %d, %d and %d", tail.Entries, lines-4, lines-2, lines)
	}
}

func TestReopenContinuesTheNumbering(t *testing.T) {
	dir := t.TempDir()
	w, err := outputlog.Open(dir, "e", outputlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(outputlog.Stdout, []byte("one"))
	w.Write(outputlog.Stderr, []byte("two"))
	w.Close()
	// A crash in the middle of a write leaves a torn line.
	cur, _, _ := outputlog.Paths(dir, "e")
	f, _ := os.OpenFile(cur, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"n":3,"t":"2025`)
	f.Close()
	if p, _ := outputlog.Read(dir, "e", 1, 10, ""); len(p.Entries) != 2 {
		t.Errorf("read %d entries with a torn last line, want the 2 whole ones", len(p.Entries))
	}
	w, err = outputlog.Open(dir, "e", outputlog.Options{Now: func() time.Time { return time.Unix(7, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(outputlog.Stdout, []byte("three")); err != nil {
		t.Fatal(err)
	}
	p, err := outputlog.Read(dir, "e", 2, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range p.Entries {
		got = append(got, fmt.Sprintf("%d %s %s", e.N, e.Stream, e.Line))
	}
	if want := "2 stderr two|3 stdout three"; strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
	if p.Next != 4 || !p.Entries[1].Time.Equal(time.Unix(7, 0)) {
		t.Errorf("next %d, time %v, want 4 and the clock's", p.Next, p.Entries[1].Time)
	}
}

func TestLongLinesAreClipped(t *testing.T) {
	dir := t.TempDir()
	w, err := outputlog.Open(dir, "e", outputlog.Options{Limit: outputlog.MinLimit})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Escapes take six bytes each in JSON: the worst case for the bound.
	if err := w.Write(outputlog.Stdout, bytes.Repeat([]byte{0x1b}, 10000)); err != nil {
		t.Fatal(err)
	}
	w.Write(outputlog.Stdout, []byte("after"))
	p, _ := outputlog.Read(dir, "e", 1, 10, "")
	if len(p.Entries) != 2 || !p.Entries[0].Clipped || len(p.Entries[0].Line) != outputlog.MinLimit/8 {
		t.Fatalf("got %d entries, the first clipped %v to %d bytes; want 2, clipped to %d", len(p.Entries), p.Entries[0].Clipped, len(p.Entries[0].Line), outputlog.MinLimit/8)
	}
	cur, _, _ := outputlog.Paths(dir, "e")
	if info, _ := os.Stat(cur); info.Size() > outputlog.MinLimit {
		t.Errorf("file is %d bytes, want at most %d", info.Size(), outputlog.MinLimit)
	}
	if _, err := outputlog.Open(dir, "f", outputlog.Options{Limit: 100}); err == nil {
		t.Error("a 100-byte limit was accepted")
	}
}
