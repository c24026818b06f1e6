package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/eventstore"
)

// stream is the state every parser shares: the line counter that makes ids
// deterministic, the events of the line being read, the open tool calls and
// the usage already reported.
type stream struct {
	provider string
	prefix   string

	line     uint64
	raw      []byte // the line being read; nil outside Parse
	events   []Event
	overflow int // events dropped from this line

	open    map[string]uint64 // open tool call id -> order opened
	opened  uint64
	steps   recent[[2]int64]        // per-message usage reported: input, output
	cum     *eventstore.UsageSignal // the last cumulative totals reported
	seenIDs recent[struct{}]        // provider event ids already read
	closed  recent[struct{}]        // tool call ids whose result was read
}

func newStream(provider, prefix string) *stream {
	return &stream{
		provider: provider, prefix: prefix,
		open:    map[string]uint64{},
		steps:   newRecent[[2]int64](maxRemembered),
		seenIDs: newRecent[struct{}](maxRemembered),
		closed:  newRecent[struct{}](maxRemembered),
	}
}

// start begins a line: it counts it, and decodes it into v. It returns false
// when there is nothing more to do with the line: blank, too long or not
// decodable, the last two reported as diagnostics.
func (s *stream) start(line []byte, v any) bool {
	s.line++
	s.events, s.overflow = nil, 0
	if len(line) > MaxLineBytes {
		s.raw = line[:maxRawBytes]
		s.diagnose(CodeLineTooLong, fmt.Sprintf("%s line of %d bytes exceeds the %d byte limit and was not read", s.provider, len(line), MaxLineBytes))
		return false
	}
	line = bytes.TrimSpace(line)
	s.raw = line
	if len(line) == 0 {
		return false
	}
	err := json.Unmarshal(line, v)
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		return true
	case errors.As(err, &syntax):
		s.diagnose(CodeMalformedLine, fmt.Sprintf("%s output line is not JSON: %v", s.provider, err))
	default:
		s.badEvent(fmt.Sprintf("unexpected shape: %v", err))
	}
	return false
}

// finish ends a line and returns its events.
func (s *stream) finish() []Event {
	if s.overflow > 0 {
		s.events = append(s.events, s.diagnosticEvent(CodeTooManyEvents,
			fmt.Sprintf("%s output line produced %d more events than the %d allowed; they were dropped", s.provider, s.overflow, MaxEventsPerLine)))
	}
	out := s.events
	s.events, s.raw = nil, nil
	return out
}

// seen records a provider event id and reports whether it was read before,
// so a line delivered twice is read once.
func (s *stream) seen(id string) bool {
	if id == "" {
		return false
	}
	id = key(id)
	if _, ok := s.seenIDs.get(id); ok {
		return true
	}
	s.seenIDs.put(id, struct{}{})
	return false
}

func (s *stream) add(e Event) {
	if len(s.events) >= MaxEventsPerLine {
		s.overflow++
		return
	}
	s.events = append(s.events, e)
}

// nextKey is the "<line>-<index>" part of the next event's id.
func (s *stream) nextKey() string {
	b := make([]byte, 0, 24)
	b = strconv.AppendUint(b, s.line, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(len(s.events)+s.overflow), 10)
	return string(b)
}

func (s *stream) observation(c eventstore.Confidence, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{
		ObservationID: s.prefix + "-" + s.nextKey(),
		Source:        eventstore.ObservedProviderOutput,
		Confidence:    c,
		Signal:        eventstore.NewSignal(p),
	}
}

func (s *stream) observe(p eventstore.SignalPayload) {
	s.add(Event{Observation: s.observation(eventstore.ConfidenceHigh, p)})
}

func (s *stream) activity(a *eventstore.ActivityUpdated) {
	a.RecordID = eventstore.RecordID(s.prefix, eventstore.KindActivity, s.nextKey())
	s.add(Event{Activity: a})
}

func (s *stream) diagnosticEvent(code, msg string) Event {
	o := s.observation(eventstore.ConfidenceDiagnostic, &eventstore.DiagnosticSignal{Code: code, Message: clip(msg, maxSummaryBytes)})
	o.RawText = clip(string(s.raw), maxRawBytes)
	return Event{Observation: o}
}

// diagnose records something noticed in the output, with the line as raw
// evidence.
func (s *stream) diagnose(code, msg string) { s.add(s.diagnosticEvent(code, msg)) }

func (s *stream) unknown(what, typ string) {
	if typ == "" {
		s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s without a type", s.provider, what))
		return
	}
	s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s type %q is not known to this parser", s.provider, what, clip(typ, 100)))
}

func (s *stream) badEvent(problem string) {
	s.diagnose(CodeBadEvent, fmt.Sprintf("%s event: %s", s.provider, problem))
}

// message reports assistant text. Blank text carries nothing to show.
func (s *stream) message(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	s.observe(&eventstore.MessageSignal{Text: clip(text, maxTextBytes), Format: "markdown"})
}

func (s *stream) completed(summary, fallback string) {
	if strings.TrimSpace(summary) == "" {
		summary = fallback
	}
	s.observe(&eventstore.CompletedClaimSignal{Summary: clip(summary, maxSummaryBytes)})
}

func (s *stream) failed(reason, detail string) {
	if strings.TrimSpace(reason) == "" {
		reason = s.provider + " reported a failure without a reason"
	}
	s.observe(&eventstore.FailedClaimSignal{Reason: clip(reason, maxSummaryBytes), Detail: clip(detail, maxSummaryBytes)})
}

