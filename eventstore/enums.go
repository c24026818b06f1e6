package eventstore

import (
	"fmt"
	"slices"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

// The enumerations below are persisted in journals. Their values are written
// once and never renamed: a renamed value would make stored journals invalid.

// OwnerEntity is the kind of Entity that owns an AgentExecution. It is also
// the record's scope.
type OwnerEntity string

const (
	OwnerSystem     OwnerEntity = "System"
	OwnerRepository OwnerEntity = "Repository"
	OwnerMission    OwnerEntity = "Mission"
	OwnerTask       OwnerEntity = "Task"
	OwnerArtifact   OwnerEntity = "Artifact"
)

// OwnerEntities lists the accepted owner entities.
var OwnerEntities = []OwnerEntity{OwnerSystem, OwnerRepository, OwnerMission, OwnerTask, OwnerArtifact}

func (o OwnerEntity) validate() error {
	if !slices.Contains(OwnerEntities, o) {
		return fmt.Errorf("%w: owner entity %q (want one of: %s)", ErrInvalidID, o, oneof.Join(OwnerEntities))
	}
	return nil
}

// ParseOwnerEntity accepts an owner entity name as written in records.
func ParseOwnerEntity(s string) (OwnerEntity, error) {
	o := OwnerEntity(s)
	return o, o.validate()
}

// MessageSource says who sent an accepted message.
type MessageSource string

const (
	SourceOperator MessageSource = "operator"
	SourceDaemon   MessageSource = "daemon"
	SourceSystem   MessageSource = "system"
	SourceOwner    MessageSource = "owner"
)

var messageSources = []MessageSource{SourceOperator, SourceDaemon, SourceSystem, SourceOwner}

// DeliveryStatus is the outcome of one delivery attempt.
type DeliveryStatus string

const (
	DeliveryAttempted DeliveryStatus = "attempted"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliverySkipped   DeliveryStatus = "skipped"
)

var deliveryStatuses = []DeliveryStatus{DeliveryAttempted, DeliveryDelivered, DeliveryFailed, DeliverySkipped}

// DeliveryTransport is the lane a message was delivered through.
type DeliveryTransport string

const (
	TransportAgentMessage DeliveryTransport = "agent-message"
	TransportPTY          DeliveryTransport = "pty-terminal"
	TransportAdapter      DeliveryTransport = "adapter"
	TransportNone         DeliveryTransport = "none"
)

var deliveryTransports = []DeliveryTransport{TransportAgentMessage, TransportPTY, TransportAdapter, TransportNone}

// ObservationSource is where an observation came from.
type ObservationSource string

const (
	ObservedPTY               ObservationSource = "pty"
	ObservedMCP               ObservationSource = "mcp"
	ObservedSDK               ObservationSource = "sdk"
	ObservedProviderOutput    ObservationSource = "provider-output"
	ObservedTerminalHeuristic ObservationSource = "terminal-heuristic"
	ObservedFilesystem        ObservationSource = "filesystem"
	ObservedGit               ObservationSource = "git"
	ObservedDaemon            ObservationSource = "daemon"
)

var observationSources = []ObservationSource{ObservedPTY, ObservedMCP, ObservedSDK, ObservedProviderOutput,
	ObservedTerminalHeuristic, ObservedFilesystem, ObservedGit, ObservedDaemon}

// Confidence grades how far an observation can be trusted.
type Confidence string

const (
	ConfidenceAuthoritative Confidence = "authoritative"
	ConfidenceHigh          Confidence = "high"
	ConfidenceMedium        Confidence = "medium"
	ConfidenceLow           Confidence = "low"
	ConfidenceDiagnostic    Confidence = "diagnostic"
)

var confidences = []Confidence{ConfidenceAuthoritative, ConfidenceHigh, ConfidenceMedium, ConfidenceLow, ConfidenceDiagnostic}

// DecisionAction is what the observation policy decided.
type DecisionAction string

const (
	ActionReject           DecisionAction = "reject"
	ActionRecordOnly       DecisionAction = "record-only"
	ActionEmitMessage      DecisionAction = "emit-message"
	ActionUpdateState      DecisionAction = "update-state"
	ActionRouteOwnerEffect DecisionAction = "route-owner-effect"
)

var decisionActions = []DecisionAction{ActionReject, ActionRecordOnly, ActionEmitMessage, ActionUpdateState, ActionRouteOwnerEffect}

// Lifecycle is the daemon-owned lifecycle of an execution. There is no
// "awaiting-input": an input request is running + awaiting-operator + a
// current input request id.
type Lifecycle string

const (
	LifecycleStarting   Lifecycle = "starting"
	LifecycleRunning    Lifecycle = "running"
	LifecycleCompleted  Lifecycle = "completed"
	LifecycleFailed     Lifecycle = "failed"
	LifecycleCancelled  Lifecycle = "cancelled"
	LifecycleTerminated Lifecycle = "terminated"
)

// Lifecycles lists the accepted lifecycle states.
var Lifecycles = []Lifecycle{LifecycleStarting, LifecycleRunning, LifecycleCompleted, LifecycleFailed, LifecycleCancelled, LifecycleTerminated}

// Final reports whether no further lifecycle transition may follow.
func (l Lifecycle) Final() bool {
	switch l {
	case LifecycleCompleted, LifecycleFailed, LifecycleCancelled, LifecycleTerminated:
		return true
	}
	return false
}

// Attention is the collaboration posture of an execution.
type Attention string

const (
	AttentionNone             Attention = "none"
	AttentionAutonomous       Attention = "autonomous"
	AttentionAwaitingOperator Attention = "awaiting-operator"
	AttentionAwaitingSystem   Attention = "awaiting-system"
	AttentionBlocked          Attention = "blocked"
)

// Attentions lists the accepted attention states.
var Attentions = []Attention{AttentionNone, AttentionAutonomous, AttentionAwaitingOperator, AttentionAwaitingSystem, AttentionBlocked}

// Activity is the semantic work posture of an execution.
type Activity string

const (
	ActivityIdle          Activity = "idle"
	ActivityPlanning      Activity = "planning"
	ActivityReasoning     Activity = "reasoning"
	ActivityCommunicating Activity = "communicating"
	ActivityEditing       Activity = "editing"
	ActivityExecuting     Activity = "executing"
	ActivityTesting       Activity = "testing"
	ActivityReviewing     Activity = "reviewing"
)

// Activities lists the accepted activity states.
var Activities = []Activity{ActivityIdle, ActivityPlanning, ActivityReasoning, ActivityCommunicating,
	ActivityEditing, ActivityExecuting, ActivityTesting, ActivityReviewing}

// TargetKind is what an execution is currently working on.
type TargetKind string

const (
	TargetFile     TargetKind = "file"
	TargetCommand  TargetKind = "command"
	TargetTool     TargetKind = "tool"
	TargetArtifact TargetKind = "artifact"
	TargetUnknown  TargetKind = "unknown"
	// TargetURL is a web address being fetched; Label holds it.
	TargetURL TargetKind = "url"
	// TargetSearch is a search: Label holds the pattern or query, Path the
	// directory searched when there is one.
	TargetSearch TargetKind = "search"
)

var targetKinds = []TargetKind{TargetFile, TargetCommand, TargetTool, TargetArtifact, TargetUnknown, TargetURL, TargetSearch}

// ToolCallStatus is where a tool call is.
type ToolCallStatus string

const (
	ToolCallStarted   ToolCallStatus = "started"
	ToolCallSucceeded ToolCallStatus = "succeeded"
	ToolCallFailed    ToolCallStatus = "failed"
)

var toolCallStatuses = []ToolCallStatus{ToolCallStarted, ToolCallSucceeded, ToolCallFailed}

// SessionShape is how an agent CLI's provider session maps onto an
// execution.
type SessionShape string

const (
	// ShapeOneShot: the execution ends with the first turn's result,
	// completed on success and failed on an error result.
	ShapeOneShot SessionShape = "one-shot"
	// ShapeConversation: after each turn's result the execution stays
	// running, awaiting the operator; a message starts the next turn of the
	// same provider session, and stop ends it gracefully.
	ShapeConversation SessionShape = "conversation"
)

// SessionShapes lists the accepted session shapes.
var SessionShapes = []SessionShape{ShapeOneShot, ShapeConversation}

// ApprovalMode is how an agent's requests for permission are answered.
type ApprovalMode string

const (
	// ApprovalsJournal: the CLI asks, the request opens an input request in
	// the journal, and the operator's answer goes back to the CLI.
	ApprovalsJournal ApprovalMode = "journal"
	// ApprovalsAgentPolicy: the CLI cannot ask in this mode and decides on
	// its own, under the policy its flags set (ApprovalPolicy.Flags).
	ApprovalsAgentPolicy ApprovalMode = "agent-policy"
)

var approvalModes = []ApprovalMode{ApprovalsJournal, ApprovalsAgentPolicy}

// PlanItemStatus is where an item of the agent's plan is (the todo
// statuses of the runtime contract).
type PlanItemStatus string

const (
	PlanItemOpen       PlanItemStatus = "open"
	PlanItemInProgress PlanItemStatus = "in-progress"
	PlanItemDone       PlanItemStatus = "done"
	PlanItemDropped    PlanItemStatus = "dropped"
)

// PlanItemStatuses lists the accepted plan item statuses.
var PlanItemStatuses = []PlanItemStatus{PlanItemOpen, PlanItemInProgress, PlanItemDone, PlanItemDropped}

// InputKind is what an input request asks for.
type InputKind string

const (
	// InputQuestion: a question to answer in words or by a choice.
	InputQuestion InputKind = "question"
	// InputPermission: permission for a tool call; the choices are allow,
	// deny and, where the CLI has it, allow-always.
	InputPermission InputKind = "permission"
)

var inputKinds = []InputKind{InputQuestion, InputPermission}

// The answers a permission request accepts.
const (
	AnswerAllow       = "allow"
	AnswerDeny        = "deny"
	AnswerAllowAlways = "allow-always"
)

// PermissionChoices are the choices of a permission request, those the
// agent offers, always in this order: allow, allow-always, deny. One order
// for every agent, so that a choice given by its number (2) means the same
// whichever agent asks.
func PermissionChoices(allow, allowAlways, deny bool) []string {
	var out []string
	if allow {
		out = append(out, AnswerAllow)
	}
	if allowAlways {
		out = append(out, AnswerAllowAlways)
	}
	if deny {
		out = append(out, AnswerDeny)
	}
	return out
}

// Posture is how an execution is driven (structured-first interaction).
type Posture string

const (
	PostureStructuredInteractive Posture = "structured-interactive"
	PostureStructuredHeadless    Posture = "structured-headless"
	PostureNativeTerminal        Posture = "native-terminal-escape-hatch"
)

// Postures lists the accepted postures.
var Postures = []Posture{PostureStructuredInteractive, PostureStructuredHeadless, PostureNativeTerminal}

// Portability says how far a message type travels across agents.
type Portability string

const (
	PortabilityMissionNative Portability = "mission-native"
	PortabilityCrossAgent    Portability = "cross-agent"
	PortabilityAdapterScoped Portability = "adapter-scoped"
	PortabilityTerminalOnly  Portability = "terminal-only"
)

var portabilities = []Portability{PortabilityMissionNative, PortabilityCrossAgent, PortabilityAdapterScoped, PortabilityTerminalOnly}

// DeliveryMode says whether a message type must reach the agent.
type DeliveryMode string

const (
	DeliveryBestEffort DeliveryMode = "best-effort"
	DeliveryRequired   DeliveryMode = "required"
	DeliveryNoneMode   DeliveryMode = "none"
)

var deliveryModes = []DeliveryMode{DeliveryBestEffort, DeliveryRequired, DeliveryNoneMode}

// SignalTransport is a lane through which an agent can send signals.
type SignalTransport string

const (
	SignalViaMCP            SignalTransport = "mcp"
	SignalViaStdoutMarker   SignalTransport = "stdout-marker"
	SignalViaProviderOutput SignalTransport = "provider-output"
)

var signalTransports = []SignalTransport{SignalViaMCP, SignalViaStdoutMarker, SignalViaProviderOutput}

// StructuredLane is the process lane that carries structured I/O.
type StructuredLane string

const (
	LaneStdio StructuredLane = "stdio"
	LanePTY   StructuredLane = "pty"
	LaneNone  StructuredLane = "none"
)

var structuredLanes = []StructuredLane{LaneStdio, LanePTY, LaneNone}

// headerKind is the constant "kind" of a journal header.
const headerKind = "agent-execution-interaction-journal"

// timelineItemProjection is the only projection name phase one reserves.
const timelineItemProjection = "timeline-item"
