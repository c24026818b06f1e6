package main

import (
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/internal/termtext"
)

// Ids and texts in a journal come from agents, and human output goes to an
// operator's terminal. A control character there can clear the screen, set
// the window title or forge a line; a bidi control can make a line read
// differently from what it holds. So every human output line goes through
// termSafe, which writes those characters as visible escapes, and every JSON
// output through jsonSafe.

// hidden is termtext.Hidden: the characters shown as escapes.
func hidden(r rune) bool { return termtext.Hidden(r) }

// termSafe is termtext.Escape: s with every hidden character written as a
// visible escape.
func termSafe(s string) string { return termtext.Escape(s) }

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