// stepUsage reports the usage of one model request (a step) as an
// increment. Providers repeat a step's usage on every line of the step (one
// line per content block) and may raise the output count on later lines, so
// the usage already reported for the step's id is subtracted: the same
// numbers seen twice add nothing. An empty id cannot be deduplicated and
// counts in full. Total is reported only when the provider reports both
// input and output.
func (s *stream) stepUsage(id string, in, out *int64) {
	in, out = nonNegative(in), nonNegative(out)
	var prev [2]int64
	if id != "" {
		id = key(id)
		prev, _ = s.steps.get(id)
	}
	var dIn, dOut *int64
	if in != nil && *in > prev[0] {
		dIn = ptr(*in - prev[0])
		prev[0] = *in
	}
	if out != nil && *out > prev[1] {
		dOut = ptr(*out - prev[1])
		prev[1] = *out
	}
	if id != "" {
		s.steps.put(id, prev)
	}
	if dIn == nil && dOut == nil {
		return
	}
	u := &eventstore.UsageSignal{InputTokens: dIn, OutputTokens: dOut}
	if in != nil && out != nil {
		u.TotalTokens = ptr(addSat(deref(dIn), deref(dOut)))
	}
	s.observe(u)
}

// cumulativeUsage reports running totals. Totals equal to the last ones
// reported carry no news and are dropped.
func (s *stream) cumulativeUsage(in, out *int64) {
	in, out = nonNegative(in), nonNegative(out)
	if in == nil && out == nil {
		return
	}
	u := &eventstore.UsageSignal{InputTokens: in, OutputTokens: out, Cumulative: true}
	if in != nil && out != nil {
		u.TotalTokens = ptr(addSat(*in, *out))
	}
	if c := s.cum; c != nil && eq(c.InputTokens, u.InputTokens) && eq(c.OutputTokens, u.OutputTokens) {
		return
	}
	s.cum = u
	s.observe(u)
}

// openTool reports a tool call that started. A call with an id is tracked
// until closeTool sees the id; one already open, or already closed, is not
// reported again.
func (s *stream) openTool(id, name string, act eventstore.Activity, target *eventstore.Target) {
	a := &eventstore.ActivityUpdated{Activity: act, CurrentTarget: target}
	if name != "" {
		a.Telemetry = &eventstore.Telemetry{ActiveToolName: clip(name, maxLabelBytes)}
	}
	if id != "" {
		id = key(id)
		if _, ok := s.open[id]; ok {
			return
		}
		if _, ok := s.closed.get(id); ok {
			return
		}
		if len(s.open) >= MaxOpenToolCalls {
			s.forgetOldestCall()
		}
		s.opened++
		s.open[id] = s.opened
		a.Capabilities = &eventstore.Capabilities{ToolCallActive: ptr(true)}
	}
	s.activity(a)
}

// closeTool reports a tool call that ended. When it was the last open call,
// an activity update says no tool call is active. Results for calls that are
// not open (never seen, already closed or forgotten) are ignored.
func (s *stream) closeTool(id string) {
	if id == "" {
		return
	}
	id = key(id)
	if _, ok := s.open[id]; !ok {
		return
	}
	delete(s.open, id)
	s.closed.put(id, struct{}{})
	if len(s.open) == 0 {
		s.activity(&eventstore.ActivityUpdated{Capabilities: &eventstore.Capabilities{ToolCallActive: ptr(false)}})
	}
}

func (s *stream) forgetOldestCall() {
	oldest, first := "", uint64(math.MaxUint64)
	for id, n := range s.open {
		if n < first {
			oldest, first = id, n
		}
	}
	delete(s.open, oldest)
}

// recent is a map that remembers at most max keys, forgetting the oldest
// first. It allocates as it fills, since most streams remember few ids.
type recent[V any] struct {
	max  int
	m    map[string]V
	ring []string // keys in insertion order, oldest at next once full
	next int
}

func newRecent[V any](max int) recent[V] { return recent[V]{max: max} }

func (r *recent[V]) get(k string) (V, bool) {
	v, ok := r.m[k]
	return v, ok
}

func (r *recent[V]) put(k string, v V) {
	if r.m == nil {
		r.m = map[string]V{}
	}
	if _, ok := r.m[k]; !ok {
		if len(r.ring) < r.max {
			r.ring = append(r.ring, k)
		} else {
			delete(r.m, r.ring[r.next])
			r.ring[r.next] = k
			r.next = (r.next + 1) % r.max
		}
	}
	r.m[k] = v
}

// key bounds a provider id used as a map key.
func key(id string) string {
	if len(id) > maxKeyBytes {
		return id[:maxKeyBytes]
	}
	return id
}

// clip shortens s to at most max bytes, cutting at a rune boundary and
// marking the cut with an ellipsis, and replaces invalid UTF-8.
func clip(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// args decodes a tool call's arguments leniently: anything but a JSON object
// yields no arguments.
func args(raw json.RawMessage) map[string]json.RawMessage {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// stringArg returns the first of the named arguments that is a string, or an
// array of strings joined by spaces (an argv).
func stringArg(a map[string]json.RawMessage, names ...string) string {
	for _, n := range names {
		raw, ok := a[n]
		if !ok || len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '"':
			var v string
			if json.Unmarshal(raw, &v) == nil && v != "" {
				return v
			}
		case '[':
			var v []string
			if json.Unmarshal(raw, &v) == nil && len(v) > 0 {
				return strings.Join(v, " ")
			}
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func eq(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// nonNegative drops a negative count: a provider never means one, and the
// journal refuses it.
func nonNegative(p *int64) *int64 {
	if p == nil || *p < 0 {
		return nil
	}
	return p
}

// addSat adds two non-negative counts, saturating instead of overflowing.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// sumCounts adds the present counts; nil when none is present.
func sumCounts(ps ...*int64) *int64 {
	var sum *int64
	for _, p := range ps {
		if p = nonNegative(p); p != nil {
			sum = ptr(addSat(deref(sum), *p))
		}
	}
	return sum
}
