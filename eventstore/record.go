package eventstore

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SchemaVersion is the only record schema version this build reads and writes.
const SchemaVersion = 1

// Kind names a journal record kind. Kinds are persisted: never rename one.
type Kind string

const (
	KindHeader       Kind = "journal.header"
	KindMessage      Kind = "message.accepted"
	KindDelivery     Kind = "message.delivery"
	KindObservation  Kind = "observation.recorded"
	KindDecision     Kind = "decision.recorded"
	KindStateChanged Kind = "state.changed"
	KindActivity     Kind = "activity.updated"
	KindOwnerEffect  Kind = "owner-effect.recorded"
	KindProjection   Kind = "projection.recorded"
	KindInterruption Kind = "interruption.recorded"
)

// Base holds the fields every record carries. JournalID is carried on every
// record (not only the header) so that a record read on its own, from the
// global log or an export, names the journal it belongs to and replay can
// reject one that strayed.
type Base struct {
	RecordID         string      `json:"recordId"`
	Sequence         uint64      `json:"sequence"`
	Type             Kind        `json:"type"`
	SchemaVersion    int         `json:"schemaVersion"`
	JournalID        string      `json:"journalId"`
	AgentExecutionID string      `json:"agentExecutionId"`
	OwnerID          string      `json:"ownerId"`
	Scope            OwnerEntity `json:"scope"`
	OccurredAt       time.Time   `json:"occurredAt"`
}

// RecordBase gives access to the common fields of any record.
func (b *Base) RecordBase() *Base { return b }

// Record is one journal record: one of the kinds below and in
// snapshot.go. The set is closed; the registry in registry.go decodes every kind.
type Record interface {
	RecordBase() *Base
	// Kind returns the record's kind, fixed by its Go type.
	Kind() Kind
	validate(p *problems)
}

// Header is the first record of a journal: it names the journal and freezes
// the launch contract.
type Header struct {
	Base
	// JournalKind is always "agent-execution-interaction-journal".
	JournalKind        string             `json:"kind"`
	AgentID            string             `json:"agentId"`
	ProtocolDescriptor ProtocolDescriptor `json:"protocolDescriptor"`
	TransportState     *TransportState    `json:"transportState,omitempty"`
	WorkingDirectory   string             `json:"workingDirectory,omitempty"`
	// Command is the agent's command line as the launch gave it (the
	// program and its arguments), absent for a CLI run as its adapter's
	// default program: a fork or a resume runs the same.
	Command []string `json:"command,omitempty"`
	// TimeoutMs is the run's time limit in milliseconds, measured from
	// the launch; absent when the run has none. A fork or a resume has
	// its own, and none unless its launch gave one.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// SessionID is the AgentSession the execution belongs to: the
	// execution's own id for a new session, the resumed execution's
	// session for a resume. Absent on journals written before it existed,
	// which read as their own session.
	SessionID string `json:"sessionId,omitempty"`
	// ForkedFrom links a fork to the parent record it branches after
	// (lineage.go); absent for a journal that is not a fork.
	ForkedFrom *ForkLink `json:"forkedFrom,omitempty"`
	// Resumes links a resumed run to the execution it continues;
	// absent for a journal that resumes nothing.
	Resumes *ResumeLink `json:"resumes,omitempty"`
	// DispatchContext says where the execution was asked for and how it
	// runs (dispatch.go); absent for a launch that gave none, which runs
	// as interactive.
	DispatchContext *DispatchContext `json:"dispatchContext,omitempty"`
	// Sandbox says the agent runs confined (package sandbox) and how;
	// absent for an agent run as the daemon's user with nothing hidden,
	// as every journal written before it existed.
	Sandbox *SandboxPolicy `json:"sandbox,omitempty"`
	// Imported is set by every import of the journal from a file
	// (journalfile.Import), whatever the file holds: its command and
	// working directory came from that file, not from a launch on this
	// log, so a fork or a resume runs them only once they are restated.
	Imported bool `json:"imported,omitempty"`
	// AgentVersion is the version the agent CLI gave when the runtime
	// asked it (`--version`) before the launch: what its output lines mean
	// (its usage lines above all) depends on it. Absent when the CLI was
	// not asked or gave no version.
	AgentVersion string `json:"agentVersion,omitempty"`
}

