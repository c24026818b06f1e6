package main

import (
	"strconv"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// maxQuoted bounds the free text (questions, reasons, plan items) quoted
// in a line of state, in runes, as record summaries bound theirs.
const maxQuoted = 72

// summarize describes a record in one line for the human output of journal
// cat and log: the record's summary from the record registry
// (eventstore.Summary), made termSafe, so the line never carries a control
// or bidi character.
func summarize(r eventstore.Record) string {
	return termSafe(eventstore.Summary(r))
}

// quote clips free text and quotes it, so a newline or a long text never
// breaks the one-line layout. strconv.Quote escapes every character
// termSafe does.
func quote(s string) string {
	return strconv.Quote(textclip.Runes(s, maxQuoted))
}

// clip shortens JSON or other text that is shown unquoted, and makes it
// termSafe.
func clip(s string) string {
	return termSafe(textclip.Runes(strings.Join(strings.Fields(s), " "), maxQuoted))
}
