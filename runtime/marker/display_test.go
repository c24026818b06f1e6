package marker_test

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/runtime/marker"
)

const displayNonce = "3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e"

func TestDisplayFilter(t *testing.T) {
	mark := "@@agentjournal " + displayNonce + ` {"type":"progress","payload":{"summary":"Compiling"}}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no marker", "building\r\n\x1b[32mok\x1b[0m\r\n", "building\r\n\x1b[32mok\x1b[0m\r\n"},
		{"marker first", mark + "\r\nnext\r\n", "next\r\n"},
		{"marker between lines", "a\r\n" + mark + "\r\nb\r\n", "a\r\nb\r\n"},
		{"marker with a bare newline", "a\n" + mark + "\nb\n", "a\nb\n"},
		{"markers in a row", mark + "\r\n" + mark + "\r\nc", "c"},
		{"inside a line after a redraw", "50%\r" + mark + "\r\nb\n", "50%\r\r\nb\n"},
		{"inside a line after an escape", "\x1b[0m" + mark + "\nb", "\x1b[0m\nb"},
		{"a marker not yet ended", "a\n" + mark[:40], "a\n"},
		{"the word without its space", "@@agentjournalX\n", "@@agentjournalX\n"},
		{"a tail that only looks like a start", "user@", "user@"},
		{"a tail of a whole prefix", "x\n@@agentjournal ", "x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunks := range chunkings(tc.in) {
				f := marker.NewDisplayFilter()
				var got strings.Builder
				for _, c := range chunks {
					got.WriteString(f.Write(c))
				}
				got.WriteString(f.Flush())
				if got.String() != tc.want {
					t.Fatalf("in chunks %q: got %q, want %q", chunks, got.String(), tc.want)
				}
			}
		})
	}
}

// chunkings splits s whole, byte by byte, and in two at every byte.
func chunkings(s string) [][]string {
	out := [][]string{{s}}
	var bytewise []string
	for i := range len(s) {
		bytewise = append(bytewise, s[i:i+1])
	}
	out = append(out, bytewise)
	for i := 1; i < len(s); i++ {
		out = append(out, []string{s[:i], s[i:]})
	}
	return out
}

// A DisplayWriter writes what the filter lets through, the held tail at
// Flush, and reports every byte written.
func TestDisplayWriter(t *testing.T) {
	var out strings.Builder
	w := marker.NewDisplayWriter(&out)
	mark := "@@agentjournal " + displayNonce + ` {"type":"status","payload":{"summary":"x"}}` + "\r\n"
	for _, chunk := range []string{"name? ", "bob\r\n", mark[:20], mark[20:], "ok\r\n@@agent"} {
		if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", chunk, n, err, len(chunk))
		}
	}
	if got := out.String(); got != "name? bob\r\nok\r\n" {
		t.Fatalf("before Flush: %q, want the prompt and the line after the marker", got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "name? bob\r\nok\r\n@@agent" {
		t.Fatalf("after Flush: %q, want the held tail too", got)
	}
}
