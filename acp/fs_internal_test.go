package acp

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// splitLines is what fs/read_text_file returned before reads streamed: the
// whole text split after each line feed, lines from (0-based) on, limit of
// them (all for a negative limit). readLines must agree with it.
func splitLines(text string, from, limit int) string {
	lines := strings.SplitAfter(text, "\n")
	from = min(from, len(lines))
	to := len(lines)
	if limit >= 0 {
		to = min(from+limit, len(lines))
	}
	return strings.Join(lines[from:to], "")
}

func TestReadLines(t *testing.T) {
	for _, tt := range []struct {
		name        string
		text        string
		from, limit int
		want        string
	}{
		{"whole", "a\nb\nc\n", 0, -1, "a\nb\nc\n"},
		{"no final line feed", "a\nb", 0, -1, "a\nb"},
		{"one line", "a\nb\nc\n", 1, 1, "b\n"},
		{"from the middle on", "a\nb\nc", 1, -1, "b\nc"},
		{"limit past the end", "a\nb\n", 1, 10, "b\n"},
		{"from past the end", "a\nb\n", 5, 1, ""},
		{"limit zero", "a\nb\n", 0, 0, ""},
		{"empty", "", 0, -1, ""},
		{"long line", strings.Repeat("x", 200<<10) + "\ny\n", 1, 1, "y\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readLines(context.Background(), strings.NewReader(tt.text), tt.from, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadLinesBounds: a range over maxReadBytes, or one starting beyond
// maxScanBytes, is refused as too large, whatever the file holds after.
func TestReadLinesBounds(t *testing.T) {
	big := strings.NewReader(strings.Repeat("x", maxReadBytes+1))
	if _, err := readLines(context.Background(), big, 0, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a line of %d bytes: got %v, want ErrTooLarge", maxReadBytes+1, err)
	}
	far := strings.NewReader(strings.Repeat("x", maxScanBytes) + "\nlast\n")
	if _, err := readLines(context.Background(), far, 1, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a line beyond %d bytes: got %v, want ErrTooLarge", maxScanBytes, err)
	}
}

// FuzzReadLines holds the streaming read equal to splitting the whole text.
func FuzzReadLines(f *testing.F) {
	f.Add("a\nb\nc\n", 1, 1)
	f.Add("\n\n\n", 0, -1)
	f.Add("no line feed", 3, 2)
	f.Fuzz(func(t *testing.T, text string, from, limit int) {
		if from < 0 || from > 1<<20 || limit > 1<<20 {
			return
		}
		got, err := readLines(context.Background(), strings.NewReader(text), from, limit)
		if err != nil {
			t.Fatal(err)
		}
		if want := splitLines(text, from, limit); got != want {
			t.Errorf("readLines(%q, %d, %d) = %q, want %q", text, from, limit, got, want)
		}
	})
}
