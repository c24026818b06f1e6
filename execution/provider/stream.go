package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// stream is the state every parser shares: the line counter that makes ids
// deterministic, the events of the line being read, the open tool calls and
// the usage already reported.
type stream struct {
	provider string
	prefix   string

	line     uint64
	raw      []byte // the line being read; nil outside Parse
	lineType string // the provider's type of the line being read
	events   []Event
	overflow int // events dropped from this line

	// session and version are what the output said of the CLI's session;
	// native holds the CLI's ids for the observations of the line being
	// read (the session id stays from line to line).
	session string
	version string
	native  eventstore.NativeIDs

	open     map[string]openCall // open tool call id -> the call
	opened   uint64
	steps    recent[[2]int64]        // per-request usage reported: input, output
	cum      *eventstore.UsageSignal // the last cumulative totals reported
	seenIDs  recent[struct{}]        // provider event ids already read
	closed   recent[struct{}]        // tool call ids whose result was read
	unknowns recent[struct{}]        // unknown types already reported
	plan     []eventstore.PlanItem   // the last plan reported
	planned  bool                    // a plan was reported
	// plans holds the todo lists of calls that have not ended: a list
	// becomes the plan when its call succeeds.
	plans recent[[]eventstore.PlanItem]
	// advertised is the last list of slash commands reported, so that a
	// repeated init line reports nothing new.
	advertised string
}

// openCall is a tool call that started and has not ended.
type openCall struct {
	order uint64
	name  string
}

func newStream(provider, prefix string) *stream {
	return &stream{
		provider: provider, prefix: prefix,
		open:     map[string]openCall{},
		steps:    newRecent[[2]int64](maxRemembered),
		seenIDs:  newRecent[struct{}](maxRemembered),
		closed:   newRecent[struct{}](maxRemembered),
		unknowns: newRecent[struct{}](maxRemembered),
		plans:    newRecent[[]eventstore.PlanItem](maxPendingPlans),
	}
}

// start begins a line: it counts it, and decodes it into v. It returns false
// when there is nothing more to do with the line: blank, too long or not
// decodable, the last two reported as diagnostics.
func (s *stream) start(line []byte, v any) bool {
	s.line++
	s.events, s.overflow, s.lineType = nil, 0, ""
	s.native = eventstore.NativeIDs{SessionID: s.native.SessionID}
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
	o := &eventstore.Observation{
		ObservationID: s.prefix + "-" + s.nextKey(),
		Source:        eventstore.ObservedProviderOutput,
		Confidence:    c,
		Signal:        eventstore.NewSignal(p),
	}
	if s.native != (eventstore.NativeIDs{}) {
		n := s.native
		o.Native = &n
	}
	return o
}

func (s *stream) observe(p eventstore.SignalPayload) {
	s.add(Event{Observation: s.observation(eventstore.ConfidenceHigh, p)})
}

func (s *stream) activity(a *eventstore.ActivityUpdated) {
	a.RecordID = eventstore.RecordID(s.prefix, eventstore.KindActivity, s.nextKey())
	s.add(Event{Activity: a})
}

func (s *stream) diagnosticEvent(code, msg string) Event {
	return s.diagnosticFor(code, s.lineType, msg, s.raw)
}

// diagnosticFor builds a diagnostic about a line of the given type, with
// raw as evidence.
func (s *stream) diagnosticFor(code, lineType, msg string, raw []byte) Event {
	o := s.observation(eventstore.ConfidenceDiagnostic, &eventstore.DiagnosticSignal{
		Code: code, Message: clip(msg, maxSummaryBytes), Adapter: s.provider,
		LineType: clip(lineType, maxTypeBytes), AgentVersion: s.version,
	})
	o.RawText = clip(string(raw), maxRawBytes)
	return Event{Observation: o}
}

// diagnose records something noticed in the output, with the line as raw
// evidence.
func (s *stream) diagnose(code, msg string) { s.add(s.diagnosticEvent(code, msg)) }

// unknownLine reports a line type the parser does not know, once per type:
// a CLI that prints a new kind of line prints it again and again, and one
// diagnostic says all there is to say.
func (s *stream) unknownLine(typ string) {
	if !s.firstUnknown("line", typ) {
		return
	}
	s.lineType = typ
	if typ == "" {
		s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s output line without a type (%s); the parser skips such lines", s.provider, s.agent()))
		return
	}
	s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s output line type %q is not known to this parser (%s); the parser skips such lines", s.provider, clip(typ, maxTypeBytes), s.agent()))
}

