package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
)

const testPrefix = "launch-1"

var testRef = func() eventstore.Reference {
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "task-1", "ae-provider-test")
	if err != nil {
		panic(err)
	}
	return ref
}()

// checkEvent fills the base fields of an event's record the way an appender
// would, through a journal reference, and checks that the record validates,
// encodes within the store's size limit and decodes strictly. Session and
// turn end events are checked for what the runtime relies on.
func checkEvent(seq uint64, e Event) error {
	set := 0
	for _, b := range []bool{e.Observation != nil, e.Activity != nil, e.Session != nil, e.TurnEnd != nil, e.Commands != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("event sets %d fields, want exactly one: %+v", set, e)
	}
	var r eventstore.Record
	switch {
	case e.Session != nil:
		if id := e.Session.ID; id == "" || len(id) > eventstore.MaxIDLength {
			return fmt.Errorf("session id %q is not a journal id", id)
		}
		return nil
	case e.TurnEnd != nil:
		if e.TurnEnd.Failed && e.TurnEnd.Reason == "" {
			return fmt.Errorf("failed turn end without a reason")
		}
		return nil
	case e.Commands != nil:
		for _, c := range e.Commands.List {
			if c.Name == "" {
				return fmt.Errorf("advertised command without a name: %+v", e.Commands.List)
			}
		}
		return nil
	case e.Observation != nil:
		o := *e.Observation
		if o.Base != (eventstore.Base{}) {
			return fmt.Errorf("observation %s has base fields set: %+v", o.ObservationID, o.Base)
		}
		if o.Source != eventstore.ObservedProviderOutput {
			return fmt.Errorf("observation %s: source %q, want provider-output", o.ObservationID, o.Source)
		}
		if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok && d.Adapter == "" {
			return fmt.Errorf("diagnostic %s without an adapter", o.ObservationID)
		}
		o.RecordID = eventstore.RecordID(testRef.JournalID, eventstore.KindObservation, o.ObservationID)
		r = &o
	default:
		a := *e.Activity
		if a.RecordID == "" || a.Base != (eventstore.Base{RecordID: a.RecordID}) {
			return fmt.Errorf("activity has base fields other than recordId set, or none: %+v", a.Base)
		}
		r = &a
	}
	b := r.RecordBase()
	b.Sequence = seq
	b.Type = r.Kind()
	b.SchemaVersion = eventstore.SchemaVersion
	b.JournalID = testRef.JournalID
	b.AgentExecutionID = testRef.AgentExecutionID
	b.OwnerID = testRef.OwnerID
	b.Scope = testRef.OwnerEntity
	b.OccurredAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := eventstore.Validate(r); err != nil {
		return err
	}
	data, err := eventstore.Encode(r)
	if err != nil {
		return err
	}
	if len(data) > eventstore.DefaultMaxRecordSize {
		return fmt.Errorf("%s record is %d bytes, above the store limit %d", r.Kind(), len(data), eventstore.DefaultMaxRecordSize)
	}
	if _, err := eventstore.Decode(data); err != nil {
		return fmt.Errorf("decode %s: %w", data, err)
	}
	return nil
}

// parse runs lines through a new parser and checks every event.
func parse(tb testing.TB, provider string, lines ...[]byte) []Event {
	tb.Helper()
	p, err := New(provider, testPrefix)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Event
	for _, l := range lines {
		evs := p.Parse(l)
		if len(evs) > MaxEventsPerLine+1 {
			tb.Fatalf("one line gave %d events, want at most %d", len(evs), MaxEventsPerLine+1)
		}
		out = append(out, evs...)
	}
	checkEvents(tb, out)
	return out
}

// checkEvents checks every event and that no two records share an id.
func checkEvents(tb testing.TB, evs []Event) {
	tb.Helper()
	ids := map[string]bool{}
	for i, e := range evs {
		if err := checkEvent(uint64(i+2), e); err != nil {
			tb.Fatalf("event %d (%s): %v", i, describe(e), err)
		}
		id := e.id()
		if id == "" {
			continue
		}
		if ids[id] {
			tb.Fatalf("event %d: id %s repeats", i, id)
		}
		ids[id] = true
	}
}

// id is the record id an event's record has; "" for events that are not
// appended.
func (e Event) id() string {
	switch {
	case e.Observation != nil:
		return e.Observation.ObservationID
	case e.Activity != nil:
		return e.Activity.RecordID
	}
	return ""
}

