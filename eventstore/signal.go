package eventstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/internal/oneof"
	"github.com/agentjournal/agentjournal/internal/strictjson"

	gojson "github.com/goccy/go-json"
)

// SignalType names an agent signal carried in observation.recorded. Signal
// types and payload schema keys are persisted: never rename one.
type SignalType string

const (
	SignalProgress             SignalType = "progress"
	SignalStatus               SignalType = "status"
	SignalNeedsInput           SignalType = "needs_input"
	SignalBlocked              SignalType = "blocked"
	SignalReadyForVerification SignalType = "ready_for_verification"
	SignalCompletedClaim       SignalType = "completed_claim"
	SignalFailedClaim          SignalType = "failed_claim"
	SignalMessage              SignalType = "message"
	SignalUsage                SignalType = "usage"
	SignalDiagnostic           SignalType = "diagnostic"
	SignalPlan                 SignalType = "plan"
	SignalCheckpoint           SignalType = "checkpoint"
)

// TimelineKind is how replay projects a signal into the timeline.
type TimelineKind string

const (
	TimelineNone       TimelineKind = ""
	TimelineProgress   TimelineKind = "progress"
	TimelineStatus     TimelineKind = "status"
	TimelineNeedsInput TimelineKind = "needs-input"
	TimelineBlocked    TimelineKind = "blocked"
	TimelineClaim      TimelineKind = "claim"
	TimelineFailure    TimelineKind = "failure"
	TimelineChat       TimelineKind = "chat"
	TimelinePlan       TimelineKind = "plan"
	TimelineDiagnostic TimelineKind = "diagnostic"
)

// SignalSpec is one entry of the signal registry: the single place that
// says what a signal carries, whether agents are offered it, and how replay
// shows it.
type SignalSpec struct {
	Type SignalType
	// SchemaKey names the payload schema; "" for signals without one.
	SchemaKey string
	// Surfaced signals are offered to agents (MCP tools, marker docs).
	Surfaced bool
	// Timeline is the projection kind; TimelineNone for none.
	Timeline TimelineKind
	// Description says when an agent sends it.
	Description string
	payload     reflect.Type
}

// NewPayload returns a pointer to a zero payload of the signal's type.
func (s SignalSpec) NewPayload() SignalPayload {
	return reflect.New(s.payload).Interface().(SignalPayload)
}

// SignalPayload is the payload of one signal type.
type SignalPayload interface {
	SignalType() SignalType
	// TimelineText is the one line a timeline shows for the signal.
	TimelineText() string
	// summary is what an observation's Summary shows of the signal
	// after its type (describe.go).
	summary() string
	validate(p *problems, field string)
}

// Signal is an agent-authored signal: {"type": …, "payload": {…}}.
//
// It encodes through its tags, not a MarshalJSON of its own: encoding/json
// scans again whatever a marshaler returns, which on the append path cost
// more than encoding the payload.
type Signal struct {
	Type    SignalType    `json:"type"`
	Payload SignalPayload `json:"payload"`
}

// NewSignal wraps a payload with its type.
func NewSignal(p SignalPayload) *Signal { return &Signal{Type: p.SignalType(), Payload: p} }

