package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// TestReader runs the contract every agent's reader keeps, on a's captures
// under testdata: the captures read cleanly, every line type a lists is
// known, garbage becomes diagnostics, and an unknown type names itself.
func TestReader(t *testing.T, a agent.Agent) {
	t.Run("Captures", func(t *testing.T) { testCaptures(t, a) })
	t.Run("KnownLineTypes", func(t *testing.T) { testKnownLineTypes(t, a) })
	t.Run("Garbage", func(t *testing.T) { testGarbage(t, a) })
	t.Run("UnknownEventMessage", func(t *testing.T) { testUnknownEventMessage(t, a) })
}

// testCaptures parses every real capture: no panic, every record
// validates, the real output needs no diagnostic but the errors the CLI
// reported (provider-error), every observation carries the session id once
// it is known, and a replay gives the same events.
func testCaptures(t *testing.T, a agent.Agent) {
	for _, c := range LoadCaptures(t) {
		t.Run(c.Name, func(t *testing.T) {
			evs := Parse(t, a, c.Lines...)
			session := ""
			var running Totals
			for _, e := range evs {
				if e.Session != nil {
					session = e.Session.ID
				}
				o := e.Observation
				if o == nil {
					continue
				}
				if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok && d.Code != agent.CodeProviderError {
					t.Errorf("diagnostic on a real capture: %+v (raw %s)", d, o.RawText)
				}
				if u, ok := o.Signal.Payload.(*eventstore.UsageSignal); ok {
					running = running.Add(u)
					if agent.Deref(running.In)+agent.Deref(running.Out) != agent.Deref(running.Total) {
						t.Errorf("after %s the running totals are %s, want total = in + out", Describe(e), running)
					}
				}
				if got := NativeOf(o).SessionID; got != session {
					t.Errorf("observation %s (%s): native session %q, want %q", o.ObservationID, Describe(e), got, session)
				}
			}
			again := Parse(t, a, c.Lines...)
			if diff := cmp.Diff(evs, again); diff != "" {
				t.Errorf("a second parse of the same capture differs (-first +second):\n%s", diff)
			}
		})
	}
}

// testKnownLineTypes: every line type a parser lists is read without an
// unknown-event diagnostic, the list is sorted and complete, and a type
// not listed is reported once per parser, naming the adapter, the type and
// the agent version.
func testKnownLineTypes(t *testing.T, a agent.Agent) {
	provider := a.Provider()
	known := a.LineTypes()
	if len(known) == 0 || !slices.IsSorted(known) {
		t.Fatalf("%s LineTypes() = %v, want a sorted, non-empty list", provider, known)
	}
	for _, typ := range known {
		evs := Parse(t, a, fmt.Appendf(nil, `{"type":%q}`, typ))
		for _, d := range Payloads[*eventstore.DiagnosticSignal](evs) {
			if d.Code == agent.CodeUnknownEvent && d.LineType == typ {
				t.Errorf("known line type %q: got %s, want no unknown-event diagnostic", typ, d.Message)
			}
		}
	}
	line := []byte(`{"type":"telepathy.started","data":{}}`)
	evs := Parse(t, a, line, line, line)
	ds := Payloads[*eventstore.DiagnosticSignal](evs)
	if len(ds) != 1 {
		t.Fatalf("three lines of an unknown type gave %v, want one diagnostic", DescribeAll(evs))
	}
	d := ds[0]
	if d.Code != agent.CodeUnknownEvent || d.Adapter != provider || d.LineType != "telepathy.started" {
		t.Errorf("got %+v, want code unknown-event, adapter %s, lineType telepathy.started", d, provider)
	}
	for _, want := range []string{provider, `type "telepathy.started"`, "agent version"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("message %q does not name %s", d.Message, want)
		}
	}
}