func lines(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, l := range s {
		out[i] = []byte(l)
	}
	return out
}

// describe renders an event in one line for table tests.
func describe(e Event) string {
	switch {
	case e.Session != nil:
		return "session " + e.Session.ID + " " + e.Session.AgentVersion
	case e.TurnEnd != nil && e.TurnEnd.Failed:
		return "turn failed: " + e.TurnEnd.Reason
	case e.TurnEnd != nil:
		return "turn end"
	case e.Commands != nil:
		return fmt.Sprintf("commands %d", len(e.Commands.List))
	}
	if o := e.Observation; o != nil {
		if o.Signal == nil {
			return "evidence: " + o.RawText
		}
		switch p := o.Signal.Payload.(type) {
		case *eventstore.MessageSignal:
			return "message: " + p.Text
		case *eventstore.UsageSignal:
			kind := "+"
			if p.Cumulative {
				kind = "="
			}
			return fmt.Sprintf("usage %s in=%s out=%s total=%s", kind, count(p.InputTokens), count(p.OutputTokens), count(p.TotalTokens))
		case *eventstore.CompletedClaimSignal:
			return "completed: " + p.Summary
		case *eventstore.FailedClaimSignal:
			if p.Detail != "" {
				return "failed: " + p.Reason + " | " + p.Detail
			}
			return "failed: " + p.Reason
		case *eventstore.DiagnosticSignal:
			return "diagnostic " + p.Code
		case *eventstore.PlanSignal:
			marks := map[eventstore.PlanItemStatus]string{eventstore.PlanItemOpen: " ", eventstore.PlanItemInProgress: ">",
				eventstore.PlanItemDone: "x", eventstore.PlanItemDropped: "-"}
			var items []string
			for _, it := range p.Items {
				items = append(items, "["+marks[it.Status]+"] "+it.Text)
			}
			return "plan: " + strings.Join(items, "; ")
		case *eventstore.NeedsInputSignal:
			return fmt.Sprintf("needs %s: %s %v", p.Kind, p.Question, p.Choices)
		}
		return "signal " + string(o.Signal.Type)
	}
	a := e.Activity
	parts := []string{"activity"}
	if a.Activity != "" {
		parts = append(parts, string(a.Activity))
	}
	if t := a.CurrentTarget; t != nil {
		v := t.Label
		if t.Path != "" {
			v = t.Path
			if t.Label != "" {
				v += " (" + t.Label + ")"
			}
		}
		parts = append(parts, string(t.Kind)+":"+v)
	}
	if a.Telemetry != nil && a.Telemetry.ActiveToolName != "" {
		parts = append(parts, "tool="+a.Telemetry.ActiveToolName)
	}
	if c := a.ToolCall; c != nil {
		call := "call=" + c.Name + ":" + string(c.Status)
		if c.ExitCode != nil {
			call += fmt.Sprintf(" exit=%d", *c.ExitCode)
		}
		if c.Error != "" {
			call += " error=" + strconv.Quote(c.Error)
		}
		parts = append(parts, call)
	}
	if c := a.Capabilities; c != nil && c.ToolCallActive != nil {
		parts = append(parts, fmt.Sprintf("active=%v", *c.ToolCallActive))
	}
	return strings.Join(parts, " ")
}

// describeAll describes events; advertised commands are left out, since
// TestAdvertisedCommands checks them.
func describeAll(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Commands != nil {
			continue
		}
		out = append(out, describe(e))
	}
	return out
}

func count(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// capture is one sample file of real provider output, as the lines a parser
// reads.
type capture struct {
	name  string
	size  int
	lines [][]byte
}

// loadCaptures reads every capture under testdata/<provider>. JSONL and
// NDJSON files are split into lines; a .json file holds one pretty-printed
// event (fed as one compacted line) or an array of events (one line each).
func loadCaptures(tb testing.TB, provider string) []capture {
	tb.Helper()
	var out []capture
	root := filepath.Join("testdata", provider)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ext := filepath.Ext(path)
		if ext != ".json" && ext != ".jsonl" && ext != ".ndjson" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		c := capture{name: filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator))), size: len(data)}
		if ext == ".json" {
			c.lines, err = jsonEvents(data)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		} else {
			for l := range bytes.Lines(data) {
				c.lines = append(c.lines, bytes.TrimSuffix(l, []byte("\n")))
			}
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("no captures under %s", root)
	}
	return out
}

