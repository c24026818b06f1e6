package eventstore

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolOutputExcerpt(t *testing.T) {
	long := "first line\n" + strings.Repeat("é", 3000) + "\nFAIL: TestX (exit 1)"
	cases := []struct {
		name      string
		in        string
		wantWhole int64
		wantStart string
		wantEnd   string
	}{
		{"short output is whole", "ok\n", 0, "ok\n", "ok\n"},
		{"exactly the cap is whole", strings.Repeat("a", MaxToolOutputBytes), 0, "aaa", "aaa"},
		{"long output keeps start and end", long, int64(len(long)), "first line\n", "\nFAIL: TestX (exit 1)"},
		{"invalid bytes become U+FFFD", "a\xffb", 0, "a\uFFFDb", "a\uFFFDb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, whole := ToolOutputExcerpt(c.in)
			if whole != c.wantWhole {
				t.Errorf("whole = %d, want %d", whole, c.wantWhole)
			}
			if !strings.HasPrefix(got, c.wantStart) || !strings.HasSuffix(got, c.wantEnd) {
				t.Errorf("excerpt %.40q…%.40q, want it to start with %q and end with %q", got, got[max(0, len(got)-40):], c.wantStart, c.wantEnd)
			}
			if !utf8.ValidString(got) {
				t.Errorf("excerpt is not valid UTF-8")
			}
			if n := len(got); n > MaxToolOutputBytes+MaxToolOutputMarker {
				t.Errorf("excerpt of %d bytes, want at most %d", n, MaxToolOutputBytes+MaxToolOutputMarker)
			}
			a := &ActivityUpdated{Base: base(KindActivity, 7), ToolCall: &ToolCall{Name: "Bash", Status: ToolCallSucceeded, Output: got, OutputBytes: whole}}
			if err := Validate(a); err != nil {
				t.Errorf("Validate refuses the excerpt: %v", err)
			}
		})
	}
}

// TestToolOutputExcerptSaysWhatWasLeftOut: the marker counts the bytes
// between the start and the end kept, so that start, marker count and end
// add up to the whole.
func TestToolOutputExcerptSaysWhatWasLeftOut(t *testing.T) {
	in := strings.Repeat("0123456789", 500)
	got, whole := ToolOutputExcerpt(in)
	head, rest, ok := strings.Cut(got, "\n… ")
	if !ok {
		t.Fatalf("excerpt has no marker: %q", got)
	}
	n, tail, ok := strings.Cut(rest, " bytes left out …\n")
	if !ok {
		t.Fatalf("marker not closed: %q", rest)
	}
	if want := len(in) - len(head) - len(tail); n != strconv.Itoa(want) {
		t.Errorf("marker says %s bytes left out, want %d", n, want)
	}
	if whole != int64(len(in)) || head != in[:len(head)] || tail != in[len(in)-len(tail):] {
		t.Errorf("excerpt does not keep the output's start and end, or whole = %d (want %d)", whole, len(in))
	}
}
