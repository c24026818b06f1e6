package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Stream is the state every parser shares, and the events it builds: the
// line counter that makes ids deterministic, the events of the line being
// read, the open tool calls and the usage already reported. A parser
// embeds one per process it reads: it begins each line with Decode, reports
// what the line says through the methods below, and returns Finish.
type Stream struct {
	provider string
	prefix   string

	line     uint64
	raw      []byte // the line being read; nil outside Parse
	events   []Event
	overflow int // events dropped from this line

	// LineType is the provider's type of the line being read, named in
	// diagnostics; Decode clears it.
	LineType string
	// Native holds the CLI's ids for the observations of the line being
	// read; Decode clears all but the session id, which stays from line to
	// line.
	Native eventstore.NativeIDs

	// session and version are what the output said of the CLI's session.
	session string
	version string

	open     map[string]openCall // open tool call id -> the call
	opened   uint64
	steps    Recent[[2]int64]        // per-request usage reported: input, output
	cum      *eventstore.UsageSignal // the last cumulative totals reported
	seenIDs  Recent[struct{}]        // provider event ids already read
	closed   Recent[struct{}]        // tool call ids whose result was read
	unknowns Recent[struct{}]        // unknown types already reported
	plan     []eventstore.PlanItem   // the last plan reported
	planned  bool                    // a plan was reported
	// plans holds the todo lists of calls that have not ended: a list
	// becomes the plan when its call succeeds.
	plans Recent[[]eventstore.PlanItem]
	// advertised is the last list of slash commands reported, so that a
	// repeated init line reports nothing new.
	advertised string
}

// openCall is a tool call that started and has not ended.
type openCall struct {
	order uint64
	name  string
}

// NewStream begins the reading of one process's output by the named
// provider's parser. Ids are "<idPrefix>-<line>-<index>" (see Reader.Output);
// idPrefix must be 1 to MaxPrefixLength bytes.
func NewStream(provider, idPrefix string) (*Stream, error) {
	if idPrefix == "" || len(idPrefix) > MaxPrefixLength {
		return nil, fmt.Errorf("%w: %d bytes (want 1 to %d)", ErrInvalidPrefix, len(idPrefix), MaxPrefixLength)
	}
	return &Stream{
		provider: provider, prefix: idPrefix,
		open:     map[string]openCall{},
		steps:    NewRecent[[2]int64](maxRemembered),
		seenIDs:  NewRecent[struct{}](maxRemembered),
		closed:   NewRecent[struct{}](maxRemembered),
		unknowns: NewRecent[struct{}](maxRemembered),
		plans:    NewRecent[[]eventstore.PlanItem](maxPendingPlans),
	}, nil
}

// Prefix is the prefix of the stream's ids.
func (s *Stream) Prefix() string { return s.prefix }

// Raw is the line being read, trimmed; nil outside a line.
func (s *Stream) Raw() []byte { return s.raw }

// SessionID is the CLI's session as the output named it so far.
func (s *Stream) SessionID() string { return s.session }

// NextLine begins the events of a line after the last one read, for what a
// Flush reports once the output has ended.
func (s *Stream) NextLine() {
	s.line++
	s.events, s.overflow, s.LineType = nil, 0, ""
}

// OpenCall is the tool name of the open call with the given id.
func (s *Stream) OpenCall(id string) (name string, ok bool) {
	c, ok := s.open[Key(id)]
	return c.name, ok
}

// Decode begins a line: it counts it, and decodes it into v. It returns false
// when there is nothing more to do with the line: blank, too long or not
// decodable, the last two reported as diagnostics.
func (s *Stream) Decode(line []byte, v any) bool {
	s.line++
	s.events, s.overflow, s.LineType = nil, 0, ""
	s.Native = eventstore.NativeIDs{SessionID: s.Native.SessionID}
	if len(line) > MaxLineBytes {
		s.raw = line[:MaxRawBytes]
		s.Diagnose(CodeLineTooLong, fmt.Sprintf("%s line of %d bytes exceeds the %d byte limit and was not read", s.provider, len(line), MaxLineBytes))
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
		s.Diagnose(CodeMalformedLine, fmt.Sprintf("%s output line is not JSON: %v", s.provider, err))
	default:
		s.BadEvent(fmt.Sprintf("unexpected shape: %v", err))
	}
	return false
}

