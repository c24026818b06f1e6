package textclip

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks where text was cut. It is three bytes and one rune.
const Ellipsis = "…"

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence: when s[n] continues a sequence, the cut
// moves back to the byte that starts it. s is returned whole when it is at
// most n bytes.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Bytes returns s when it is at most n bytes, else its Prefix of n bytes
// followed by Ellipsis.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Ellipsis
}

// Fit returns s as valid UTF-8 (each run of invalid bytes replaced by one
// U+FFFD) in at most n bytes, Ellipsis included when it cuts. For n below
// the ellipsis's three bytes a cut returns the ellipsis alone.
func Fit(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	return Prefix(s, n-len(Ellipsis)) + Ellipsis
}

// Runes returns s when it holds at most n runes, else its first n-1 runes
// followed by Ellipsis, n runes in all. Counting runes, it reads each
// invalid byte as one U+FFFD, and a cut writes it so. For n below 1 a cut
// returns the ellipsis alone.
func Runes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:max(n-1, 0)]) + Ellipsis
}
