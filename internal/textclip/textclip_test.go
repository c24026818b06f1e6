package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	funcs := map[string]func(string, int) string{"Prefix": Prefix, "Bytes": Bytes, "Fit": Fit, "Runes": Runes}
	cases := []struct {
		name, fn, in string
		n            int
		want         string
	}{
		{"short", "Bytes", "ae-1", 8, "ae-1"},
		{"exact", "Bytes", "abcd", 4, "abcd"},
		{"long", "Bytes", "abcdefgh", 4, "abcd…"},
		{"empty", "Bytes", "", 0, ""},
		{"zero", "Bytes", "a", 0, "…"},
		{"cut before a rune", "Bytes", "ab€cd", 2, "ab…"},
		{"cut inside a rune", "Bytes", "ab€cd", 3, "ab…"},
		{"cut inside a rune's last byte", "Bytes", "ab€cd", 4, "ab…"},
		{"cut after a rune", "Bytes", "ab€cd", 5, "ab€…"},
		{"four-byte rune", "Bytes", "a😀b", 4, "a…"},
		{"invalid byte kept", "Bytes", "a\xffbcdef", 4, "a\xffbc…"},
		{"stray continuation bytes at the cut", "Bytes", "ab\x80\x80\x80cd", 3, "a…"},
		{"invalid but short", "Bytes", "a\xff", 4, "a\xff"},

		{"prefix whole", "Prefix", "abc", 3, "abc"},
		{"prefix cut", "Prefix", "ab€cd", 4, "ab"},
		{"prefix negative", "Prefix", "abc", -1, ""},

		{"fit short", "Fit", "short", 10, "short"},
		{"fit exact", "Fit", "exactly ten", 11, "exactly ten"},
		{"fit ellipsis inside", "Fit", "abcdefghij", 6, "abc…"},
		{"fit never cuts a rune", "Fit", "ééééé", 6, "é…"},
		{"fit replaces invalid", "Fit", "a\xffb", 10, "a\uFFFDb"},
		{"fit one replacement for a run", "Fit", "\xff\xffabc", 6, "\uFFFDabc"},
		{"fit replacement counts", "Fit", "\xffa\xffbc", 6, "\uFFFD…"},
		{"fit below the ellipsis", "Fit", "abcdef", 2, "…"},

		{"runes short", "Runes", "ééé", 3, "ééé"},
		{"runes cut", "Runes", "éééé", 3, "éé…"},
		{"runes of ASCII", "Runes", "abcdef", 4, "abc…"},
		{"runes invalid counted once each", "Runes", "\xff\xfeab", 4, "\xff\xfeab"},
		{"runes invalid written as U+FFFD", "Runes", "\xff\xfeabc", 4, "\uFFFD\uFFFDa…"},
		{"runes one", "Runes", "ab", 1, "…"},
		{"runes zero", "Runes", "ab", 0, "…"},
	}
	for _, c := range cases {
		t.Run(c.fn+"/"+c.name, func(t *testing.T) {
			got := funcs[c.fn](c.in, c.n)
			if got != c.want {
				t.Fatalf("%s(%q, %d): got %q, want %q", c.fn, c.in, c.n, got, c.want)
			}
		})
	}
}

// TestClipBounds holds each function to its bound on every cut of texts
// mixing runes of every length: Prefix and Bytes keep at most n bytes and
// end on a rune, Fit is at most n bytes of valid UTF-8, Runes at most n
// runes.
func TestClipBounds(t *testing.T) {
	texts := []string{strings.Repeat("a€é😀", 5), strings.Repeat("\xffé\x80a", 5), strings.Repeat("😀", 7)}
	for _, s := range texts {
		for n := 3; n <= len(s)+1; n++ {
			p := Prefix(s, n)
			if len(p) > n || !strings.HasPrefix(s, p) {
				t.Fatalf("Prefix(%q, %d) = %q: not a prefix of at most %d bytes", s, n, p, n)
			}
			if p != s && !utf8.RuneStart(s[len(p)]) {
				t.Fatalf("Prefix(%q, %d) = %q ends inside a rune", s, n, p)
			}
			if b := Bytes(s, n); b != s && b != p+Ellipsis {
				t.Fatalf("Bytes(%q, %d) = %q, want %q", s, n, b, p+Ellipsis)
			}
			if f := Fit(s, n); len(f) > n || !utf8.ValidString(f) {
				t.Fatalf("Fit(%q, %d) = %q: %d bytes (want at most %d), valid UTF-8 %t", s, n, f, len(f), n, utf8.ValidString(f))
			}
			if r := Runes(s, n); utf8.RuneCountInString(r) > n {
				t.Fatalf("Runes(%q, %d) = %q: %d runes, want at most %d", s, n, r, utf8.RuneCountInString(r), n)
			}
		}
	}
}
