package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	cases := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "ae-1", 8, "ae-1"},
		{"exact", "abcd", 4, "abcd"},
		{"long", "abcdefgh", 4, "abcd…(8 bytes)"},
		{"inside a rune", "ab€cd", 3, "ab…(7 bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := clip(c.in, c.n)
			if got != c.want {
				t.Fatalf("clip(%q, %d): got %q, want %q", c.in, c.n, got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("clip(%q, %d): got %q, want valid UTF-8", c.in, c.n, got)
			}
		})
	}
}

// TestWriteErrorLogBounded: an internal error is logged with its route and
// error clipped, however long the request made them.
func TestWriteErrorLogBounded(t *testing.T) {
	const maxLogLine = 2 << 10
	var buf bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&buf, nil))}
	long := strings.Repeat("a", 10<<10)
	w := httptest.NewRecorder()
	s.writeError(w, httptest.NewRequest("POST", "/v1/executions/"+long+"/messages", nil), errors.New("append to "+long+": refused"))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "request failed") {
		t.Fatalf("log %q, want one line saying the request failed", buf.String())
	}
	if len(lines[0]) > maxLogLine {
		t.Fatalf("a log line of %d bytes, want at most %d", len(lines[0]), maxLogLine)
	}
	for _, want := range []string{"POST /v1/executions/aaaa", "append to aaaa", "bytes)"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %.300q lacks %q", lines[0], want)
		}
	}
}