// Finish ends a line and returns its events.
func (s *Stream) Finish() []Event {
	if s.overflow > 0 {
		s.events = append(s.events, s.diagnosticEvent(CodeTooManyEvents,
			fmt.Sprintf("%s output line produced %d more events than the %d allowed; they were dropped", s.provider, s.overflow, MaxEventsPerLine)))
	}
	out := s.events
	s.events, s.raw = nil, nil
	return out
}

// Seen records a provider event id and reports whether it was read before,
// so a line delivered twice is read once.
func (s *Stream) Seen(id string) bool {
	if id == "" {
		return false
	}
	id = Key(id)
	if _, ok := s.seenIDs.Get(id); ok {
		return true
	}
	s.seenIDs.Put(id, struct{}{})
	return false
}

func (s *Stream) Add(e Event) {
	if len(s.events) >= MaxEventsPerLine {
		s.overflow++
		return
	}
	s.events = append(s.events, e)
}

// NextKey is the "<line>-<index>" part of the next event's id.
func (s *Stream) NextKey() string {
	b := make([]byte, 0, 24)
	b = strconv.AppendUint(b, s.line, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(len(s.events)+s.overflow), 10)
	return string(b)
}

func (s *Stream) observation(c eventstore.Confidence, p eventstore.SignalPayload) *eventstore.Observation {
	o := &eventstore.Observation{
		ObservationID: s.prefix + "-" + s.NextKey(),
		Source:        eventstore.ObservedProviderOutput,
		Confidence:    c,
		Signal:        eventstore.NewSignal(p),
	}
	if s.Native != (eventstore.NativeIDs{}) {
		n := s.Native
		o.Native = &n
	}
	return o
}

func (s *Stream) Observe(p eventstore.SignalPayload) {
	s.Add(Event{Observation: s.observation(eventstore.ConfidenceHigh, p)})
}

func (s *Stream) Activity(a *eventstore.ActivityUpdated) {
	a.RecordID = eventstore.RecordID(s.prefix, eventstore.KindActivity, s.NextKey())
	s.Add(Event{Activity: a})
}

func (s *Stream) diagnosticEvent(code, msg string) Event {
	return s.DiagnosticFor(code, s.LineType, msg, s.raw)
}

// DiagnosticFor builds a diagnostic about a line of the given type, with
// raw as evidence.
func (s *Stream) DiagnosticFor(code, lineType, msg string, raw []byte) Event {
	o := s.observation(eventstore.ConfidenceDiagnostic, &eventstore.DiagnosticSignal{
		Code: code, Message: textclip.Fit(msg, MaxSummaryBytes), Adapter: s.provider,
		LineType: textclip.Fit(lineType, MaxTypeBytes), AgentVersion: s.version,
	})
	o.RawText = textclip.Fit(string(raw), MaxRawBytes)
	return Event{Observation: o}
}

// Diagnose records something noticed in the output, with the line as raw
// evidence.
func (s *Stream) Diagnose(code, msg string) { s.Add(s.diagnosticEvent(code, msg)) }

// UnknownLine reports a line type the parser does not know, once per type:
// a CLI that prints a new kind of line prints it again and again, and one
// diagnostic says all there is to say.
func (s *Stream) UnknownLine(typ string) {
	if !s.firstUnknown("line", typ) {
		return
	}
	s.LineType = typ
	if typ == "" {
		s.Diagnose(CodeUnknownEvent, fmt.Sprintf("%s output line without a type (%s); the parser skips such lines", s.provider, s.AgentVersion()))
		return
	}
	s.Diagnose(CodeUnknownEvent, fmt.Sprintf("%s output line type %q is not known to this parser (%s); the parser skips such lines", s.provider, textclip.Fit(typ, MaxTypeBytes), s.AgentVersion()))
}