// unknown reports a part of a known line (a content block, an item) whose
// type the parser does not know, once per kind of part and type.
func (s *stream) unknown(what, typ string) {
	if !s.firstUnknown(what, typ) {
		return
	}
	if typ == "" {
		s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s without a type in a %q line (%s)", s.provider, what, clip(s.lineType, maxTypeBytes), s.agent()))
		return
	}
	s.diagnose(CodeUnknownEvent, fmt.Sprintf("%s %s type %q in a %q line is not known to this parser (%s)", s.provider, what, clip(typ, maxTypeBytes), clip(s.lineType, maxTypeBytes), s.agent()))
}

func (s *stream) firstUnknown(what, typ string) bool {
	k := key(what + "\x00" + typ)
	if _, ok := s.unknowns.get(k); ok {
		return false
	}
	s.unknowns.put(k, struct{}{})
	return true
}

// agent names the CLI and its version for diagnostic messages.
func (s *stream) agent() string {
	if s.version == "" {
		return "agent version unknown"
	}
	return "agent version " + s.version
}

// learnSession records the CLI's session id and version as the output
// states them. An Event{Session} goes out the first time, and again when
// either changes; every observation after it carries the session id. An id
// that cannot be a journal id (empty or too long) is not a session id.
func (s *stream) learnSession(id, version string) {
	version = clip(version, maxTypeBytes)
	changed := false
	if version != "" && version != s.version {
		s.version, changed = version, true
	}
	if id = nativeID(id); id != "" && id != s.session {
		s.session, changed = id, true
	}
	s.native.SessionID = s.session
	if changed && s.session != "" {
		s.add(Event{Session: &Session{ID: s.session, AgentVersion: s.version}})
	}
}