type signalWire struct {
	Type    SignalType      `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// UnmarshalJSON decodes the payload strictly into the type the registry
// names for the signal type.
func (s *Signal) UnmarshalJSON(b []byte) error {
	if spec, payload, ok := sniffSignal(b); ok {
		// The payload is decoded from where it lies instead of through a
		// copy in signalWire; anything the fast path does not accept is
		// decided by the path below, errors included.
		if pl := spec.NewPayload(); decodeStrict(payload, pl) == nil {
			s.Type, s.Payload = spec.Type, pl
			return nil
		}
	}
	return s.decodeWire(b)
}

// decodeWire is UnmarshalJSON for any form of signal.
func (s *Signal) decodeWire(b []byte) error {
	var w signalWire
	if err := decodeStrict(b, &w); err != nil {
		return fieldErr("signal", err, []string{"type", "payload"})
	}
	spec, ok := signalRegistry[w.Type]
	if !ok {
		return &ValidationError{Kind: KindObservation, Problems: []FieldError{{
			Field: "signal.type", Problem: fmt.Sprintf("unknown signal type %q", string(w.Type)), Accepted: oneof.Strings(SignalTypes()),
		}}}
	}
	if len(w.Payload) == 0 || string(w.Payload) == "null" {
		return &ValidationError{Kind: KindObservation, Problems: []FieldError{{Field: "signal.payload", Problem: "required"}}}
	}
	pl := spec.NewPayload()
	if err := decodeStrict(w.Payload, pl); err != nil {
		return fieldErr("signal.payload", err, jsonFields(spec.payload))
	}
	s.Type, s.Payload = w.Type, pl
	return nil
}

// sniffSignal reads a signal in the form MarshalJSON writes,
// {"type":"…","payload":…}, returning the spec of a registered type and
// the bytes of the payload, which are not checked. Any other form (white
// space, other keys or key order, escapes, a null payload) returns false.
func sniffSignal(b []byte) (SignalSpec, []byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"type":"`))
	if !ok {
		return SignalSpec{}, nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return SignalSpec{}, nil, false
	}
	spec, ok := signalRegistry[SignalType(rest[:i])]
	if !ok {
		return SignalSpec{}, nil, false
	}
	payload, ok := bytes.CutPrefix(rest[i+1:], []byte(`,"payload":`))
	if !ok {
		return SignalSpec{}, nil, false
	}
	payload, ok = bytes.CutSuffix(payload, []byte(`}`))
	if !ok || len(payload) == 0 || payload[0] != '{' {
		return SignalSpec{}, nil, false
	}
	return spec, payload, true
}

func (s *Signal) validate(p *problems, field string) {
	spec, ok := signalRegistry[s.Type]
	if !ok {
		p.add(field+".type", fmt.Sprintf("unknown signal type %q", string(s.Type)), oneof.Strings(SignalTypes())...)
		return
	}
	if s.Payload == nil {
		p.add(field+".payload", "required")
		return
	}
	if s.Payload.SignalType() != s.Type {
		p.add(field+".payload", fmt.Sprintf("payload is for %q, not %q", s.Payload.SignalType(), s.Type))
		return
	}
	_ = spec
	s.Payload.validate(p, field+".payload")
}

// The payloads. Field docs (the doc tag) feed the generated JSON Schema and
// the signal reference, so each field is described once.

// ProgressSignal reports progress on the current work.
type ProgressSignal struct {
	Summary string `json:"summary" doc:"one line saying what is being done"`
	Detail  string `json:"detail,omitempty" doc:"longer explanation"`
	Units   *Units `json:"units,omitempty" doc:"counted progress: completed of total in some unit"`
}

// StatusSignal reports a change of the agent's own status.
type StatusSignal struct {
	Summary string `json:"summary" doc:"one line status for the operator"`
	Phase   string `json:"phase,omitempty" doc:"the phase the agent is in, e.g. planning or testing"`
}

// NeedsInputSignal asks the operator a question and waits for the answer.
type NeedsInputSignal struct {
	RequestID string   `json:"requestId" doc:"id of this request; the answer refers to it"`
	Question  string   `json:"question" doc:"what the agent needs to know"`
	Choices   []string `json:"choices,omitempty" doc:"suggested answers, if the question has a fixed set"`
	Kind      string   `json:"kind,omitempty" doc:"question (the default) or permission: the agent asks to run a tool, and the answer is allow, deny or allow-always" enum:"question,permission"`
	Tool      *ToolUse `json:"tool,omitempty" doc:"for a permission request, the tool call waiting on the answer"`
}

// ToolUse is a tool call as an agent asks permission for it.
type ToolUse struct {
	Name  string         `json:"name" doc:"the tool's name"`
	Input map[string]any `json:"input,omitempty" doc:"the tool's input, as the agent gave it"`
}

// BlockedSignal says the agent cannot continue without outside help.
type BlockedSignal struct {
	Reason string `json:"reason" doc:"what blocks the agent"`
	Needs  string `json:"needs,omitempty" doc:"what would unblock it"`
}