// Unknown reports a part of a known line (a content block, an item) whose
// type the parser does not know, once per kind of part and type.
func (s *Stream) Unknown(what, typ string) {
	if !s.firstUnknown(what, typ) {
		return
	}
	if typ == "" {
		s.Diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s without a type in a %q line (%s)", s.provider, what, textclip.Fit(s.LineType, MaxTypeBytes), s.AgentVersion()))
		return
	}
	s.Diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s type %q in a %q line is not known to this parser (%s)", s.provider, what, textclip.Fit(typ, MaxTypeBytes), textclip.Fit(s.LineType, MaxTypeBytes), s.AgentVersion()))
}

func (s *Stream) firstUnknown(what, typ string) bool {
	k := Key(what + "\x00" + typ)
	if _, ok := s.unknowns.Get(k); ok {
		return false
	}
	s.unknowns.Put(k, struct{}{})
	return true
}

// AgentVersion names the CLI and its version for diagnostic messages.
func (s *Stream) AgentVersion() string {
	if s.version == "" {
		return "agent version unknown"
	}
	return "agent version " + s.version
}

// KnowVersion sets the CLI's version as the runtime learned it before the
// process started (VersionReader), for the diagnostics; a version the
// output states later takes its place.
func (s *Stream) KnowVersion(version string) {
	if version = textclip.Fit(version, MaxTypeBytes); version != "" {
		s.version = version
	}
}

// Version is the CLI's version as far as the stream knows it, "" when
// unknown.
func (s *Stream) Version() string { return s.version }

// LearnSession records the CLI's session id and version as the output
// states them. An Event{Session} goes out the first time, and again when
// either changes; every observation after it carries the session id. An id
// that cannot be a journal id (empty or too long) is not a session id.
func (s *Stream) LearnSession(id, version string) {
	version = textclip.Fit(version, MaxTypeBytes)
	changed := false
	if version != "" && version != s.version {
		s.version, changed = version, true
	}
	if id = NativeID(id); id != "" && id != s.session {
		s.session, changed = id, true
	}
	s.Native.SessionID = s.session
	if changed && s.session != "" {
		s.Add(Event{Session: &Session{ID: s.session, AgentVersion: s.version}})
	}
}

// EndTurn says the turn whose claim was just reported is over.
func (s *Stream) EndTurn(failed bool, reason string) {
	s.Add(Event{TurnEnd: &TurnEnd{Failed: failed, Reason: textclip.Fit(reason, MaxSummaryBytes)}})
}

func (s *Stream) BadEvent(problem string) {
	s.Diagnose(CodeBadEvent, fmt.Sprintf("%s event: %s", s.provider, problem))
}

// Message reports assistant text. Blank text carries nothing to show.
func (s *Stream) Message(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	s.Observe(&eventstore.MessageSignal{Text: textclip.Fit(text, MaxTextBytes), Format: "markdown"})
}

func (s *Stream) Completed(summary, fallback string) {
	if strings.TrimSpace(summary) == "" {
		summary = fallback
	}
	s.Observe(&eventstore.CompletedClaimSignal{Summary: textclip.Fit(summary, MaxSummaryBytes)})
}

// Failed reports a failed claim and returns the reason it gave.
func (s *Stream) Failed(reason, detail string) string {
	if strings.TrimSpace(reason) == "" {
		reason = s.provider + " reported a failure without a reason"
	}
	reason = textclip.Fit(reason, MaxSummaryBytes)
	s.Observe(&eventstore.FailedClaimSignal{Reason: reason, Detail: textclip.Fit(detail, MaxSummaryBytes)})
	return reason
}

// StepUsage reports the usage of one model request (a step) as an
// Increment and returns it. Providers repeat a step's usage on every line
// of the step (one line per content block) and may raise a count on later
// lines, so the usage already reported for the step's id is subtracted:
// the same numbers seen twice add nothing. An empty id cannot be
// deduplicated and counts in full.
func (s *Stream) StepUsage(id string, in, out *int64) (dIn, dOut int64) {
	in, out = NonNegative(in), NonNegative(out)
	var prev [2]int64
	if id != "" {
		id = Key(id)
		prev, _ = s.steps.Get(id)
	}
	if in != nil && *in > prev[0] {
		dIn = *in - prev[0]
		prev[0] = *in
	}
	if out != nil && *out > prev[1] {
		dOut = *out - prev[1]
		prev[1] = *out
	}
	if id != "" {
		s.steps.Put(id, prev)
	}
	s.Increment(dIn, dOut)
	return dIn, dOut
}