func jsonEvents(data []byte) ([][]byte, error) {
	var raws []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, err
		}
	} else {
		raws = []json.RawMessage{data}
	}
	var out [][]byte
	for _, r := range raws {
		var b bytes.Buffer
		if err := json.Compact(&b, r); err != nil {
			return nil, err
		}
		out = append(out, b.Bytes())
	}
	return out, nil
}

func capturesByName(tb testing.TB, provider string) map[string][][]byte {
	m := map[string][][]byte{}
	for _, c := range loadCaptures(tb, provider) {
		m[c.name] = c.lines
	}
	return m
}

// TestCaptures parses every real capture: no panic, every record validates,
// the real output needs no diagnostic but the errors the CLI reported
// (provider-error), every observation carries the session id once it is
// known, and a replay gives the same events.
func TestCaptures(t *testing.T) {
	for _, provider := range Providers() {
		for _, c := range loadCaptures(t, provider) {
			t.Run(provider+"/"+c.name, func(t *testing.T) {
				evs := parse(t, provider, c.lines...)
				session := ""
				var running totals
				for _, e := range evs {
					if e.Session != nil {
						session = e.Session.ID
					}
					o := e.Observation
					if o == nil {
						continue
					}
					if d, ok := o.Signal.Payload.(*eventstore.DiagnosticSignal); ok && d.Code != CodeProviderError {
						t.Errorf("diagnostic on a real capture: %+v (raw %s)", d, o.RawText)
					}
					if u, ok := o.Signal.Payload.(*eventstore.UsageSignal); ok {
						running = running.add(u)
						if deref(running.in)+deref(running.out) != deref(running.total) {
							t.Errorf("after %s the running totals are %s, want total = in + out", describe(e), running)
						}
					}
					if got := nativeOf(o).SessionID; got != session {
						t.Errorf("observation %s (%s): native session %q, want %q", o.ObservationID, describe(e), got, session)
					}
				}
				again := parse(t, provider, c.lines...)
				if diff := cmp.Diff(evs, again); diff != "" {
					t.Errorf("a second parse of the same capture differs (-first +second):\n%s", diff)
				}
			})
		}
	}
}

func nativeOf(o *eventstore.Observation) eventstore.NativeIDs {
	if o.Native == nil {
		return eventstore.NativeIDs{}
	}
	return *o.Native
}

// totals are usage totals folded from usage signals exactly as the runtime
// folds them (execution.Usage.Add): cumulative counts replace, increments
// add, and a total the signal does not give is input plus output.
type totals struct{ in, out, total *int64 }

func (t totals) add(u *eventstore.UsageSignal) totals {
	fold := func(prev, v *int64) *int64 {
		switch {
		case v == nil:
			return prev
		case u.Cumulative || prev == nil:
			return ptr(*v)
		}
		return ptr(*prev + *v)
	}
	out := totals{fold(t.in, u.InputTokens), fold(t.out, u.OutputTokens), fold(t.total, u.TotalTokens)}
	if u.TotalTokens == nil && out.in != nil && out.out != nil {
		out.total = ptr(*out.in + *out.out)
	}
	return out
}

func (t totals) String() string {
	return fmt.Sprintf("in=%s out=%s total=%s", count(t.in), count(t.out), count(t.total))
}

// usageTrail gives the running totals after each usage observation.
func usageTrail(evs []Event) []string {
	var out []string
	var t totals
	for _, e := range evs {
		if u := usageOf(e); u != nil {
			t = t.add(u)
			out = append(out, t.String())
		}
	}
	return out
}

func finalUsage(evs []Event) totals {
	var t totals
	for _, e := range evs {
		if u := usageOf(e); u != nil {
			t = t.add(u)
		}
	}
	return t
}

func usageOf(e Event) *eventstore.UsageSignal {
	if e.Observation == nil {
		return nil
	}
	u, _ := e.Observation.Signal.Payload.(*eventstore.UsageSignal)
	return u
}

