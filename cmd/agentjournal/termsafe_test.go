package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestTermSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"ascii", "go test ./auth/... -run 'Login$'", "go test ./auth/... -run 'Login$'"},
		{"accents, CJK and emoji", "café 日本語 🚀 👩‍💻", "café 日本語 🚀 👩‍💻"},
		{"backslashes", `C:\src\app \x1b`, `C:\src\app \x1b`},
		{"clear screen", "\x1b[2J", `\x1b[2J`},
		{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"line breaks and tab", "a\r\nb\tc", `a\r\nb\tc`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`},
		{"C1 CSI and NEL", "\u009b2J\u0085", `\u009b2J\u0085`},
		{"bidi overrides", "\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"not UTF-8", "t-\xff\xfe", `t-\xff\xfe`},
		{"truncated rune", "日\xe6\x97", `日\xe6\x97`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := termSafe(tc.in)
			if got != tc.want {
				t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for i, r := range got {
				if hidden(r) {
					t.Errorf("termSafe(%q) = %q, which still holds %q at %d", tc.in, got, r, i)
				}
			}
			if again := termSafe(got); again != got {
				t.Errorf("termSafe twice = %q, want %q as after once", again, got)
			}
		})
	}
}

func TestWriteLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeLine(&b, "%-6s|%s", "id\x1b", "a\nFAKE"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `id\x1b   |a\nFAKE`+"\n"; got != want {
		t.Errorf("writeLine wrote %q, want %q", got, want)
	}
}

func TestJSONSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     string
		want   string // the JSON encoding/json writes, made jsonSafe
		indent bool
	}{
		{"plain", "café 日本 🚀", `"café 日本 🚀"`, false},
		{"C0 escaped by the encoder already", "\x1b[2J\x00\r\n", `"\u001b[2J\u0000\r\n"`, false},
		{"DEL and C1", "a\x7fb\u009bc\u0085", `"a\u007fb\u009bc\u0085"`, false},
		{"bidi", "\u202eevil\u2066", `"\u202eevil\u2066"`, false},
		{"separators", "\u2028\u2029", `"\u2028\u2029"`, false},
		{"indented", "\u202e", "{\n  \"text\": \"\\u202e\"\n}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			var err error
			if tc.indent {
				data, err = json.MarshalIndent(map[string]string{"text": tc.in}, "", "  ")
			} else {
				data, err = json.Marshal(tc.in)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := jsonSafe(data)
			if string(got) != tc.want {
				t.Errorf("jsonSafe(%s) = %s, want %s", data, got, tc.want)
			}
			var back any
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("jsonSafe output %s is not JSON: %v", got, err)
			}
			if tc.indent {
				back = back.(map[string]any)["text"]
			}
			if back != tc.in {
				t.Errorf("jsonSafe output decodes to %q, want %q", back, tc.in)
			}
			if strings.ContainsAny(string(got), "\x7f\u0085\u009b\u202e\u2066") {
				t.Errorf("jsonSafe output %q still holds a raw control or bidi character", got)
			}
		})
	}
}