// Increment reports usage that adds to the running totals; zero counts are
// left out, and nothing is reported when both are zero. Total is always the
// sum of the two: the runtime adds totals as it adds counts, so an
// Increment without one would leave the running total short.
func (s *Stream) Increment(in, out int64) {
	if in <= 0 && out <= 0 {
		return
	}
	u := &eventstore.UsageSignal{TotalTokens: Ptr(AddSat(max(in, 0), max(out, 0)))}
	if in > 0 {
		u.InputTokens = Ptr(in)
	}
	if out > 0 {
		u.OutputTokens = Ptr(out)
	}
	s.Observe(u)
}

// CumulativeUsage reports running totals. Totals equal to the last ones
// reported carry no news and are dropped.
func (s *Stream) CumulativeUsage(in, out *int64) {
	in, out = NonNegative(in), NonNegative(out)
	if in == nil && out == nil {
		return
	}
	u := &eventstore.UsageSignal{InputTokens: in, OutputTokens: out, Cumulative: true}
	if in != nil && out != nil {
		u.TotalTokens = Ptr(AddSat(*in, *out))
	}
	if c := s.cum; c != nil && eq(c.InputTokens, u.InputTokens) && eq(c.OutputTokens, u.OutputTokens) {
		return
	}
	s.cum = u
	s.Observe(u)
}

// OpenTool reports a tool call that started: an activity update with the
// call (status started), the tool as the active tool, the activity and the
// target. A call with an id is tracked until closeTool sees the id; one
// already open, or already closed, is not reported again.
func (s *Stream) OpenTool(id, name string, act eventstore.Activity, target *eventstore.Target) {
	name = ToolName(name)
	a := &eventstore.ActivityUpdated{Activity: act, CurrentTarget: target,
		Telemetry: &eventstore.Telemetry{ActiveToolName: name},
		ToolCall:  &eventstore.ToolCall{ID: NativeID(id), Name: name, Status: eventstore.ToolCallStarted}}
	if id != "" {
		id = Key(id)
		if _, ok := s.open[id]; ok {
			return
		}
		if _, ok := s.closed.Get(id); ok {
			return
		}
		if len(s.open) >= MaxOpenToolCalls {
			s.forgetOldestCall()
		}
		s.opened++
		s.open[id] = openCall{order: s.opened, name: name}
		a.Capabilities = &eventstore.Capabilities{ToolCallActive: Ptr(true)}
	}
	s.Activity(a)
}

// Outcome is how a tool call ended.
type Outcome struct {
	Failed bool
	Err    string // what the tool or the CLI said, for a failed call
	Exit   *int64 // a shell command's exit code, when the CLI reports it
	// Output is what the call returned, as the CLI's stream carries it;
	// the record keeps an excerpt (eventstore.ToolOutputExcerpt).
	Output string
}

// CloseTool reports a tool call that ended: an activity update with the
// call's status, the excerpt of its output, and its error and exit code
// when it failed. When it was
// the last open call, the same update says no tool call is active. Results
// for calls that are not open (never seen, already closed or forgotten)
// are ignored.
func (s *Stream) CloseTool(id string, out Outcome) {
	if id == "" {
		return
	}
	k := Key(id)
	call, ok := s.open[k]
	if !ok {
		return
	}
	delete(s.open, k)
	s.closed.Put(k, struct{}{})
	tc := &eventstore.ToolCall{ID: NativeID(id), Name: call.name, Status: eventstore.ToolCallSucceeded}
	if out.Failed {
		tc.Status, tc.Error = eventstore.ToolCallFailed, textclip.Fit(strings.TrimSpace(out.Err), MaxErrorBytes)
		if out.Exit != nil {
			tc.ExitCode = Ptr(*out.Exit)
		}
	}
	tc.Output, tc.OutputBytes = eventstore.ToolOutputExcerpt(out.Output)
	a := &eventstore.ActivityUpdated{ToolCall: tc}
	if len(s.open) == 0 {
		a.Capabilities = &eventstore.Capabilities{ToolCallActive: Ptr(false)}
	}
	s.Activity(a)
	s.SettlePlan(id, out.Failed)
}