// ReadyForVerificationSignal says the work is ready to be checked.
type ReadyForVerificationSignal struct {
	Summary  string   `json:"summary" doc:"what is ready to be verified"`
	Evidence []string `json:"evidence,omitempty" doc:"pointers to evidence: files, commands, test runs"`
}

// CompletedClaimSignal claims the task is done.
type CompletedClaimSignal struct {
	Summary  string   `json:"summary" doc:"what was done"`
	Evidence []string `json:"evidence,omitempty" doc:"pointers to evidence: files, commands, test runs"`
}

// FailedClaimSignal claims the task failed.
type FailedClaimSignal struct {
	Reason string `json:"reason" doc:"why the task failed"`
	Detail string `json:"detail,omitempty" doc:"longer explanation or error output"`
}

// MessageSignal is operator-visible text from the agent.
type MessageSignal struct {
	Text   string `json:"text" doc:"the message text"`
	Format string `json:"format,omitempty" doc:"plain (default) or markdown" enum:"plain,markdown"`
}

// UsageSignal reports token usage. Cumulative totals replace earlier ones;
// increments add to them.
type UsageSignal struct {
	InputTokens  *int64 `json:"inputTokens,omitempty" doc:"input tokens"`
	OutputTokens *int64 `json:"outputTokens,omitempty" doc:"output tokens"`
	TotalTokens  *int64 `json:"totalTokens,omitempty" doc:"total tokens"`
	Cumulative   bool   `json:"cumulative,omitempty" doc:"true when the counts are running totals rather than increments"`
}

// DiagnosticSignal records something the daemon noticed while parsing agent
// output, e.g. an unknown provider event or a malformed marker.
type DiagnosticSignal struct {
	Message string `json:"message" doc:"what was noticed"`
	Code    string `json:"code,omitempty" doc:"a stable code, e.g. unknown-event or bad-marker"`
	Adapter string `json:"adapter,omitempty" doc:"the agent adapter whose output it was, e.g. claude-code"`
	// LineType is the provider's own name for what was not understood.
	LineType     string `json:"lineType,omitempty" doc:"the provider's type of the line not understood, e.g. rate_limit_event"`
	AgentVersion string `json:"agentVersion,omitempty" doc:"the agent CLI's version, when it reports one"`
}

// PlanSignal is the agent's plan, its todo list, as a whole: each signal
// replaces the one before it.
type PlanSignal struct {
	Items []PlanItem `json:"items" doc:"the plan's items, in the agent's order"`
}

// CheckpointSignal asks for a checkpoint of the run as it is now (spec 004
// AgentCheckpoint): the read models capture the run's status, todos,
// approvals and artifacts at this record.
type CheckpointSignal struct {
	Title   string `json:"title" doc:"what the work is, in a line"`
	Summary string `json:"summary,omitempty" doc:"where the work stands, enough to resume it without asking again"`
}

// Checkpoint signal limits, the same as an operator's checkpoint.
const (
	MaxCheckpointTitle   = 200
	MaxCheckpointSummary = 2000
)

// PlanItem is one item of a plan.
type PlanItem struct {
	ID     string         `json:"id,omitempty" doc:"the agent's id for the item, when it gives one"`
	Text   string         `json:"text" doc:"what the item is"`
	Status PlanItemStatus `json:"status" doc:"open, in-progress, done or dropped" enum:"open,in-progress,done,dropped"`
}

func (*ProgressSignal) SignalType() SignalType             { return SignalProgress }
func (*StatusSignal) SignalType() SignalType               { return SignalStatus }
func (*NeedsInputSignal) SignalType() SignalType           { return SignalNeedsInput }
func (*BlockedSignal) SignalType() SignalType              { return SignalBlocked }
func (*ReadyForVerificationSignal) SignalType() SignalType { return SignalReadyForVerification }
func (*CompletedClaimSignal) SignalType() SignalType       { return SignalCompletedClaim }
func (*FailedClaimSignal) SignalType() SignalType          { return SignalFailedClaim }
func (*MessageSignal) SignalType() SignalType              { return SignalMessage }
func (*UsageSignal) SignalType() SignalType                { return SignalUsage }
func (*DiagnosticSignal) SignalType() SignalType           { return SignalDiagnostic }
func (*PlanSignal) SignalType() SignalType                 { return SignalPlan }
func (*CheckpointSignal) SignalType() SignalType           { return SignalCheckpoint }

