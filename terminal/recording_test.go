package terminal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

const validHeader = `{"version": 2, "width": 80, "height": 24, "timestamp": 1700000000, "command": "sh", "env": {"TERM": "xterm-256color"}}`

func TestReadRecordingAccepts(t *testing.T) {
	in := strings.Join([]string{
		`{"version": 2, "width": 80, "height": 24, "title": "demo", "idle_time_limit": 2.5, "env": {"TERM": "xterm", "SHELL": "/bin/sh"}}`,
		`[0.0, "o", "hello\r\n"]`,
		`[0.5, "i", "world\n"]`,
		`[0.5, "r", "100x30"]`,
		`[1.25, "m", "exit 0"]`,
	}, "\n") + "\n"
	h, events, err := ReadRecording(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadRecording: %v", err)
	}
	wantHeader := Header{Version: 2, Width: 80, Height: 24, Env: map[string]string{"TERM": "xterm", "SHELL": "/bin/sh"}}
	if diff := cmp.Diff(wantHeader, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	wantEvents := []Event{
		{0, "o", "hello\r\n"},
		{0.5, "i", "world\n"},
		{0.5, "r", "100x30"},
		{1.25, "m", "exit 0"},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReadRecordingRejects(t *testing.T) {
	tests := []struct {
		name     string
		lines    []string
		wantLine int
		wantText string
	}{
		{name: "empty", lines: nil, wantLine: 1, wantText: "empty recording"},
		{name: "header not JSON", lines: []string{`hello`}, wantLine: 1, wantText: "not an asciicast v2 JSON object"},
		{name: "header an array", lines: []string{`[2, 80, 24]`}, wantLine: 1, wantText: "not an asciicast v2 JSON object"},
		{name: "version 1", lines: []string{`{"version": 1, "width": 80, "height": 24}`}, wantLine: 1, wantText: "version 1 is not supported (want 2)"},
		{name: "no version", lines: []string{`{"width": 80, "height": 24}`}, wantLine: 1, wantText: "version is missing"},
		{name: "zero width", lines: []string{`{"version": 2, "width": 0, "height": 24}`}, wantLine: 1, wantText: "width"},
		{name: "no height", lines: []string{`{"version": 2, "width": 80}`}, wantLine: 1, wantText: "height"},
		{name: "unknown header key", lines: []string{`{"version": 2, "width": 80, "height": 24, "colour": 1}`}, wantLine: 1, wantText: "colour"},
		{name: "two headers on a line", lines: []string{validHeader + validHeader}, wantLine: 1, wantText: "data after"},
		{name: "event an object", lines: []string{validHeader, `{"time": 1, "code": "o"}`}, wantLine: 2, wantText: "not a JSON array"},
		{name: "event not JSON", lines: []string{validHeader, `[0.1, "o", "a"]`, `[0.2, "o"`}, wantLine: 3, wantText: "not a JSON array"},
		{name: "empty line", lines: []string{validHeader, ``, `[0.1, "o", "a"]`}, wantLine: 2, wantText: "not a JSON array"},
		{name: "two elements", lines: []string{validHeader, `[0.1, "o", "a"]`, `[0.2, "o"]`}, wantLine: 3, wantText: "2 elements (want 3"},
		{name: "four elements", lines: []string{validHeader, `[0.2, "o", "a", "b"]`}, wantLine: 2, wantText: "4 elements"},
		{name: "unknown code", lines: []string{validHeader, `[0.1, "o", "a"]`, `[0.2, "x", "exit 0"]`}, wantLine: 3, wantText: `unknown event code "x" (want one of: o, i, r, m)`},
		{name: "decreasing time", lines: []string{validHeader, `[1.0, "o", "a"]`, `[0.5, "o", "b"]`}, wantLine: 3, wantText: "before the previous event"},
		{name: "negative time", lines: []string{validHeader, `[-1, "o", "a"]`}, wantLine: 2, wantText: "negative"},
		{name: "time a string", lines: []string{validHeader, `["0.5", "o", "a"]`}, wantLine: 2, wantText: "not a number"},
		{name: "time null", lines: []string{validHeader, `[null, "o", "a"]`}, wantLine: 2, wantText: "not a number"},
		{name: "data null", lines: []string{validHeader, `[0.5, "o", null]`}, wantLine: 2, wantText: "not a string"},
		{name: "data a number", lines: []string{validHeader, `[0.5, "o", 7]`}, wantLine: 2, wantText: "not a string"},
		{name: "resize not COLSxROWS", lines: []string{validHeader, `[0.5, "r", "80 by 24"]`}, wantLine: 2, wantText: "COLSxROWS"},
		{name: "resize zero", lines: []string{validHeader, `[0.5, "r", "0x24"]`}, wantLine: 2, wantText: "COLSxROWS"},
		{name: "invalid UTF-8", lines: []string{validHeader, "[0.5, \"o\", \"\xff\"]"}, wantLine: 2, wantText: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Join(tt.lines, "\n")
			_, _, err := ReadRecording(strings.NewReader(in))
			if err == nil {
				t.Fatalf("ReadRecording accepted %q, want an error", in)
			}
			if !errors.Is(err, ErrInvalidRecording) {
				t.Errorf("error %v is not ErrInvalidRecording", err)
			}
			var re *RecordingError
			if !errors.As(err, &re) || re.Line != tt.wantLine {
				t.Errorf("error %v: got line %v, want line %d", err, re, tt.wantLine)
			}
			if !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q, want it to name the line and contain %q", err, tt.wantText)
			}
		})
	}
}

func TestRecordingPathStaysInside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "terminal-recordings")
	tests := []struct {
		name string
		id   string
		want string // base name
	}{
		{name: "plain", id: "ae-0123abcd", want: "ae-0123abcd.terminal.jsonl"},
		{name: "parent", id: "..x", want: "%2E%2Ex.terminal.jsonl"},
		{name: "traversal", id: "../../etc/passwd", want: "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.terminal.jsonl"},
		{name: "absolute", id: "/etc/passwd", want: "%2Fetc%2Fpasswd.terminal.jsonl"},
		{name: "backslash", id: `..\..\x`, want: "%2E%2E%5C%2E%2E%5Cx.terminal.jsonl"},
		{name: "nul and newline", id: "a\x00b\nc", want: "a%00b%0Ac.terminal.jsonl"},
		{name: "unicode", id: "é", want: "%C3%A9.terminal.jsonl"},
		{name: "dot suffix lookalike", id: "x.2", want: "x%2E2.terminal.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RecordingPath(dir, tt.id)
			if err != nil {
				t.Fatalf("RecordingPath(%q): %v", tt.id, err)
			}
			if filepath.Dir(got) != dir {
				t.Errorf("RecordingPath(%q) = %q, want a file directly in %q", tt.id, got, dir)
			}
			if base := filepath.Base(got); base != tt.want {
				t.Errorf("RecordingPath(%q) base = %q, want %q", tt.id, base, tt.want)
			}
		})
	}
	for _, id := range []string{"", strings.Repeat("a", 201)} {
		if _, err := RecordingPath(dir, id); err == nil {
			t.Errorf("RecordingPath(%d-byte id) succeeded, want an error", len(id))
		}
	}
}

