package eventstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

// KindSpec is one entry of the journal record registry.
type KindSpec struct {
	Kind Kind
	// Description says what the record is for.
	Description string
	// NaturalKey names the field that identifies the record in its journal
	// and feeds its deterministic id; "" when the writer chooses the key.
	NaturalKey string
	typ        reflect.Type
	fields     []string
	// text is how a record of the kind reads for a person (describe.go).
	text describer
}

// New returns a pointer to a zero record of the kind.
func (k KindSpec) New() Record { return reflect.New(k.typ).Interface().(Record) }

// Fields lists the kind's JSON field names, base fields included.
func (k KindSpec) Fields() []string { return slices.Clone(k.fields) }

var kindRegistry = map[Kind]KindSpec{}
var kindOrder []Kind

// registerKind adds a kind to the registry with its summary and timeline
// text: a kind cannot be registered without them, so every listing,
// timeline and narrative that asks the registry can tell it.
func registerKind(s KindSpec, r Record, d describer) {
	switch {
	case d.summary == nil || d.timeline == nil:
		panic(fmt.Sprintf("eventstore: kind %s registered without its summary and timeline text", s.Kind))
	case d.typ != reflect.TypeOf(r):
		panic(fmt.Sprintf("eventstore: kind %s is a %s but is described as a %s", s.Kind, reflect.TypeOf(r), d.typ))
	}
	s.text = d
	s.typ = reflect.TypeOf(r).Elem()
	s.fields = jsonFields(s.typ)
	kindRegistry[s.Kind] = s
	kindOrder = append(kindOrder, s.Kind)
}

func init() {
	registerKind(KindSpec{Kind: KindHeader, NaturalKey: "(one per journal)",
		Description: "names the journal and freezes the launch contract; always sequence 1"}, &Header{},
		describe(headerSummary, headerTimeline))
	registerKind(KindSpec{Kind: KindMessage, NaturalKey: "messageId",
		Description: "owner, operator or daemon input accepted before delivery"}, &MessageAccepted{},
		describe(messageSummary, messageTimeline))
	registerKind(KindSpec{Kind: KindDelivery, NaturalKey: "messageId + status",
		Description: "one delivery attempt of an accepted message and its outcome"}, &MessageDelivery{},
		describe(deliverySummary, deliveryTimeline))
	registerKind(KindSpec{Kind: KindObservation, NaturalKey: "observationId",
		Description: "one normalized runtime observation, optionally carrying an agent signal"}, &Observation{},
		describe(observationSummary, observationTimeline))
	registerKind(KindSpec{Kind: KindDecision, NaturalKey: "decisionId",
		Description: "the observation policy's durable outcome"}, &Decision{},
		describe(decisionSummary, decisionTimeline))
	registerKind(KindSpec{Kind: KindStateChanged,
		Description: "a semantic lifecycle, attention, activity or input-request transition"}, &StateChanged{},
		describe(stateSummary, stateTimeline))
	registerKind(KindSpec{Kind: KindActivity,
		Description: "compressible activity, progress and telemetry"}, &ActivityUpdated{},
		describe(activitySummary, activityTimeline))
	registerKind(KindSpec{Kind: KindOwnerEffect, NaturalKey: "effectId",
		Description: "an accepted effect routed to the owning Entity"}, &OwnerEffect{},
		describe(effectSummary, effectTimeline))
	registerKind(KindSpec{Kind: KindProjection,
		Description: "reserved: a materialized projection item"}, &ProjectionRecorded{},
		describe(projectionSummary, projectionTimeline))
	registerKind(KindSpec{Kind: KindInterruption, NaturalKey: "(one per journal)",
		Description: "a run ended by something other than the agent itself (crash, shutdown, system_restart, timeout, canceled), naming the turn, message and input request it cut short"}, &Interruption{},
		describe(interruptionSummary, interruptionTimeline))
	registerKind(KindSpec{Kind: KindSnapshot, NaturalKey: "atSequence",
		Description: "a snapshot of the execution's git work tree (resource) as a commit under a private ref, taken after the record atSequence: at the start and at each turn boundary"}, &SnapshotCreated{},
		describe(snapshotSummary, snapshotTimeline))
	registerKind(KindSpec{Kind: KindRestore, NaturalKey: "resource",
		Description: "a fork's attempt to get its parent's working directory by keep, snapshot or discard, and the outcome"}, &RestoreAttempted{},
		describe(restoreSummary, restoreTimeline))
	registerKind(KindSpec{Kind: KindCheckpoint, NaturalKey: "checkpointId",
		Description: "a checkpoint of the run (spec 004 AgentCheckpoint): its status, todos, artifacts, approvals and resume token as they were, at each turn end and on request"}, &CheckpointCreated{},
		describe(checkpointSummary, checkpointTimeline))
}

