package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// Prefix is the id prefix of the streams the helpers parse.
const Prefix = "launch-1"

// ref is the journal the checked records are given.
var ref = func() eventstore.Reference {
	ref, err := eventstore.NewReference(eventstore.OwnerTask, "task-1", "ae-provider-test")
	if err != nil {
		panic(err)
	}
	return ref
}()

// CheckEvent fills the base fields of an event's record the way an appender
// would, through a journal reference, and checks that the record validates,
// encodes within the store's size limit and decodes strictly. Session and
// turn end events are checked for what the runtime relies on.
func CheckEvent(seq uint64, e agent.Event) error {
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
		o.RecordID = eventstore.RecordID(ref.JournalID, eventstore.KindObservation, o.ObservationID)
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
	b.JournalID = ref.JournalID
	b.AgentExecutionID = ref.AgentExecutionID
	b.OwnerID = ref.OwnerID
	b.Scope = ref.OwnerEntity
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

// NewReader returns a driver of a, reading a new process's output.
func NewReader(tb testing.TB, a agent.Agent) agent.Reader {
	tb.Helper()
	var shape eventstore.SessionShape
	if shapes := a.Shapes(); len(shapes) > 0 {
		shape = shapes[0]
	}
	r, ok := a.NewDriver(nil, shape).(agent.Reader)
	if !ok {
		tb.Fatalf("the %s driver does not read its output", a.ID())
	}
	if err := r.Output(Prefix); err != nil {
		tb.Fatal(err)
	}
	return r
}

// Process reads one process's lines through r as the runtime does: Output
// with prefix, each line, then Flush when r holds lines back. It returns
// the events, unchecked: a test reading several processes checks them
// together.
func Process(tb testing.TB, r agent.Reader, prefix string, lines [][]byte) []agent.Event {
	tb.Helper()
	if err := r.Output(prefix); err != nil {
		tb.Fatal(err)
	}
	var out []agent.Event
	for _, l := range lines {
		out = append(out, r.Parse(l)...)
	}
	if f, ok := r.(agent.Flusher); ok {
		out = append(out, f.Flush()...)
	}
	return out
}

// Parse runs lines through a new reader of a and checks every event.
func Parse(tb testing.TB, a agent.Agent, lines ...[]byte) []agent.Event {
	tb.Helper()
	p := NewReader(tb, a)
	var out []agent.Event
	for _, l := range lines {
		evs := p.Parse(l)
		if len(evs) > agent.MaxEventsPerLine+1 {
			tb.Fatalf("one line gave %d events, want at most %d", len(evs), agent.MaxEventsPerLine+1)
		}
		out = append(out, evs...)
	}
	CheckEvents(tb, out)
	return out
}

// CheckEvents checks every event and that no two records share an id.
func CheckEvents(tb testing.TB, evs []agent.Event) {
	tb.Helper()
	ids := map[string]bool{}
	for i, e := range evs {
		if err := CheckEvent(uint64(i+2), e); err != nil {
			tb.Fatalf("event %d (%s): %v", i, Describe(e), err)
		}
		id := ID(e)
		if id == "" {
			continue
		}
		if ids[id] {
			tb.Fatalf("event %d: id %s repeats", i, id)
		}
		ids[id] = true
	}
}

// ID is the record id an event's record has; "" for events that are not
// appended.
func ID(e agent.Event) string {
	switch {
	case e.Observation != nil:
		return e.Observation.ObservationID
	case e.Activity != nil:
		return e.Activity.RecordID
	}
	return ""
}

// Lines makes lines of strings.
func Lines(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, l := range s {
		out[i] = []byte(l)
	}
	return out
}

// Describe renders an event in one line for table tests.
func Describe(e agent.Event) string {
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
			return fmt.Sprintf("usage %s in=%s out=%s total=%s", kind, Count(p.InputTokens), Count(p.OutputTokens), Count(p.TotalTokens))
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

// DescribeAll describes events; advertised commands are left out, since
// TestAdvertisedCommands checks them.
func DescribeAll(evs []agent.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Commands != nil {
			continue
		}
		out = append(out, Describe(e))
	}
	return out
}

// Count renders a count, "-" when absent.
func Count(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// Capture is one sample file of real provider output, as the lines a
// parser reads.
type Capture struct {
	Name  string
	Size  int
	Lines [][]byte
}

// LoadCaptures reads every capture under testdata, named by their path
// there. JSONL and
// NDJSON files are split into lines; a .json file holds one pretty-printed
// event (fed as one compacted line) or an array of events (one line each).
func LoadCaptures(tb testing.TB) []Capture {
	tb.Helper()
	var out []Capture
	root := "testdata"
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
		c := Capture{Name: filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator))), Size: len(data)}
		if ext == ".json" {
			c.Lines, err = jsonEvents(data)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		} else {
			for l := range bytes.Lines(data) {
				c.Lines = append(c.Lines, bytes.TrimSuffix(l, []byte("\n")))
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

// CapturesByName are the captures' lines by name.
func CapturesByName(tb testing.TB) map[string][][]byte {
	m := map[string][][]byte{}
	for _, c := range LoadCaptures(tb) {
		m[c.Name] = c.Lines
	}
	return m
}

// NativeOf is an observation's native ids.
func NativeOf(o *eventstore.Observation) eventstore.NativeIDs {
	if o.Native == nil {
		return eventstore.NativeIDs{}
	}
	return *o.Native
}

// Totals are usage totals folded from usage signals exactly as the runtime
// folds them (execution.Usage.Add): cumulative counts replace, increments
// add, and a total the signal does not give is input plus output.
type Totals struct{ In, Out, Total *int64 }

// Add folds a usage signal into the totals.
func (t Totals) Add(u *eventstore.UsageSignal) Totals {
	fold := func(prev, v *int64) *int64 {
		switch {
		case v == nil:
			return prev
		case u.Cumulative || prev == nil:
			return agent.Ptr(*v)
		}
		return agent.Ptr(*prev + *v)
	}
	out := Totals{fold(t.In, u.InputTokens), fold(t.Out, u.OutputTokens), fold(t.Total, u.TotalTokens)}
	if u.TotalTokens == nil && out.In != nil && out.Out != nil {
		out.Total = agent.Ptr(*out.In + *out.Out)
	}
	return out
}

// String renders the totals in one line.
func (t Totals) String() string {
	return fmt.Sprintf("in=%s out=%s total=%s", Count(t.In), Count(t.Out), Count(t.Total))
}

// UsageTrail gives the running totals after each usage observation.
func UsageTrail(evs []agent.Event) []string {
	var out []string
	var t Totals
	for _, e := range evs {
		if u := UsageOf(e); u != nil {
			t = t.Add(u)
			out = append(out, t.String())
		}
	}
	return out
}

// FinalUsage is the totals after every usage signal.
func FinalUsage(evs []agent.Event) Totals {
	var t Totals
	for _, e := range evs {
		if u := UsageOf(e); u != nil {
			t = t.Add(u)
		}
	}
	return t
}

// UsageOf is an event's usage signal, if it is one.
func UsageOf(e agent.Event) *eventstore.UsageSignal {
	if e.Observation == nil {
		return nil
	}
	u, _ := e.Observation.Signal.Payload.(*eventstore.UsageSignal)
	return u
}

// Payloads returns the signal payloads of type T among the events.
func Payloads[T eventstore.SignalPayload](evs []agent.Event) []T {
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

// Advertised are the command lists the events advertise, in order.
func Advertised(evs []agent.Event) [][]agent.Command {
	var out [][]agent.Command
	for _, e := range evs {
		if e.Commands != nil {
			out = append(out, e.Commands.List)
		}
	}
	return out
}

// ToolEnds are the tool calls that ended in evs, in order: what a test of
// a parser's output excerpts looks at.
func ToolEnds(evs []agent.Event) []eventstore.ToolCall {
	var out []eventstore.ToolCall
	for _, e := range evs {
		if a := e.Activity; a != nil && a.ToolCall != nil && a.ToolCall.Status != eventstore.ToolCallStarted {
			out = append(out, *a.ToolCall)
		}
	}
	return out
}

// CheckToolOutputs checks that the calls that end in the events a's parser
// makes of lines carry the outputs want, in order.
func CheckToolOutputs(t *testing.T, a agent.Agent, lines [][]byte, want []string) {
	t.Helper()
	var got []string
	for _, c := range ToolEnds(Parse(t, a, lines...)) {
		got = append(got, c.Output)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outputs of the calls that ended (-want +got):\n%s", diff)
	}
}