// SandboxNetworks are the networks a sandboxed agent may have.
var SandboxNetworks = []string{"host", "none"}

// SandboxPolicy is how a sandboxed agent was confined, as its launch
// resolved it: the paths are the host's.
type SandboxPolicy struct {
	// Network is host (the host's network, loopback included) or none.
	Network string `json:"network"`
	// Writable are the paths the agent may change: its working directory
	// and its CLI's state directories. The rest of the file system is
	// read-only, with a private /tmp.
	Writable []string `json:"writable"`
	// Hidden are the paths the agent cannot read: the daemon's data
	// directory and its secret files.
	Hidden []string `json:"hidden,omitempty"`
}

// MaxAgentVersionLength bounds a header's agentVersion: a version, not
// the CLI's whole answer.
const MaxAgentVersionLength = 100

// MessageAccepted records owner, operator or daemon input before delivery.
type MessageAccepted struct {
	Base
	MessageID      string          `json:"messageId"`
	Source         MessageSource   `json:"source"`
	MessageType    string          `json:"messageType"`
	Payload        json.RawMessage `json:"payload"`
	MutatesContext bool            `json:"mutatesContext"`
}

// MessageDelivery records one delivery attempt and its outcome.
type MessageDelivery struct {
	Base
	MessageID string            `json:"messageId"`
	Status    DeliveryStatus    `json:"status"`
	Transport DeliveryTransport `json:"transport"`
	Reason    string            `json:"reason,omitempty"`
}

// Observation records one normalized runtime observation.
type Observation struct {
	Base
	ObservationID string            `json:"observationId"`
	Source        ObservationSource `json:"source"`
	Confidence    Confidence        `json:"confidence"`
	Signal        *Signal           `json:"signal,omitempty"`
	RawText       string            `json:"rawText,omitempty"`
	Payload       map[string]any    `json:"payload,omitempty"`
	// Native holds the agent CLI's own ids for what was observed, captured
	// at ingest: fork and resume address turns by them, and they cannot be
	// recovered from the normalized signal later.
	Native *NativeIDs `json:"native,omitempty"`
}

// NativeIDs are an agent CLI's own ids for an observation's origin.
type NativeIDs struct {
	// SessionID is the CLI's conversation: Claude Code's session_id,
	// Codex's thread_id, Copilot CLI's session id.
	SessionID string `json:"sessionId,omitempty"`
	// TurnID is the CLI's turn, where it numbers them (Codex).
	TurnID string `json:"turnId,omitempty"`
	// MessageID is the CLI's id of the output line or message (Claude
	// Code's uuid, Copilot's event id).
	MessageID string `json:"messageId,omitempty"`
	// RequestID is the CLI's id of a request it waits on (Claude Code's
	// control request_id).
	RequestID string `json:"requestId,omitempty"`
}

// Decision records a durable policy outcome.
type Decision struct {
	Base
	DecisionID    string         `json:"decisionId"`
	ObservationID string         `json:"observationId,omitempty"`
	MessageID     string         `json:"messageId,omitempty"`
	Action        DecisionAction `json:"action"`
	Reason        string         `json:"reason,omitempty"`
}

// StateChanged records a semantic lifecycle, attention, activity or
// input-request transition. Absent fields are unchanged.
type StateChanged struct {
	Base
	Lifecycle             Lifecycle    `json:"lifecycle,omitempty"`
	Attention             Attention    `json:"attention,omitempty"`
	Activity              Activity     `json:"activity,omitempty"`
	CurrentInputRequestID InputRequest `json:"currentInputRequestId,omitzero"`
	// Reason explains a transition, e.g. "exit status 2" or "system_restart".
	Reason string `json:"reason,omitempty"`
	// Host is the fleet host whose runtime started the agent's process or
	// attached to it, on the change to running, or that a queued run is
	// placed on, on its change to starting; absent on other changes and on
	// journals written before hosts were named. Commands for the execution
	// are routed to it, and the first placement in a journal is the one
	// that holds (runtime/shared.go).
	Host string `json:"host,omitempty"`
}

