package narrative_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/narrative"
)

// TestTerminalEscapesAreShownNotActed: an agent's message and prompt that
// hold a clipboard write (OSC 52), a window title (OSC 0), a cursor move and
// a bidi override come out of every document format with those characters
// written as visible escapes, since a narrative is read with cat as often as
// in a browser; the text around them and the lines are kept.
func TestTerminalEscapesAreShownNotActed(t *testing.T) {
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ref, err := s.EnsureJournal(t.Context(), storetest.Ref(eventstore.OwnerTask, "t-1", "ae-0123456789abcdef01234567"), storetest.Header("claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	const evil = "copy \x1b]52;c;cm0gLXJmIH4=\x07 title \x1b]0;pwned\x07 up \x1b[2A\x1b[2K done \u202eevil"
	prompt, _ := json.Marshal(map[string]string{"text": "prompt " + evil})
	for _, r := range []eventstore.Record{
		&eventstore.MessageAccepted{MessageID: "m-1", Source: eventstore.SourceOperator, MessageType: "prompt", Payload: prompt, MutatesContext: true},
		&eventstore.Observation{ObservationID: "o-1", Source: eventstore.ObservedProviderOutput, Confidence: eventstore.ConfidenceHigh,
			Signal: eventstore.NewSignal(&eventstore.MessageSignal{Text: "line one\nsaid " + evil})},
	} {
		r.RecordBase().OccurredAt = time.Now().UTC()
		if _, err := s.Append(t.Context(), ref, r); err != nil {
			t.Fatal(err)
		}
	}
	n, err := narrative.Execution(t.Context(), s, ref.AgentExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		format string
		audit  bool
	}{{"md", false}, {"html", false}, {"md", true}, {"html", true}} {
		out := render(t, n, f.format, f.audit)
		if i := strings.IndexFunc(out, func(r rune) bool { return r == 0x1b || r == 0x07 || r == '\u202e' }); i >= 0 {
			t.Errorf("%s (audit %v) holds a raw control at %d: %q", f.format, f.audit, i, out[max(i-20, 0):min(i+20, len(out))])
		}
		if !strings.Contains(out, `\x1b`) || !strings.Contains(out, "52;c;") || !strings.Contains(out, "line one") {
			t.Errorf("%s (audit %v) does not show the escape as text or lost the message:\n%s", f.format, f.audit, out)
		}
	}
}
