package termtext

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, line, doc, strip string }{
		{"plain text", "plain text", "plain text", "plain text"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc", "a\nb\tc"},
		{"\x1b]52;c;aGk=\x07copied", `\x1b]52;c;aGk=\acopied`, `\x1b]52;c;aGk=\acopied`, "]52;c;aGk=copied"},
		{"\x1b]0;title\x07\x1b[2J", `\x1b]0;title\a\x1b[2J`, `\x1b]0;title\a\x1b[2J`, "]0;title[2J"},
		{"abc\u202edef", `abc\u202edef`, `abc\u202edef`, "abcdef"},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`, "badbyte"},
		{"crlf\r\n", `crlf\r\n`, "crlf\\r\n", "crlf\n"},
		{"C:\\path\\x1b", `C:\path\x1b`, `C:\path\x1b`, `C:\path\x1b`},
		{"emoji 👩‍💻", "emoji 👩‍💻", "emoji 👩‍💻", "emoji 👩‍💻"},
	} {
		if got := Escape(c.in); got != c.line {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := EscapeDocument(c.in); got != c.doc {
			t.Errorf("EscapeDocument(%q) = %q, want %q", c.in, got, c.doc)
		}
		if got := Strip(c.in); got != c.strip {
			t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.strip)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b[2J", "\u202e", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), EscapeDocument(s), Strip(s)} {
			for _, r := range out {
				if Hidden(r) && r != '\n' && r != '\t' {
					t.Fatalf("%q keeps hidden %U", out, r)
				}
			}
		}
		for _, r := range Escape(s) {
			if r == '\n' || r == '\t' {
				t.Fatalf("Escape(%q) keeps a line feed or tab", s)
			}
		}
	})
}