// turnEnd says the turn whose claim was just reported is over.
func (s *stream) turnEnd(failed bool, reason string) {
	s.add(Event{TurnEnd: &TurnEnd{Failed: failed, Reason: clip(reason, maxSummaryBytes)}})
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

// failed reports a failed claim and returns the reason it gave.
func (s *stream) failed(reason, detail string) string {
	if strings.TrimSpace(reason) == "" {
		reason = s.provider + " reported a failure without a reason"
	}
	reason = clip(reason, maxSummaryBytes)
	s.observe(&eventstore.FailedClaimSignal{Reason: reason, Detail: clip(detail, maxSummaryBytes)})
	return reason
}

// stepUsage reports the usage of one model request (a step) as an
// increment and returns it. Providers repeat a step's usage on every line
// of the step (one line per content block) and may raise a count on later
// lines, so the usage already reported for the step's id is subtracted:
// the same numbers seen twice add nothing. An empty id cannot be
// deduplicated and counts in full.
func (s *stream) stepUsage(id string, in, out *int64) (dIn, dOut int64) {
	in, out = nonNegative(in), nonNegative(out)
	var prev [2]int64
	if id != "" {
		id = key(id)
		prev, _ = s.steps.get(id)
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
		s.steps.put(id, prev)
	}
	s.increment(dIn, dOut)
	return dIn, dOut
}

// increment reports usage that adds to the running totals; zero counts are
// left out, and nothing is reported when both are zero. Total is always the
// sum of the two: the runtime adds totals as it adds counts, so an
// increment without one would leave the running total short.
func (s *stream) increment(in, out int64) {
	if in <= 0 && out <= 0 {
		return
	}
	u := &eventstore.UsageSignal{TotalTokens: ptr(addSat(max(in, 0), max(out, 0)))}
	if in > 0 {
		u.InputTokens = ptr(in)
	}
	if out > 0 {
		u.OutputTokens = ptr(out)
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

// openTool reports a tool call that started: an activity update with the
// call (status started), the tool as the active tool, the activity and the
// target. A call with an id is tracked until closeTool sees the id; one
// already open, or already closed, is not reported again.
func (s *stream) openTool(id, name string, act eventstore.Activity, target *eventstore.Target) {
	name = toolName(name)
	a := &eventstore.ActivityUpdated{Activity: act, CurrentTarget: target,
		Telemetry: &eventstore.Telemetry{ActiveToolName: name},
		ToolCall:  &eventstore.ToolCall{ID: nativeID(id), Name: name, Status: eventstore.ToolCallStarted}}
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
		s.open[id] = openCall{order: s.opened, name: name}
		a.Capabilities = &eventstore.Capabilities{ToolCallActive: ptr(true)}
	}
	s.activity(a)
}

// outcome is how a tool call ended.
type outcome struct {
	failed bool
	err    string // what the tool or the CLI said, for a failed call
	exit   *int64 // a shell command's exit code, when the CLI reports it
}

// closeTool reports a tool call that ended: an activity update with the
// call's status, and its error and exit code when it failed. When it was
// the last open call, the same update says no tool call is active. Results
// for calls that are not open (never seen, already closed or forgotten)
// are ignored.
func (s *stream) closeTool(id string, out outcome) {
	if id == "" {
		return
	}
	k := key(id)
	call, ok := s.open[k]
	if !ok {
		return
	}
	delete(s.open, k)
	s.closed.put(k, struct{}{})
	tc := &eventstore.ToolCall{ID: nativeID(id), Name: call.name, Status: eventstore.ToolCallSucceeded}
	if out.failed {
		tc.Status, tc.Error = eventstore.ToolCallFailed, clip(strings.TrimSpace(out.err), maxErrorBytes)
		if out.exit != nil {
			tc.ExitCode = ptr(*out.exit)
		}
	}
	a := &eventstore.ActivityUpdated{ToolCall: tc}
	if len(s.open) == 0 {
		a.Capabilities = &eventstore.Capabilities{ToolCallActive: ptr(false)}
	}
	s.activity(a)
	if items, ok := s.plans.get(k); ok && items != nil {
		s.plans.put(k, nil)
		if !out.failed {
			s.reportPlan(items)
		}
	}
}

// planWhenDone holds the todo list a call sets until the call ends: it
// becomes the plan if the call succeeds (a call the CLI refuses sets
// nothing). A call without an id, whose end cannot be matched, sets it at
// once.
func (s *stream) planWhenDone(id string, items []eventstore.PlanItem) {
	if items == nil {
		items = []eventstore.PlanItem{}
	}
	if id == "" {
		s.reportPlan(items)
		return
	}
	s.plans.put(key(id), items)
}

// toolRunning reports that a tool is still at work (a progress beat): the
// active tool only, so that the update stays cheap.
func (s *stream) toolRunning(name string) {
	if name == "" {
		return
	}
	s.activity(&eventstore.ActivityUpdated{Telemetry: &eventstore.Telemetry{ActiveToolName: clip(name, maxLabelBytes)}})
}

// reportPlan reports the agent's plan as a whole. The same plan twice, in a
// row, is reported once; an empty plan is reported only when it clears one
// reported before.
func (s *stream) reportPlan(items []eventstore.PlanItem) {
	if len(items) > maxPlanItems {
		items = items[:maxPlanItems]
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
	s.observe(&eventstore.PlanSignal{Items: items})
}

// planItem builds one item of a plan with its text and id bounded; an item
// without text takes its id as text, and one with neither is left out.
func planItem(id, text string, status eventstore.PlanItemStatus) (eventstore.PlanItem, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		text = strings.TrimSpace(id)
	}
	if text == "" {
		return eventstore.PlanItem{}, false
	}
	return eventstore.PlanItem{ID: clip(id, eventstore.MaxIDLength), Text: clip(text, maxLabelBytes), Status: status}, true
}

func (s *stream) forgetOldestCall() {
	oldest, first := "", uint64(math.MaxUint64)
	for id, c := range s.open {
		if c.order < first {
			oldest, first = id, c.order
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

// nativeID returns a provider id as the journal can keep it, or "" when it
// cannot be a journal id (empty or longer than eventstore.MaxIDLength).
func nativeID(id string) string {
	if id == "" || len(id) > eventstore.MaxIDLength {
		return ""
	}
	return id
}

// toolName is the name a tool call is recorded under: the journal requires
// one.
func toolName(name string) string {
	if name == "" {
		return "unknown"
	}
	return clip(name, maxLabelBytes)
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
	return textclip.Fit(s, max)
}

// tail keeps the last max bytes of s, cutting at a rune boundary and
// marking the cut: the end of a command's output says why it failed.
func tail(s string, max int) string {
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

// oneLine folds s onto one line and bounds it, for questions built from a
// tool's arguments.
func oneLine(s string, max int) string {
	return clip(strings.Join(strings.Fields(s), " "), max)
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

// advertise reports the agent's slash commands when they differ from the
// last ones reported.
func (s *stream) advertise(list []Command) {
	var key strings.Builder
	for _, c := range list {
		key.WriteString(c.Name + "\x00" + c.Description + "\x00" + c.Hint + "\x00")
	}
	if key.String() == s.advertised && s.advertised != "" {
		return
	}
	s.advertised = key.String()
	s.add(Event{Commands: &Commands{List: list}})
}