// Kinds lists the record kinds in registry order.
func Kinds() []Kind { return slices.Clone(kindOrder) }

// LookupKind returns the registry entry of a kind.
func LookupKind(k Kind) (KindSpec, bool) {
	s, ok := kindRegistry[k]
	return s, ok
}

// Decode reads one record strictly: the kind must be registered, every field
// known, every required field present, every enumeration value accepted and
// the schema version 1. The error names the field and what is accepted.
func Decode(data []byte) (Record, error) {
	if k, ok := sniffKind(data); ok {
		return decodeAs(kindRegistry[k], data)
	}
	var peek struct {
		Type *Kind `json:"type"`
	}
	if err := json.Unmarshal(data, &peek); err != nil {
		return nil, &ValidationError{Problems: []FieldError{{Field: "(record)", Problem: "not a JSON object: " + jsonProblem(err)}}}
	}
	if peek.Type == nil {
		return nil, &ValidationError{Problems: []FieldError{{Field: "type", Problem: "required", Accepted: oneof.Strings(kindOrder)}}}
	}
	spec, ok := kindRegistry[*peek.Type]
	if !ok {
		return nil, &ValidationError{Problems: []FieldError{{Field: "type",
			Problem: fmt.Sprintf("unknown record type %q", string(*peek.Type)), Accepted: oneof.Strings(kindOrder)}}}
	}
	return decodeAs(spec, data)
}

// sniffKind reads the kind from the prefix every encoder here writes,
// {"recordId":"…","sequence":N,"type":"…", without parsing the record. Any
// other shape, or a kind not registered, returns false and Decode finds the
// type the slow way; either way the record is then decoded and checked in
// full.
func sniffKind(data []byte) (Kind, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(`{"recordId":"`))
	if !ok {
		return "", false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return "", false
	}
	rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"sequence":`))
	if !ok {
		return "", false
	}
	j := 0
	for j < len(rest) && '0' <= rest[j] && rest[j] <= '9' {
		j++
	}
	rest, ok = bytes.CutPrefix(rest[j:], []byte(`,"type":"`))
	if !ok || j == 0 {
		return "", false
	}
	k := bytes.IndexByte(rest, '"')
	if k < 0 {
		return "", false
	}
	// The registry's own string, not one copied out of data: the lookup
	// does not allocate.
	spec, ok := kindRegistry[Kind(rest[:k])]
	return spec.Kind, ok
}

func decodeAs(spec KindSpec, data []byte) (Record, error) {
	r := spec.New()
	var target any = r
	var mutates *bool
	if m, ok := r.(*MessageAccepted); ok {
		// mutatesContext is required but false is a valid value, so its
		// presence is read through a shadowing pointer field.
		target = &struct {
			*MessageAccepted
			MutatesContext **bool `json:"mutatesContext"`
		}{m, &mutates}
	}
	if err := decodeStrict(data, target); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Kind = spec.Kind
			return nil, ve
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			if path, accepted, ok := locateUnknown(data, spec.typ); ok {
				return nil, &ValidationError{Kind: spec.Kind, Problems: []FieldError{{Field: path, Problem: "unknown field", Accepted: accepted}}}
			}
		}
		return nil, fieldErr("", err, spec.fields).(*ValidationError).withKind(spec.Kind)
	}
	if m, ok := r.(*MessageAccepted); ok {
		if mutates == nil {
			return nil, &ValidationError{Kind: KindMessage, Problems: []FieldError{{Field: "mutatesContext", Problem: "required (true or false)"}}}
		}
		m.MutatesContext = *mutates
	}
	if err := Validate(r); err != nil {
		return nil, err
	}
	return r, nil
}