func (s *ProgressSignal) TimelineText() string { return s.Summary }
func (s *StatusSignal) TimelineText() string   { return s.Summary }
func (s *NeedsInputSignal) TimelineText() string {
	return s.Question
}
func (s *BlockedSignal) TimelineText() string              { return s.Reason }
func (s *ReadyForVerificationSignal) TimelineText() string { return s.Summary }
func (s *CompletedClaimSignal) TimelineText() string       { return s.Summary }
func (s *FailedClaimSignal) TimelineText() string          { return s.Reason }
func (s *MessageSignal) TimelineText() string              { return s.Text }
func (s *UsageSignal) TimelineText() string {
	return fmt.Sprintf("tokens in %d out %d total %d", deref(s.InputTokens), deref(s.OutputTokens), deref(s.TotalTokens))
}
func (s *DiagnosticSignal) TimelineText() string { return s.Message }
func (s *CheckpointSignal) TimelineText() string { return "checkpoint: " + s.Title }
func (s *PlanSignal) TimelineText() string {
	n := map[PlanItemStatus]int{}
	for _, it := range s.Items {
		n[it.Status]++
	}
	text := fmt.Sprintf("plan: %d of %d done", n[PlanItemDone], len(s.Items))
	for _, it := range s.Items {
		if it.Status == PlanItemInProgress {
			return text + "; now: " + it.Text
		}
	}
	return text
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (s *ProgressSignal) validate(p *problems, f string) {
	p.required(f+".summary", s.Summary != "")
	if s.Units != nil {
		p.nonNegative(f+".units.completed", s.Units.Completed)
		p.nonNegative(f+".units.total", s.Units.Total)
	}
}
func (s *StatusSignal) validate(p *problems, f string) { p.required(f+".summary", s.Summary != "") }
func (s *NeedsInputSignal) validate(p *problems, f string) {
	p.id(f+".requestId", s.RequestID)
	p.required(f+".question", s.Question != "")
	optEnum(p, f+".kind", InputKind(s.Kind), inputKinds)
	if s.Tool != nil {
		p.required(f+".tool.name", s.Tool.Name != "")
	}
}
func (s *BlockedSignal) validate(p *problems, f string) { p.required(f+".reason", s.Reason != "") }
func (s *ReadyForVerificationSignal) validate(p *problems, f string) {
	p.required(f+".summary", s.Summary != "")
}
func (s *CompletedClaimSignal) validate(p *problems, f string) {
	p.required(f+".summary", s.Summary != "")
}
func (s *FailedClaimSignal) validate(p *problems, f string) { p.required(f+".reason", s.Reason != "") }
func (s *CheckpointSignal) validate(p *problems, f string) {
	p.required(f+".title", s.Title != "")
	if len(s.Title) > MaxCheckpointTitle {
		p.add(f+".title", fmt.Sprintf("%d bytes (want at most %d)", len(s.Title), MaxCheckpointTitle))
	}
	if len(s.Summary) > MaxCheckpointSummary {
		p.add(f+".summary", fmt.Sprintf("%d bytes (want at most %d)", len(s.Summary), MaxCheckpointSummary))
	}
}
func (s *MessageSignal) validate(p *problems, f string) {
	p.required(f+".text", s.Text != "")
	if s.Format != "" && s.Format != "plain" && s.Format != "markdown" {
		p.add(f+".format", fmt.Sprintf("%q is not accepted", s.Format), "plain", "markdown")
	}
}
func (s *UsageSignal) validate(p *problems, f string) {
	p.nonNegative(f+".inputTokens", s.InputTokens)
	p.nonNegative(f+".outputTokens", s.OutputTokens)
	p.nonNegative(f+".totalTokens", s.TotalTokens)
	if s.InputTokens == nil && s.OutputTokens == nil && s.TotalTokens == nil {
		p.add(f, "at least one of inputTokens, outputTokens, totalTokens is required")
	}
}
func (s *DiagnosticSignal) validate(p *problems, f string) { p.required(f+".message", s.Message != "") }
func (s *PlanSignal) validate(p *problems, f string) {
	for i, it := range s.Items {
		p.required(fmt.Sprintf("%s.items[%d].text", f, i), it.Text != "")
		enum(p, fmt.Sprintf("%s.items[%d].status", f, i), it.Status, PlanItemStatuses)
	}
}

var signalRegistry = map[SignalType]SignalSpec{}

// signalOrder keeps the registry's documented order.
var signalOrder []SignalType

func registerSignal(s SignalSpec, payload SignalPayload) {
	s.payload = reflect.TypeOf(payload).Elem()
	signalRegistry[s.Type] = s
	signalOrder = append(signalOrder, s.Type)
}

func init() {
	registerSignal(SignalSpec{Type: SignalProgress, SchemaKey: "agent-signal.progress.v1", Surfaced: true, Timeline: TimelineProgress,
		Description: "Report progress on the current work."}, &ProgressSignal{})
	registerSignal(SignalSpec{Type: SignalStatus, SchemaKey: "agent-signal.status.v1", Surfaced: true, Timeline: TimelineStatus,
		Description: "Report a change of your own status."}, &StatusSignal{})
	registerSignal(SignalSpec{Type: SignalNeedsInput, SchemaKey: "agent-signal.needs-input.v1", Surfaced: true, Timeline: TimelineNeedsInput,
		Description: "Ask the operator a question; the answer arrives as a message that names the request id."}, &NeedsInputSignal{})
	registerSignal(SignalSpec{Type: SignalBlocked, SchemaKey: "agent-signal.blocked.v1", Surfaced: true, Timeline: TimelineBlocked,
		Description: "Say you cannot continue without outside help."}, &BlockedSignal{})
	registerSignal(SignalSpec{Type: SignalReadyForVerification, SchemaKey: "agent-signal.ready-for-verification.v1", Surfaced: true, Timeline: TimelineClaim,
		Description: "Say the work is ready to be verified."}, &ReadyForVerificationSignal{})
	registerSignal(SignalSpec{Type: SignalCompletedClaim, SchemaKey: "agent-signal.completed-claim.v1", Surfaced: true, Timeline: TimelineClaim,
		Description: "Claim the task is complete."}, &CompletedClaimSignal{})
	registerSignal(SignalSpec{Type: SignalFailedClaim, SchemaKey: "agent-signal.failed-claim.v1", Surfaced: true, Timeline: TimelineFailure,
		Description: "Claim the task failed."}, &FailedClaimSignal{})
	registerSignal(SignalSpec{Type: SignalMessage, SchemaKey: "agent-signal.message.v1", Surfaced: true, Timeline: TimelineChat,
		Description: "Send operator-visible text."}, &MessageSignal{})
	registerSignal(SignalSpec{Type: SignalUsage, Description: "Token usage, from provider output."}, &UsageSignal{})
	registerSignal(SignalSpec{Type: SignalDiagnostic, Timeline: TimelineDiagnostic, Description: "Something noticed while reading agent output."}, &DiagnosticSignal{})
	registerSignal(SignalSpec{Type: SignalPlan, SchemaKey: "agent-signal.plan.v1", Surfaced: true, Timeline: TimelinePlan,
		Description: "Send your plan (todo list) as a whole, each item with its status; each plan replaces the one before it."}, &PlanSignal{})
	registerSignal(SignalSpec{Type: SignalCheckpoint, SchemaKey: "agent-signal.checkpoint.v1", Surfaced: true,
		Description: "Mark a checkpoint: the run's state is captured here, so the work can be resumed from it."}, &CheckpointSignal{})
}

// LookupSignal returns the registry entry for a signal type.
func LookupSignal(t SignalType) (SignalSpec, bool) {
	s, ok := signalRegistry[t]
	return s, ok
}

// SignalTypes lists every registered signal type in registry order.
func SignalTypes() []SignalType { return slices.Clone(signalOrder) }

// SurfacedSignalTypes lists the signal types offered to agents.
func SurfacedSignalTypes() []SignalType {
	var out []SignalType
	for _, t := range signalOrder {
		if signalRegistry[t].Surfaced {
			out = append(out, t)
		}
	}
	return out
}

// Schema returns the JSON Schema of the signal's payload, generated from the
// payload type so that the schema, the decoder and the docs cannot drift.
func (s SignalSpec) Schema() map[string]any {
	sc := schemaOf(s.payload)
	if s.SchemaKey != "" {
		sc["$id"] = s.SchemaKey
	}
	sc["description"] = s.Description
	return sc
}

// schemaOf builds a JSON Schema for a struct type from its json and doc tags.
func schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object"}
	case reflect.Struct:
	default:
		return map[string]any{}
	}
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ps := schemaOf(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			ps["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			ps["enum"] = strings.Split(e, ",")
		}
		if ps["type"] == "string" && !strings.Contains(opts, "omitempty") {
			ps["minLength"] = 1
		}
		props[name] = ps
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	sc := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sc["required"] = required
	}
	return sc
}