// ActivityUpdated records compressible activity and telemetry. Replay never
// needs every one of them to recover semantic state.
type ActivityUpdated struct {
	Base
	Activity      Activity      `json:"activity,omitempty"`
	Progress      *Progress     `json:"progress,omitempty"`
	Telemetry     *Telemetry    `json:"telemetry,omitempty"`
	Capabilities  *Capabilities `json:"capabilities,omitempty"`
	CurrentTarget *Target       `json:"currentTarget,omitempty"`
	// ToolCall is a tool call that started or ended with this update.
	ToolCall *ToolCall `json:"toolCall,omitempty"`
}

// ToolCall is one of the agent's tool calls, as it starts or ends.
type ToolCall struct {
	// ID is the CLI's id of the call, which pairs its start and its end.
	ID     string         `json:"id,omitempty"`
	Name   string         `json:"name"`
	Status ToolCallStatus `json:"status"`
	// Error is what the tool or the CLI said when the call failed (clipped).
	Error string `json:"error,omitempty"`
	// ExitCode is a shell command's exit code, when the CLI reports it.
	ExitCode *int64 `json:"exitCode,omitempty"`
	// Output is an excerpt of what the call returned, on its end, when
	// the agent's stream carries it: at most MaxToolOutputBytes, its start
	// and its end kept when it is longer (docs/records.md).
	Output string `json:"output,omitempty"`
	// OutputBytes is the size of the whole output the excerpt was cut
	// from, when it was cut.
	OutputBytes int64 `json:"outputBytes,omitempty"`
}

// MaxToolOutputBytes bounds a tool call's output excerpt, so that a call
// that printed megabytes costs the journal a few kilobytes.
const MaxToolOutputBytes = 2 << 10

// A cut excerpt keeps the output's start, where a command says what it
// does, and its end, where it says how it ended (a test summary, the
// error that stopped it); the end gets less, as it is read last.
const (
	toolOutputHead = MaxToolOutputBytes * 6 / 10
	toolOutputTail = MaxToolOutputBytes - toolOutputHead
)

// MaxToolOutputMarker bounds the line ToolOutputExcerpt puts where it cut:
// "\n… N bytes left out …\n", N of at most 20 digits. An excerpt is at most
// MaxToolOutputBytes plus this.
const MaxToolOutputMarker = len("\n…  bytes left out …\n") + 20

// ToolOutputExcerpt is the excerpt of a tool call's output that a
// ToolCall carries, as valid UTF-8 (invalid bytes become U+FFFD). Output of
// at most MaxToolOutputBytes is kept whole and whole is 0; longer output
// keeps its first ~1.2 KiB and its last ~0.8 KiB, cut at rune boundaries,
// around a marker line that says how many bytes were left out, and whole
// is the size of the whole output (as valid UTF-8).
func ToolOutputExcerpt(output string) (excerpt string, whole int64) {
	if !utf8.ValidString(output) {
		output = strings.ToValidUTF8(output, "\uFFFD")
	}
	if len(output) <= MaxToolOutputBytes {
		return output, 0
	}
	head := toolOutputHead
	for head > 0 && !utf8.RuneStart(output[head]) {
		head--
	}
	tail := len(output) - toolOutputTail
	for tail < len(output) && !utf8.RuneStart(output[tail]) {
		tail++
	}
	marker := "\n… " + strconv.Itoa(tail-head) + " bytes left out …\n"
	return output[:head] + marker + output[tail:], int64(len(output))
}

// OwnerEffect records an accepted effect routed to the owning Entity.
type OwnerEffect struct {
	Base
	EffectID        string         `json:"effectId"`
	ObservationID   string         `json:"observationId,omitempty"`
	OwnerEntity     OwnerEntity    `json:"ownerEntity"`
	EffectType      string         `json:"effectType"`
	WorkflowEventID string         `json:"workflowEventId,omitempty"`
	EntityEventID   string         `json:"entityEventId,omitempty"`
	Payload         map[string]any `json:"payload,omitempty"`
}

// ProjectionRecorded is reserved for materialized projections; phase one
// derives timelines during replay and does not write it.
type ProjectionRecorded struct {
	Base
	Projection string         `json:"projection"`
	Payload    map[string]any `json:"payload"`
}