func (e *ValidationError) withKind(k Kind) *ValidationError {
	e.Kind = k
	return e
}

// Encode validates a record and returns its JSON. Type and schemaVersion are
// set from the record's Go type.
func Encode(r Record) ([]byte, error) {
	b := r.RecordBase()
	b.Type = r.Kind()
	b.SchemaVersion = SchemaVersion
	if err := Validate(r); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// Validate checks a record without encoding it.
func Validate(r Record) error {
	var p problems
	b := r.RecordBase()
	p.id("recordId", b.RecordID)
	if b.Sequence == 0 {
		p.add("sequence", "required (journal sequences start at 1)")
	}
	if b.Type != r.Kind() {
		p.add("type", fmt.Sprintf("%q does not match the record's shape %q", string(b.Type), string(r.Kind())))
	}
	if b.SchemaVersion != SchemaVersion {
		p.add("schemaVersion", fmt.Sprintf("%d is not accepted", b.SchemaVersion), "1")
	}
	p.id("journalId", b.JournalID)
	p.id("agentExecutionId", b.AgentExecutionID)
	p.id("ownerId", b.OwnerID)
	enum(&p, "scope", b.Scope, OwnerEntities)
	p.required("occurredAt", !b.OccurredAt.IsZero())
	if b.JournalID != "" && b.Scope != "" && b.OwnerID != "" && b.AgentExecutionID != "" {
		if want := JournalIDFor(b.Scope, b.OwnerID, b.AgentExecutionID); b.JournalID != want {
			p.add("journalId", fmt.Sprintf("%q is not the journal of %s/%s/%s (want %q)", b.JournalID, b.Scope, b.OwnerID, b.AgentExecutionID, want))
		}
	}
	if b.Sequence == 1 && r.Kind() != KindHeader {
		p.add("sequence", "1 is reserved for the journal.header record")
	}
	if b.Sequence > 1 && r.Kind() == KindHeader {
		p.add("sequence", fmt.Sprintf("%d: a journal.header is always sequence 1", b.Sequence))
	}
	r.validate(&p)
	return p.err(r.Kind())
}

func (r *Header) validate(p *problems) {
	if r.JournalKind != headerKind {
		p.add("kind", fmt.Sprintf("%q is not accepted", r.JournalKind), headerKind)
	}
	p.id("agentId", r.AgentID)
	r.validateLinks(p)
	if r.TimeoutMs < 0 {
		p.add("timeoutMs", fmt.Sprintf("%d: want a positive number of milliseconds, or none for no time limit", r.TimeoutMs))
	}
	if r.DispatchContext != nil {
		r.DispatchContext.validate(p, "dispatchContext")
	}
	if r.Sandbox != nil {
		enum(p, "sandbox.network", r.Sandbox.Network, SandboxNetworks)
	}
	if len(r.AgentVersion) > MaxAgentVersionLength {
		p.add("agentVersion", fmt.Sprintf("%d bytes: want at most %d, or none when the CLI gave no version", len(r.AgentVersion), MaxAgentVersionLength))
	}
	r.ProtocolDescriptor.validate(p, "protocolDescriptor")
	if r.TransportState != nil {
		r.TransportState.validate(p, "transportState")
	}
}

func (r *MessageAccepted) validate(p *problems) {
	p.id("messageId", r.MessageID)
	enum(p, "source", r.Source, messageSources)
	p.id("messageType", r.MessageType)
	p.required("payload", len(r.Payload) > 0)
	if len(r.Payload) > 0 && !json.Valid(r.Payload) {
		p.add("payload", "not valid JSON")
	}
}

func (r *MessageDelivery) validate(p *problems) {
	p.id("messageId", r.MessageID)
	enum(p, "status", r.Status, deliveryStatuses)
	enum(p, "transport", r.Transport, deliveryTransports)
	if r.Status == DeliveryFailed && r.Reason == "" {
		p.add("reason", "required when status is failed")
	}
}

func (r *Observation) validate(p *problems) {
	p.id("observationId", r.ObservationID)
	enum(p, "source", r.Source, observationSources)
	enum(p, "confidence", r.Confidence, confidences)
	if r.Signal != nil {
		r.Signal.validate(p, "signal")
	}
	if n := r.Native; n != nil {
		p.optionalID("native.sessionId", n.SessionID)
		p.optionalID("native.turnId", n.TurnID)
		p.optionalID("native.messageId", n.MessageID)
		p.optionalID("native.requestId", n.RequestID)
	}
	if r.Signal == nil && r.RawText == "" && r.Payload == nil {
		p.add("signal", "an observation carries at least one of signal, rawText, payload")
	}
}

func (r *Decision) validate(p *problems) {
	p.id("decisionId", r.DecisionID)
	p.optionalID("observationId", r.ObservationID)
	p.optionalID("messageId", r.MessageID)
	enum(p, "action", r.Action, decisionActions)
}

func (r *StateChanged) validate(p *problems) {
	if r.Lifecycle == "awaiting-input" {
		p.add("lifecycle", `"awaiting-input" is not a lifecycle: an input request is lifecycle running + attention awaiting-operator + currentInputRequestId`, oneof.Strings(Lifecycles)...)
	} else {
		optEnum(p, "lifecycle", r.Lifecycle, Lifecycles)
	}
	optEnum(p, "attention", r.Attention, Attentions)
	optEnum(p, "activity", r.Activity, Activities)
	if r.CurrentInputRequestID.Set && r.CurrentInputRequestID.ID != "" {
		p.id("currentInputRequestId", r.CurrentInputRequestID.ID)
	}
	p.optionalID("host", r.Host)
	if r.Host != "" && r.Lifecycle != LifecycleRunning && r.Lifecycle != LifecycleStarting {
		p.add("host", "a host is named on the change to starting (the run placed there) or running only")
	}
	if r.Lifecycle == "" && r.Attention == "" && r.Activity == "" && !r.CurrentInputRequestID.Set {
		p.add("lifecycle", "a state change sets at least one of lifecycle, attention, activity, currentInputRequestId")
	}
}

func (r *ActivityUpdated) validate(p *problems) {
	optEnum(p, "activity", r.Activity, Activities)
	if r.Progress != nil && r.Progress.Units != nil {
		p.nonNegative("progress.units.completed", r.Progress.Units.Completed)
		p.nonNegative("progress.units.total", r.Progress.Units.Total)
	}
	if t := r.Telemetry; t != nil {
		p.nonNegative("telemetry.inputTokens", t.InputTokens)
		p.nonNegative("telemetry.outputTokens", t.OutputTokens)
		p.nonNegative("telemetry.totalTokens", t.TotalTokens)
	}
	if r.CurrentTarget != nil {
		enum(p, "currentTarget.kind", r.CurrentTarget.Kind, targetKinds)
	}
	if c := r.ToolCall; c != nil {
		p.optionalID("toolCall.id", c.ID)
		p.required("toolCall.name", c.Name != "")
		enum(p, "toolCall.status", c.Status, toolCallStatuses)
		toolOutput(p, c)
	}
	if r.Activity == "" && r.Progress == nil && r.Telemetry == nil && r.Capabilities == nil && r.CurrentTarget == nil && r.ToolCall == nil {
		p.add("activity", "an activity update sets at least one of activity, progress, telemetry, capabilities, currentTarget, toolCall")
	}
}

func (r *OwnerEffect) validate(p *problems) {
	p.id("effectId", r.EffectID)
	p.optionalID("observationId", r.ObservationID)
	enum(p, "ownerEntity", r.OwnerEntity, OwnerEntities)
	p.id("effectType", r.EffectType)
}

func (r *ProjectionRecorded) validate(p *problems) {
	if r.Projection != timelineItemProjection {
		p.add("projection", fmt.Sprintf("%q is not accepted", r.Projection), timelineItemProjection)
	}
	p.required("payload", r.Payload != nil)
}

// fieldErr turns an encoding/json error into a ValidationError naming the
// field. accepted lists the fields known at that level.
func fieldErr(prefix string, err error, accepted []string) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	join := func(f string) string {
		switch {
		case prefix == "":
			return f
		case f == "":
			return prefix
		}
		return prefix + "." + f
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.TrimPrefix(te.Field, "Base.")
		if field == "" {
			field = "(value)"
		}
		return &ValidationError{Problems: []FieldError{{Field: join(field), Problem: fmt.Sprintf("got JSON %s, want %s", te.Value, goTypeName(te.Type))}}}
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return &ValidationError{Problems: []FieldError{{Field: join("occurredAt"), Problem: "not an RFC 3339 timestamp: " + pe.Value}}}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &ValidationError{Problems: []FieldError{{Field: join(strings.Trim(rest, `"`)), Problem: "unknown field", Accepted: accepted}}}
	}
	field := prefix
	if field == "" {
		field = "(record)"
	}
	return &ValidationError{Problems: []FieldError{{Field: field, Problem: jsonProblem(err)}}}
}