// testGarbage feeds the parser lines that are not its events.
func testGarbage(t *testing.T, a agent.Agent) {
	huge := append([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"`), bytes.Repeat([]byte("x"), agent.MaxLineBytes)...)
	huge = append(huge, `"}]}}`...)
	tests := []struct {
		name string
		line []byte
		want []string // Describe() of the events
		raw  string   // expected rawText of the first event
	}{
		{"blank", []byte("  \r\n"), nil, ""},
		{"not json", []byte("Error: not logged in"), []string{"diagnostic malformed-line"}, "Error: not logged in"},
		{"truncated", []byte(`{"type":"result","result":"do`), []string{"diagnostic malformed-line"}, `{"type":"result","result":"do`},
		{"array", []byte(`[1,2]`), []string{"diagnostic bad-event"}, "[1,2]"},
		{"string", []byte(`"hello"`), []string{"diagnostic bad-event"}, `"hello"`},
		{"null", []byte(`null`), []string{"diagnostic unknown-event"}, "null"},
		{"no type", []byte(`{"x":1}`), []string{"diagnostic unknown-event"}, `{"x":1}`},
		{"unknown type", []byte(`{"type":"telepathy.started","data":{}}`), []string{"diagnostic unknown-event"}, `{"type":"telepathy.started","data":{}}`},
		{"invalid utf-8", []byte("\xff\xfe{"), []string{"diagnostic malformed-line"}, "\uFFFD{"},
		{"huge", huge, []string{"diagnostic line-too-long"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := Parse(t, a, tt.line)
			if diff := cmp.Diff(tt.want, DescribeAll(evs)); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			if len(evs) == 0 {
				return
			}
			o := evs[0].Observation
			if o.Confidence != eventstore.ConfidenceDiagnostic {
				t.Errorf("confidence %s, want diagnostic", o.Confidence)
			}
			if len(o.RawText) > agent.MaxRawBytes {
				t.Errorf("rawText is %d bytes, want at most %d", len(o.RawText), agent.MaxRawBytes)
			}
			if tt.raw != "" && o.RawText != tt.raw {
				t.Errorf("rawText %q, want %q", o.RawText, tt.raw)
			}
		})
	}
}

// testUnknownEventMessage: an unknown line type is named in its
// diagnostic.
func testUnknownEventMessage(t *testing.T, a agent.Agent) {
	evs := Parse(t, a, []byte(`{"type":"telepathy.started"}`))
	d := evs[0].Observation.Signal.Payload.(*eventstore.DiagnosticSignal)
	if d.Code != agent.CodeUnknownEvent || !strings.Contains(d.Message, `type "telepathy.started"`) {
		t.Errorf("%s: diagnostic %+v, want unknown-event naming the type", a.Provider(), d)
	}
}

// FuzzReader feeds a fuzzed stream, split into lines, to a new reader of
// a: it must never panic, and every event must validate as a journal
// record. The seeds are every capture under testdata as a stream, one line
// of each kind (type and subtype) alone, and seeds.
func FuzzReader(f *testing.F, a agent.Agent, seeds ...string) {
	// More lines than one of each kind would slow the fuzzer's start
	// without adding shapes.
	kinds := map[string]bool{}
	for _, c := range LoadCaptures(f) {
		f.Add(bytes.Join(c.Lines, []byte("\n")))
		for _, l := range c.Lines {
			var k struct{ Type, Subtype string }
			_ = json.Unmarshal(l, &k)
			if !kinds[k.Type+"/"+k.Subtype] {
				kinds[k.Type+"/"+k.Subtype] = true
				f.Add(l)
			}
		}
	}
	for _, seed := range append([]string{
		"", "\n\n", "garbage", `{"type":`, `[1,2,3]`, `null`, `{"type":"hologram"}`,
	}, seeds...) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		p := NewReader(t, a)
		var evs []agent.Event
		for _, l := range bytes.Split(stream, []byte("\n")) {
			got := p.Parse(l)
			if len(got) > agent.MaxEventsPerLine+1 {
				t.Fatalf("one line gave %d events, want at most %d", len(got), agent.MaxEventsPerLine+1)
			}
			evs = append(evs, got...)
		}
		if fl, ok := p.(agent.Flusher); ok {
			evs = append(evs, fl.Flush()...)
		}
		CheckEvents(t, evs)
	})
}

// BenchmarkReader parses the real captures of a (testdata/real), each with
// a new reader as a launch would, and decodes the same lines with a raw
// json.Unmarshal into map[string]any beside it, the floor of any reading of
// them. It reports both rates in lines/s and the ratio of the parse time to
// the raw decode time; ns/op covers both passes.
func BenchmarkReader(b *testing.B, a agent.Agent) {
	var captures [][][]byte
	lines, size := 0, 0
	for _, c := range LoadCaptures(b) {
		if !strings.HasPrefix(c.Name, "real/") {
			continue
		}
		captures = append(captures, c.Lines)
		for _, l := range c.Lines {
			lines++
			size += len(l) + 1
		}
	}
	if lines == 0 {
		b.Fatalf("no real captures for %s", a.Provider())
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var parse, raw time.Duration
	for b.Loop() {
		start := time.Now()
		for _, c := range captures {
			p := NewReader(b, a)
			for _, l := range c {
				p.Parse(l)
			}
		}
		parse += time.Since(start)
		start = time.Now()
		for _, c := range captures {
			for _, l := range c {
				var v map[string]any
				_ = json.Unmarshal(l, &v)
			}
		}
		raw += time.Since(start)
	}
	n := float64(b.N) * float64(lines)
	b.ReportMetric(n/parse.Seconds(), "lines/s")
	b.ReportMetric(n/raw.Seconds(), "json-lines/s")
	b.ReportMetric(parse.Seconds()/raw.Seconds(), "parse/json")
}

// CaptureCase is what a parser must make of one capture under testdata.
type CaptureCase struct {
	Capture string   // the capture's name, as CapturesByName keys it
	Want    []string // the events, as Describe writes them
}

// CheckCaptures checks, in a subtest a case, that the events a's parser
// makes of each case's capture are the case's.
func CheckCaptures(t *testing.T, a agent.Agent, cases []CaptureCase) {
	t.Helper()
	c := CapturesByName(t)
	for _, tt := range cases {
		t.Run(tt.Capture, func(t *testing.T) {
			lines, ok := c[tt.Capture]
			if !ok {
				t.Fatalf("no capture %s", tt.Capture)
			}
			got := DescribeAll(Parse(t, a, lines...))
			if diff := cmp.Diff(tt.Want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// LineCase is what a parser must make of a few lines of output.
type LineCase struct {
	Name  string
	Lines []string // the lines, without their newlines
	Want  []string // the events, as Describe writes them
}

// CheckLines checks, in a subtest a case, that the events a's parser makes
// of each case's lines are the case's.
func CheckLines(t *testing.T, a agent.Agent, cases []LineCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			got := DescribeAll(Parse(t, a, Lines(tt.Lines...)...))
			if diff := cmp.Diff(tt.Want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