// Progress is the progress part of an activity update.
type Progress struct {
	Summary string `json:"summary,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Units   *Units `json:"units,omitempty"`
}

// Units counts progress in some unit.
type Units struct {
	Completed *int64 `json:"completed,omitempty"`
	Total     *int64 `json:"total,omitempty"`
	Unit      string `json:"unit,omitempty"`
}

// Telemetry carries token counts and the active tool.
type Telemetry struct {
	InputTokens    *int64 `json:"inputTokens,omitempty"`
	OutputTokens   *int64 `json:"outputTokens,omitempty"`
	TotalTokens    *int64 `json:"totalTokens,omitempty"`
	ActiveToolName string `json:"activeToolName,omitempty"`
}

// Capabilities describes what the execution can do right now.
type Capabilities struct {
	TerminalAttached   *bool `json:"terminalAttached,omitempty"`
	Streaming          *bool `json:"streaming,omitempty"`
	ToolCallActive     *bool `json:"toolCallActive,omitempty"`
	FilesystemMutating *bool `json:"filesystemMutating,omitempty"`
}

// Target is what the execution is working on right now.
type Target struct {
	Kind  TargetKind `json:"kind"`
	Label string     `json:"label,omitempty"`
	Path  string     `json:"path,omitempty"`
}

// InputRequest is the currentInputRequestId of a state change, which has
// three states: absent (unchanged), null (cleared) and an id (set).
type InputRequest struct {
	// Set is true when the field is present.
	Set bool
	// ID is the request id; "" with Set means cleared.
	ID string
}

// SetInputRequest returns a change that sets the current input request.
func SetInputRequest(id string) InputRequest { return InputRequest{Set: true, ID: id} }

// ClearInputRequest returns a change that clears the current input request.
func ClearInputRequest() InputRequest { return InputRequest{Set: true} }

// IsZero reports an absent field, so omitzero leaves it out.
func (r InputRequest) IsZero() bool { return !r.Set }

// MarshalJSON writes null for a cleared request.
func (r InputRequest) MarshalJSON() ([]byte, error) {
	if r.ID == "" {
		return []byte("null"), nil
	}
	return json.Marshal(r.ID)
}

// UnmarshalJSON is called only when the field is present.
func (r *InputRequest) UnmarshalJSON(b []byte) error {
	r.Set = true
	if string(b) == "null" {
		r.ID = ""
		return nil
	}
	if err := json.Unmarshal(b, &r.ID); err != nil {
		return err
	}
	if r.ID == "" {
		// An empty string would read back as a clear; refuse the ambiguity.
		return &ValidationError{Problems: []FieldError{{Field: "currentInputRequestId", Problem: `"" is not an id (use null to clear)`}}}
	}
	return nil
}

func (*Header) Kind() Kind             { return KindHeader }
func (*MessageAccepted) Kind() Kind    { return KindMessage }
func (*MessageDelivery) Kind() Kind    { return KindDelivery }
func (*Observation) Kind() Kind        { return KindObservation }
func (*Decision) Kind() Kind           { return KindDecision }
func (*StateChanged) Kind() Kind       { return KindStateChanged }
func (*ActivityUpdated) Kind() Kind    { return KindActivity }
func (*OwnerEffect) Kind() Kind        { return KindOwnerEffect }
func (*ProjectionRecorded) Kind() Kind { return KindProjection }
func (*Interruption) Kind() Kind       { return KindInterruption }

// NaturalKey returns the part of a record that makes it unique in its
// journal, from which the store derives its record id, or "" when the kind
// has none and the writer must choose one.
func NaturalKey(r Record) string {
	switch r := r.(type) {
	case *Header:
		return "header"
	case *MessageAccepted:
		return r.MessageID
	case *MessageDelivery:
		if r.MessageID == "" {
			return ""
		}
		return r.MessageID + "/" + string(r.Status)
	case *Observation:
		return r.ObservationID
	case *Decision:
		return r.DecisionID
	case *OwnerEffect:
		return r.EffectID
	case *Interruption:
		return "interruption"
	case *SnapshotCreated:
		return snapshotKey(r)
	case *RestoreAttempted:
		return restoreKey(r)
	case *CheckpointCreated:
		return checkpointKey(r)
	}
	return ""
}