// payloads returns the signal payloads of type T among the events.
func payloads[T eventstore.SignalPayload](evs []Event) []T {
	var out []T
	for _, e := range evs {
		if e.Observation == nil {
			continue
		}
		if p, ok := e.Observation.Signal.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestKnownLineTypes: every line type a parser lists is read without an
// unknown-event diagnostic, the lists are sorted and complete, and a type
// not listed is reported once per parser, naming the adapter, the type and
// the agent version.
func TestKnownLineTypes(t *testing.T) {
	if got := KnownLineTypes("gemini"); got != nil {
		t.Errorf("KnownLineTypes(gemini) = %v, want nil", got)
	}
	for _, provider := range Providers() {
		t.Run(provider, func(t *testing.T) {
			known := KnownLineTypes(provider)
			if len(known) == 0 || !slices.IsSorted(known) {
				t.Fatalf("KnownLineTypes(%s) = %v, want a sorted, non-empty list", provider, known)
			}
			for _, typ := range known {
				evs := parse(t, provider, fmt.Appendf(nil, `{"type":%q}`, typ))
				for _, d := range payloads[*eventstore.DiagnosticSignal](evs) {
					if d.Code == CodeUnknownEvent && d.LineType == typ {
						t.Errorf("known line type %q: got %s, want no unknown-event diagnostic", typ, d.Message)
					}
				}
			}
			line := []byte(`{"type":"telepathy.started","data":{}}`)
			evs := parse(t, provider, line, line, line)
			ds := payloads[*eventstore.DiagnosticSignal](evs)
			if len(ds) != 1 {
				t.Fatalf("three lines of an unknown type gave %v, want one diagnostic", describeAll(evs))
			}
			d := ds[0]
			if d.Code != CodeUnknownEvent || d.Adapter != provider || d.LineType != "telepathy.started" {
				t.Errorf("got %+v, want code unknown-event, adapter %s, lineType telepathy.started", d, provider)
			}
			for _, want := range []string{provider, `type "telepathy.started"`, "agent version"} {
				if !strings.Contains(d.Message, want) {
					t.Errorf("message %q does not name %s", d.Message, want)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	if got, want := Providers(), []string{"acp", "claude-code", "codex", "copilot"}; !slices.Equal(got, want) {
		t.Fatalf("Providers() = %v, want %v", got, want)
	}
	for _, name := range Providers() {
		if _, err := New(name, testPrefix); err != nil {
			t.Errorf("New(%q): %v", name, err)
		}
	}
	_, err := New("gemini", testPrefix)
	if !errors.Is(err, ErrUnknownProvider) || !strings.Contains(err.Error(), "claude-code, codex, copilot") {
		t.Errorf("New(gemini) = %v, want ErrUnknownProvider listing the accepted providers", err)
	}
	for _, prefix := range []string{"", strings.Repeat("p", MaxPrefixLength+1)} {
		if _, err := New(Codex, prefix); !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("New with a %d byte prefix = %v, want ErrInvalidPrefix", len(prefix), err)
		}
	}
	// The longest prefix still gives ids within the limit on a long stream.
	p, err := New(Codex, strings.Repeat("p", MaxPrefixLength))
	if err != nil {
		t.Fatal(err)
	}
	p.(*codexParser).line = 1<<64 - 2
	for _, e := range p.Parse([]byte("garbage")) {
		if err := checkEvent(2, e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIDs pins the id scheme: "<prefix>-<line>-<index>" for observations,
// eventstore.RecordID(prefix, activity.updated, "<line>-<index>") for
// activity updates, lines counted from 1 with blank lines included.
func TestIDs(t *testing.T) {
	evs := parse(t, ClaudeCode, lines(
		``,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2}}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}`,
		`{"type":"result","subtype":"success","result":"ok","usage":{"input_tokens":1,"output_tokens":2}}`,
	)...)
	var got []string
	for _, e := range evs {
		got = append(got, e.id())
	}
	want := []string{
		"launch-1-2-0",
		eventstore.RecordID(testPrefix, eventstore.KindActivity, "2-1"),
		eventstore.RecordID(testPrefix, eventstore.KindActivity, "3-0"),
		"launch-1-4-0", // usage
		"launch-1-4-1", // the claim
		"",             // the turn end is not appended
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
}

// TestGarbage feeds every parser lines that are not its events.
func TestGarbage(t *testing.T) {
	huge := append([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"`), bytes.Repeat([]byte("x"), MaxLineBytes)...)
	huge = append(huge, `"}]}}`...)
	tests := []struct {
		name string
		line []byte
		want []string // describe() of the events
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
	for _, provider := range Providers() {
		for _, tt := range tests {
			t.Run(provider+"/"+tt.name, func(t *testing.T) {
				evs := parse(t, provider, tt.line)
				if diff := cmp.Diff(tt.want, describeAll(evs)); diff != "" {
					t.Fatalf("events (-want +got):\n%s", diff)
				}
				if len(evs) == 0 {
					return
				}
				o := evs[0].Observation
				if o.Confidence != eventstore.ConfidenceDiagnostic {
					t.Errorf("confidence %s, want diagnostic", o.Confidence)
				}
				if len(o.RawText) > maxRawBytes {
					t.Errorf("rawText is %d bytes, want at most %d", len(o.RawText), maxRawBytes)
				}
				if tt.raw != "" && o.RawText != tt.raw {
					t.Errorf("rawText %q, want %q", o.RawText, tt.raw)
				}
			})
		}
	}
}

func TestUnknownEventMessage(t *testing.T) {
	for _, provider := range Providers() {
		evs := parse(t, provider, []byte(`{"type":"telepathy.started"}`))
		d := evs[0].Observation.Signal.Payload.(*eventstore.DiagnosticSignal)
		if d.Code != CodeUnknownEvent || !strings.Contains(d.Message, `type "telepathy.started"`) {
			t.Errorf("%s: diagnostic %+v, want unknown-event naming the type", provider, d)
		}
	}
	// The agent version, once known, is in the diagnostic and its message.
	evs := parse(t, ClaudeCode, lines(
		`{"type":"system","subtype":"init","session_id":"s1","claude_code_version":"2.1.328"}`,
		`{"type":"telepathy","session_id":"s1"}`,
	)...)
	d := payloads[*eventstore.DiagnosticSignal](evs)[0]
	if d.AgentVersion != "2.1.328" || !strings.Contains(d.Message, "agent version 2.1.328") {
		t.Errorf("got %+v, want agent version 2.1.328 in the diagnostic and its message", d)
	}
}

// TestTooManyEvents: one line cannot flood the journal.
func TestTooManyEvents(t *testing.T) {
	var blocks []string
	for i := range 200 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"t%d"}`, i))
	}
	line := `{"type":"assistant","message":{"id":"m","content":[` + strings.Join(blocks, ",") + `]}}`
	evs := parse(t, ClaudeCode, []byte(line))
	if len(evs) != MaxEventsPerLine+1 {
		t.Fatalf("got %d events, want %d", len(evs), MaxEventsPerLine+1)
	}
	if got := describe(evs[len(evs)-1]); got != "diagnostic too-many-events" {
		t.Errorf("last event %q, want the too-many-events diagnostic", got)
	}
}

// TestBounds: a hostile stream cannot grow the parser's memory.
func TestBounds(t *testing.T) {
	p, _ := New(ClaudeCode, testPrefix)
	cp := p.(*claudeParser)
	for i := range MaxOpenToolCalls + 500 {
		p.Parse(fmt.Appendf(nil, `{"type":"assistant","uuid":"u%d","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"f"}}],"usage":{"output_tokens":1}}}`, i, i, i))
	}
	if n := len(cp.open); n != MaxOpenToolCalls {
		t.Errorf("%d open calls tracked, want %d", n, MaxOpenToolCalls)
	}
	if n := len(cp.steps.m); n > maxRemembered {
		t.Errorf("%d step usages remembered, want at most %d", n, maxRemembered)
	}
	if n := len(cp.closed.m); n > maxRemembered {
		t.Errorf("%d closed calls remembered, want at most %d", n, maxRemembered)
	}
	if n := len(cp.seenIDs.m); n > maxRemembered {
		t.Errorf("%d event ids remembered, want at most %d", n, maxRemembered)
	}
	// The oldest call was forgotten: its result is ignored.
	if evs := p.Parse([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t0"}]}}`)); len(evs) != 0 {
		t.Errorf("result of a forgotten call gave %v, want nothing", describeAll(evs))
	}
	// Unknown types are remembered within bounds too.
	for i := range maxRemembered + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"unknown-%d"}`, i))
	}
	if n := len(cp.unknowns.m); n > maxRemembered {
		t.Errorf("%d unknown types remembered, want at most %d", n, maxRemembered)
	}
	// So are the todo lists of TodoWrite calls that have not ended.
	for i := range maxPendingPlans + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"assistant","message":{"id":"p%d","content":[{"type":"tool_use","id":"todo%d","name":"TodoWrite","input":{"todos":[{"content":"x","status":"pending"}]}}]}}`, i, i))
	}
	if n := len(cp.plans.m); n > maxPendingPlans {
		t.Errorf("%d pending plans remembered, want at most %d", n, maxPendingPlans)
	}
	// A huge tool id is bounded as a key.
	long := strings.Repeat("k", 100_000)
	p.Parse(fmt.Appendf(nil, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":%q,"name":"Bash"}]}}`, long))
	for id := range cp.open {
		if len(id) > maxKeyBytes {
			t.Fatalf("an open call is keyed by %d bytes, want at most %d", len(id), maxKeyBytes)
		}
	}
}

// TestCopilotBounds: the sql calls waiting for their end and the todos
// table stay within bounds.
func TestCopilotBounds(t *testing.T) {
	p, _ := New(Copilot, testPrefix)
	cp := p.(*copilotParser)
	for i := range maxSQLCalls + 10 {
		p.Parse(fmt.Appendf(nil, `{"type":"tool.execution_start","id":"s%d","data":{"toolCallId":"c%d","toolName":"sql","arguments":{"query":"INSERT INTO todos (id, title) VALUES ('a%d', 'x')"}}}`, i, i, i))
	}
	if n := len(cp.sqlCalls.m); n > maxSQLCalls {
		t.Errorf("%d sql calls remembered, want at most %d", n, maxSQLCalls)
	}
	var values []string
	for i := range maxPlanItems + 50 {
		values = append(values, fmt.Sprintf("('t%d', 'todo %d')", i, i))
	}
	q, _ := json.Marshal("INSERT INTO todos (id, title) VALUES " + strings.Join(values, ", "))
	evs := parse(t, Copilot,
		fmt.Appendf(nil, `{"type":"tool.execution_start","id":"b1","data":{"toolCallId":"big","toolName":"sql","arguments":{"query":%s}}}`, q),
		[]byte(`{"type":"tool.execution_complete","id":"b2","data":{"toolCallId":"big","success":true}}`))
	plans := payloads[*eventstore.PlanSignal](evs)
	if len(plans) != 1 || len(plans[0].Items) != maxPlanItems {
		t.Fatalf("got %d plans, want one of %d items", len(plans), maxPlanItems)
	}
	// A query too long to follow leaves the table unknown: no plan at all.
	long, _ := json.Marshal("UPDATE todos SET status = 'done' WHERE id = '" + strings.Repeat("x", maxSQLBytes) + "'")
	p2, _ := New(Copilot, testPrefix)
	p2.Parse(fmt.Appendf(nil, `{"type":"tool.execution_start","id":"l1","data":{"toolCallId":"l","toolName":"sql","arguments":{"query":%s}}}`, long))
	if !p2.(*copilotParser).todos.unknown {
		t.Error("a query over maxSQLBytes left the table known, want unknown")
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"abcdefghij", 6, "abc…"},
		{"ééééé", 6, "é…"}, // never cuts a rune in half
		{"a\xffb", 10, "a\uFFFDb"},
	}
	for _, tt := range tests {
		got := clip(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if len(got) > tt.max && len(tt.in) > tt.max {
			t.Errorf("clip(%q, %d) is %d bytes", tt.in, tt.max, len(got))
		}
	}
}

// TestLongText: long assistant text and commands are clipped to fit a record.
func TestLongText(t *testing.T) {
	text := strings.Repeat("\u0001", 300<<10) // six bytes each in JSON: a 3.6 MB line
	line, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
		map[string]any{"type": "text", "text": text},
		map[string]any{"type": "tool_use", "id": "t", "name": "Bash", "input": map[string]any{"command": text}},
	}}})
	evs := parse(t, ClaudeCode, line) // parse checks the encoded size
	if n := len(evs[0].Observation.Signal.Payload.(*eventstore.MessageSignal).Text); n > maxTextBytes {
		t.Errorf("message text is %d bytes, want at most %d", n, maxTextBytes)
	}
}