func jsonProblem(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

func goTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return "a whole number"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// locateUnknown finds the first field of data that t does not declare and
// returns its JSON path and the fields accepted there. encoding/json names
// the unknown field but not where it is, which matters in nested objects.
func locateUnknown(data []byte, t reflect.Type) (string, []string, bool) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return "", nil, false
	}
	return walkUnknown(v, t, "")
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func walkUnknown(v any, t reflect.Type, path string) (string, []string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t == reflect.TypeOf(Signal{}) {
		return "", nil, false // free-form, or checked by its own decoder
	}
	switch t.Kind() {
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return "", nil, false
		}
		for i, it := range items {
			if p, acc, ok := walkUnknown(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, acc, true
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return "", nil, false
		}
		fields := structFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				return sub, jsonFields(t), true
			}
			if p, acc, ok := walkUnknown(obj[k], ft, sub); ok {
				return p, acc, true
			}
		}
	}
	return "", nil, false
}

func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, v := range structFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

// toolOutput checks a tool call's output excerpt: only on its end, no
// longer than ToolOutputExcerpt makes it, and the size of the whole no
// smaller than the excerpt.
func toolOutput(p *problems, c *ToolCall) {
	if c.Output != "" && c.Status == ToolCallStarted {
		p.add("toolCall.output", "set on a call that started (want it on the call's end only: succeeded or failed)")
	}
	if n := len(c.Output); n > MaxToolOutputBytes+MaxToolOutputMarker {
		p.add("toolCall.output", fmt.Sprintf("%d bytes (want at most %d: an excerpt of %d with the marker where it was cut)",
			n, MaxToolOutputBytes+MaxToolOutputMarker, MaxToolOutputBytes))
	}
	switch {
	case c.OutputBytes < 0:
		p.add("toolCall.outputBytes", fmt.Sprintf("%d is negative (want 0 or more)", c.OutputBytes))
	case c.OutputBytes > 0 && c.Output == "":
		p.add("toolCall.outputBytes", "set without output (want it only beside the excerpt cut from the output)")
	case c.OutputBytes > 0 && c.OutputBytes <= MaxToolOutputBytes:
		p.add("toolCall.outputBytes", fmt.Sprintf("%d bytes (want more than %d: it is set only when the output was cut)", c.OutputBytes, MaxToolOutputBytes))
	}
}
