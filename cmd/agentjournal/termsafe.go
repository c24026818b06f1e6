package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ids and texts in a journal come from agents, and human output goes to an
// operator's terminal. A control character there can clear the screen, set
// the window title or forge a line; a bidi control can make a line read
// differently from what it holds. So every human output line goes through
// termSafe, which writes those characters as visible escapes, and every JSON
// output through jsonSafe.

// hidden reports whether r is shown as an escape: a C0 or C1 control or
// DEL, a bidi control (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069), or a line or paragraph separator. Other Unicode, format
// characters such as the emoji zero-width joiner among them, is kept.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// termSafe returns s with every hidden character written as a Go escape
// (\n, \r, \t, \x1b, \x00, \u0085, \u202e) and every byte that is not UTF-8
// as \xNN, so the line shows what the record holds and cannot rewrite the
// terminal. Backslashes stay as they are, so paths and commands read as
// written; text that spells an escape out can only look like one.
func termSafe(s string) string {
	i := unsafeAt(s)
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
		case hidden(r):
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

// unsafeAt returns the index of the first hidden character or invalid byte
// in s, or -1.
func unsafeAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || hidden(r) {
			return i
		}
		i += n
	}
	return -1
}

// writeLine writes one line of human output: the formatted text made
// termSafe, then a newline. The formats themselves hold no control
// characters, so only what the arguments carry is escaped.
func writeLine(w io.Writer, format string, args ...any) error {
	_, err := io.WriteString(w, termSafe(fmt.Sprintf(format, args...))+"\n")
	return err
}

// jsonSafe rewrites the characters encoding/json leaves raw but a terminal
// acts on, DEL, C1 controls and bidi controls, as \u escapes. Outside JSON
// strings such characters cannot occur, so the result is the same JSON
// value; the C0 controls are escaped by the encoder already, and the
// indentation's newlines are kept.
func jsonSafe(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf && data[i] != 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r >= 0x7f && hidden(r) {
			if out == nil {
				out = make([]byte, 0, len(data)+12)
			}
			out = append(out, data[last:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			last = i + n
		}
		i += n
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
