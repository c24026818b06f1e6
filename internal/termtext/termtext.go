package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is shown as an escape: a C0 or C1 control or
// DEL, a bidi control (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069), or a line or paragraph separator. Other Unicode, format
// characters such as the emoji zero-width joiner among them, is kept.
func Hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// Escape returns s with every hidden character written as a Go escape
// (\n, \r, \t, \x1b, \x00, \u0085, \u202e) and every byte that is not UTF-8
// as \xNN, so the line shows what the record holds and cannot rewrite the
// terminal. Backslashes stay as they are, so paths and commands read as
// written; text that spells an escape out can only look like one.
func Escape(s string) string { return escape(s, false) }

// EscapeDocument is Escape for a document of many lines: line feeds and
// tabs are kept.
func EscapeDocument(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	i := unsafeAt(s, lines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Hidden(r) && !(lines && kept(r)):
			// QuoteRune picks \n, \x1b, \u202e; drop its quotes.
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// kept are the controls a document keeps.
func kept(r rune) bool { return r == '\n' || r == '\t' }

// unsafeAt returns the index of the first hidden character or invalid byte
// in s, or -1.
func unsafeAt(s string, lines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || lines && (c == '\n' || c == '\t') {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Hidden(r) {
			return i
		}
		i += n
	}
	return -1
}

// Strip returns s without what a terminal would act on instead of showing:
// every hidden character but the line feed and the tab, and bytes that are
// not UTF-8.
func Strip(s string) string {
	return strings.Map(func(r rune) rune {
		if kept(r) {
			return r
		}
		if Hidden(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
}