// AbandonTools ends every call still open when the process's output has
// ended: none of them will have a result, so each is recorded failed with
// reason, oldest first, and no call is left looking as if it ran on.
func (s *Stream) AbandonTools(reason string) {
	ids := make([]string, 0, len(s.open))
	for id := range s.open {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.open[a].order, s.open[b].order) })
	for _, id := range ids {
		s.CloseTool(id, Outcome{Failed: true, Err: reason})
	}
}

// SettlePlan ends the wait of the todo list held for the call id
// (PlanWhenDone): it becomes the plan unless the call failed. CloseTool
// settles the plan of a call it closes; a parser settles the plan of a
// call that ended without being open (one forgotten) itself.
func (s *Stream) SettlePlan(id string, failed bool) {
	if id == "" {
		return
	}
	k := Key(id)
	if items, ok := s.plans.Get(k); ok && items != nil {
		s.plans.Put(k, nil)
		if !failed {
			s.ReportPlan(items)
		}
	}
}

// PlanWhenDone holds the todo list a call sets until the call ends: it
// becomes the plan if the call succeeds (a call the CLI refuses sets
// nothing). A call without an id, whose end cannot be matched, sets it at
// once.
func (s *Stream) PlanWhenDone(id string, items []eventstore.PlanItem) {
	if items == nil {
		items = []eventstore.PlanItem{}
	}
	if id == "" {
		s.ReportPlan(items)
		return
	}
	s.plans.Put(Key(id), items)
}

// ToolRunning reports that a tool is still at work (a progress beat): the
// active tool only, so that the update stays cheap.
func (s *Stream) ToolRunning(name string) {
	if name == "" {
		return
	}
	s.Activity(&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{ActiveToolName: textclip.Fit(name, MaxLabelBytes)}})
}

// ReportPlan reports the agent's plan as a whole. The same plan twice, in a
// row, is reported once; an empty plan is reported only when it clears one
// reported before.
func (s *Stream) ReportPlan(items []eventstore.PlanItem) {
	if len(items) > MaxPlanItems {
		items = items[:MaxPlanItems]
	}
	if !s.planned && len(items) == 0 {
		return
	}
	if s.planned && slices.Equal(items, s.plan) {
		return
	}
	s.plan, s.planned = items, true
	if items == nil {
		items = []eventstore.PlanItem{}
	}
	s.Observe(&eventstore.PlanSignal{Items: items})
}

// NewPlanItem builds one item of a plan with its text and id bounded; an item
// without text takes its id as text, and one with neither is left out.
func NewPlanItem(id, text string, status eventstore.PlanItemStatus) (eventstore.PlanItem, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		text = strings.TrimSpace(id)
	}
	if text == "" {
		return eventstore.PlanItem{}, false
	}
	return eventstore.PlanItem{ID: textclip.Fit(id, eventstore.MaxIDLength), Text: textclip.Fit(text, MaxLabelBytes), Status: status}, true
}

func (s *Stream) forgetOldestCall() {
	oldest, first := "", uint64(math.MaxUint64)
	for id, c := range s.open {
		if c.order < first {
			oldest, first = id, c.order
		}
	}
	delete(s.open, oldest)
}

// Recent is a map that remembers at most max keys, forgetting the oldest
// first. It allocates as it fills, since most streams remember few ids.
type Recent[V any] struct {
	max  int
	m    map[string]V
	ring []string // keys in insertion order, oldest at next once full
	next int
}

func NewRecent[V any](max int) Recent[V] { return Recent[V]{max: max} }

// Get is the value kept for k.
func (r *Recent[V]) Get(k string) (V, bool) {
	v, ok := r.m[k]
	return v, ok
}

// Len is the number of keys kept.
func (r *Recent[V]) Len() int { return len(r.m) }