// jsonFields lists the JSON field names of a struct type, embedded structs
// included, for "unknown field" errors.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// trailing data. The fast path, taken by records as Encode writes them,
// checks that each object key is spelled exactly as a field of v's type
// (knownKeys) and then decodes with go-json's non-stream decoder, which
// refuses trailing data but ignores unknown fields: together about a fifth
// faster than the stream decoder below, with half the allocations
// (BenchmarkDecodeKind). Anything else goes to decodeStrictSlow,
// which accepts, refuses and words errors as it always has.
func decodeStrict(b []byte, v any) error {
	if knownKeys(b, strictjson.ShapeOf(reflect.TypeOf(v))) && gojson.Unmarshal(b, v) == nil {
		return nil
	}
	// The slow path decodes into v itself, not into a fresh value copied to
	// v: decodeAs keeps the record and its mutatesContext flag behind
	// pointers v holds, which a copy would replace. v is untouched when the
	// key check fails. When go-json fails after it, the slow path decodes
	// the same bytes, with every key naming a field, into the same fields
	// again; and callers drop v on error.
	return decodeStrictSlow(b, v)
}

// decodeStrictSlow decodes with go-json's stream decoder, which refuses
// unknown fields, and on failure decodes again with encoding/json, whose
// errors name the field: errors are rare, their messages matter.
func decodeStrictSlow(b []byte, v any) error {
	err := decodeStream(b, v)
	if err == nil {
		return nil
	}
	fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if stdErr := decodeOnce(json.NewDecoder(bytes.NewReader(b)), b, fresh); stdErr != nil {
		return stdErr
	}
	if errors.Is(err, errStreamPanic) {
		// What go-json could not read encoding/json decides alone; into v
		// itself, for the pointers decodeAs keeps in it.
		return decodeOnce(json.NewDecoder(bytes.NewReader(b)), b, v)
	}
	return err
}

// errStreamPanic reports a panic in go-json's stream decoder. v0.10.6 reads
// past its buffer on long strings that are not UTF-8 (it replaces each bad
// byte with the three bytes of U+FFFD in place), which would crash a reader
// on one bad record.
var errStreamPanic = errors.New("go-json stream decoder panicked")

func decodeStream(b []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errStreamPanic, p)
		}
	}()
	return decodeOnce(gojson.NewDecoder(bytes.NewReader(b)), b, v)
}

func decodeOnce(dec interface {
	DisallowUnknownFields()
	Decode(v any) error
}, b []byte, v any) error {
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// The stream decoders stop after one value; only the end of the input
	// may follow it.
	var more json.RawMessage
	if err := dec.Decode(&more); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