// TestRecorderUTF8 feeds a recorder chunks cut at awkward places and checks
// what the file holds.
func TestRecorderUTF8(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string // concatenated output data
	}{
		{name: "ascii", chunks: []string{"ab", "c"}, want: "abc"},
		{name: "two-byte rune split", chunks: []string{"a\xc3", "\xa9b"}, want: "aéb"},
		{name: "four-byte rune in four reads", chunks: []string{"\xf0", "\x9d", "\x84", "\x9e!"}, want: "𝄞!"},
		{name: "invalid bytes", chunks: []string{"a\xffb\xfe"}, want: "a\ufffdb\ufffd"},
		{name: "invalid continuation is not held", chunks: []string{"a\x80", "b"}, want: "a\ufffdb"},
		{name: "truncated rune at exit", chunks: []string{"a\xe2\x82"}, want: "a\ufffd\ufffd"},
		{name: "lead byte followed by ascii", chunks: []string{"\xe2", "x"}, want: "\ufffdx"},
		{name: "surrogate half", chunks: []string{"\xed\xa0\x80"}, want: "\ufffd\ufffd\ufffd"},
		{name: "controls and quotes", chunks: []string{"\x1b[31m\"\\\t\x00\x7f"}, want: "\x1b[31m\"\\\t\x00\x7f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rec, err := createRecording(dir, "ae-unit", Header{Version: 2, Width: 80, Height: 24}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.chunks {
				rec.output([]byte(c))
			}
			if err := rec.finish(0); err != nil {
				t.Fatalf("finish: %v", err)
			}
			raw, err := os.ReadFile(rec.path)
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.Valid(raw) {
				t.Errorf("recording is not valid UTF-8: %q", raw)
			}
			_, events := readRecordingFile(t, rec.path)
			if got := outputOf(events); got != tt.want {
				t.Errorf("output %q, want %q", got, tt.want)
			}
			if last := events[len(events)-1]; last.Code != CodeMarker || last.Data != "exit 0" {
				t.Errorf("last event %+v, want the exit marker", last)
			}
		})
	}
}

// TestRecorderEverySplit cuts a mixed string at every byte position.
func TestRecorderEverySplit(t *testing.T) {
	const s = "aé€𝄞z"
	for i := 0; i <= len(s); i++ {
		var c utf8Carry
		got := string(c.complete([]byte(s[:i])))
		got += string(c.complete([]byte(s[i:])))
		if rest := c.rest(); len(rest) > 0 {
			t.Errorf("split at %d: %q still held", i, rest)
		}
		if got != s {
			t.Errorf("split at %d: got %q, want %q", i, got, s)
		}
	}
}

func TestRecorderFlushesWhileRunning(t *testing.T) {
	dir := t.TempDir()
	rec, err := createRecording(dir, "ae-flush", Header{Version: 2, Width: 80, Height: 24}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.flushLoop()
	}()
	defer func() {
		if err := rec.finish(0); err != nil {
			t.Errorf("finish: %v", err)
		}
		<-done
	}()
	rec.output([]byte("early"))
	eventually(t, "the buffered event to reach the file", func() bool {
		raw, err := os.ReadFile(rec.path)
		return err == nil && strings.Contains(string(raw), `"early"`)
	})
}

func TestScrollbackRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{name: "under size", size: 8, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "exactly size", size: 5, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "wraps", size: 5, writes: []string{"abc", "defg"}, want: "cdefg"},
		{name: "wraps twice", size: 4, writes: []string{"abc", "def", "ghi"}, want: "fghi"},
		{name: "chunk larger than size", size: 3, writes: []string{"ab", "cdefgh"}, want: "fgh"},
		{name: "drops a leading partial rune", size: 3, writes: []string{"x€y"}, want: "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ring{size: tt.size}
			for _, w := range tt.writes {
				r.write([]byte(w))
			}
			if got := r.tail(); got != tt.want {
				t.Errorf("tail = %q, want %q", got, tt.want)
			}
		})
	}
}