// Put keeps v for k, forgetting the oldest key when full.
func (r *Recent[V]) Put(k string, v V) {
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

// NativeID returns a provider id as the journal can keep it, or "" when it
// cannot be a journal id (empty or longer than eventstore.MaxIDLength).
func NativeID(id string) string {
	if id == "" || len(id) > eventstore.MaxIDLength {
		return ""
	}
	return id
}

// ToolName is the name a tool call is recorded under: the journal requires
// one.
func ToolName(name string) string {
	if name == "" {
		return "unknown"
	}
	return textclip.Fit(name, MaxLabelBytes)
}

// Key bounds a provider id used as a map key.
func Key(id string) string {
	if len(id) > MaxKeyBytes {
		return id[:MaxKeyBytes]
	}
	return id
}

// Tail keeps the last max bytes of s, cutting at a rune boundary and
// marking the cut: the end of a command's output says why it failed.
func Tail(s string, max int) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := len(s) - (max - len(ellipsis))
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return ellipsis + s[cut:]
}

// OneLine folds s onto one line and bounds it, for questions built from a
// tool's arguments.
func OneLine(s string, max int) string {
	return textclip.Fit(strings.Join(strings.Fields(s), " "), max)
}

// Args decodes a tool call's arguments leniently: anything but a JSON object
// yields no arguments.
func Args(raw json.RawMessage) map[string]json.RawMessage {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// StringArg returns the first of the named arguments that is a string, or an
// array of strings joined by spaces (an argv).
func StringArg(a map[string]json.RawMessage, names ...string) string {
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

func Ptr[T any](v T) *T { return &v }

func Deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func eq(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// NonNegative drops a negative count: a provider never means one, and the
// journal refuses it.
func NonNegative(p *int64) *int64 {
	if p == nil || *p < 0 {
		return nil
	}
	return p
}

// AddSat adds two non-negative counts, saturating instead of overflowing.
func AddSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SumCounts adds the present counts; nil when none is present.
func SumCounts(ps ...*int64) *int64 {
	var sum *int64
	for _, p := range ps {
		if p = NonNegative(p); p != nil {
			sum = Ptr(AddSat(Deref(sum), *p))
		}
	}
	return sum
}

// Advertise reports the agent's slash commands when they differ from the
// last ones reported.
func (s *Stream) Advertise(list []Command) {
	var key strings.Builder
	for _, c := range list {
		key.WriteString(c.Name + "\x00" + c.Description + "\x00" + c.Hint + "\x00")
	}
	if key.String() == s.advertised && s.advertised != "" {
		return
	}
	s.advertised = key.String()
	s.Add(Event{Commands: &Commands{List: list}})
}

// JSONString reads a JSON string; anything else is "".
func JSONString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// TodoStatus maps the todo statuses of Claude Code (pending, in_progress,
// completed) and Copilot CLI (pending, in_progress, done, blocked) to plan
// item statuses. A status not known is open: the item is not done.
func TodoStatus(s string) eventstore.PlanItemStatus {
	switch strings.ToLower(s) {
	case "in_progress", "in-progress", "inprogress", "active":
		return eventstore.PlanItemInProgress
	case "completed", "complete", "done":
		return eventstore.PlanItemDone
	case "cancelled", "canceled", "dropped", "removed":
		return eventstore.PlanItemDropped
	}
	return eventstore.PlanItemOpen
}

// ErrorMessage reads an error message that may be an API error body
// itself ({"error":{"message":…}}, {"type":"error","error":{…}},
// {"message":…}): the message inside is the reason, the body the detail.
func ErrorMessage(msg string) (reason, detail string) {
	trimmed := strings.TrimSpace(msg)
	if !strings.HasPrefix(trimmed, "{") {
		return trimmed, ""
	}
	var body struct {
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(trimmed), &body) != nil {
		return trimmed, ""
	}
	switch {
	case body.Error != nil && strings.TrimSpace(body.Error.Message) != "":
		return strings.TrimSpace(body.Error.Message), trimmed
	case strings.TrimSpace(body.Message) != "":
		return strings.TrimSpace(body.Message), trimmed
	}
	return trimmed, ""
}
