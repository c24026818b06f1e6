package execution

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// State is an AgentExecution as replay reconstructs it from its journal.
type State struct {
	ID          string                 `json:"id"`
	OwnerEntity eventstore.OwnerEntity `json:"ownerEntity"`
	OwnerID     string                 `json:"ownerId"`
	AgentID     string                 `json:"agentId"`

	Lifecycle             eventstore.Lifecycle `json:"lifecycle"`
	LifecycleReason       string               `json:"lifecycleReason,omitempty"`
	Attention             eventstore.Attention `json:"attention"`
	Activity              eventstore.Activity  `json:"activity"`
	CurrentInputRequestID string               `json:"currentInputRequestId,omitempty"`
	// Prompt is the first prompt's text on one line, at most
	// MaxPromptRunes: what a list shows as the execution's title.
	Prompt string `json:"prompt,omitempty"`
	// CurrentInputQuestion is the question of the current input request.
	CurrentInputQuestion string `json:"currentInputQuestion,omitempty"`
	// LastInputRequest is the newest needs_input signal, kept so that the
	// state change opening the request can show its question.
	LastInputRequest InputRequest `json:"lastInputRequest,omitzero"`
	// Blocked is what blocks the agent, set while the attention is blocked
	// and absent otherwise.
	Blocked *Blocked `json:"blocked,omitempty"`
	// LastBlocked is the newest blocked signal, kept so that the state
	// change that blocks the execution can show its reason and needs.
	LastBlocked *Blocked `json:"lastBlocked,omitempty"`

	// ProcessedMessages maps each accepted message id to its sequence.
	ProcessedMessages map[string]uint64 `json:"processedMessages"`
	// ProcessedObservations maps each recorded observation id to its sequence.
	ProcessedObservations map[string]uint64 `json:"processedObservations"`
	// Decisions maps an observation or message id to the decision taken on
	// it, so a duplicate is answered with the original decision.
	Decisions map[string]DecisionRef `json:"decisions"`

	// Latest holds the newest journaled activity, telemetry, capabilities
	// and target; each part is replaced by the newest record that carries it.
	Latest Latest `json:"latest"`

	// Usage is the token usage the agent reported, folded from the usage
	// observations themselves: cumulative counts replace the totals,
	// increments add to them. It does not depend on activity records or on
	// when the policy decided, so it is exact at every sequence.
	Usage Usage `json:"usage,omitzero"`
	// Plan is the agent's newest plan (todo list); nil before any.
	Plan []eventstore.PlanItem `json:"plan,omitempty"`

	// AdvertisedMessages are the slash commands the agent advertised
	// itself, as adapter-scoped descriptors of its adapter: the newest
	// advertisement replaces the ones before (execution/commands.go).
	AdvertisedMessages []eventstore.MessageDescriptor `json:"advertisedMessages,omitempty"`

	Posture            eventstore.Posture            `json:"posture"`
	TerminalAttached   bool                          `json:"terminalAttached"`
	ProtocolDescriptor eventstore.ProtocolDescriptor `json:"protocolDescriptor"`
	WorkingDirectory   string                        `json:"workingDirectory,omitempty"`
	// TimeoutMs is the run's time limit from its header, in milliseconds
	// from CreatedAt; 0 for none.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`

	Journal eventstore.Reference `json:"journal"`

	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// SessionID is the AgentSession: the header's sessionId, or the
	// execution's own id when it names none.
	SessionID string `json:"sessionId,omitempty"`
	// ForkedFrom and Resumes are the header's links (lineage.go).
	ForkedFrom *eventstore.ForkLink   `json:"forkedFrom,omitempty"`
	Resumes    *eventstore.ResumeLink `json:"resumes,omitempty"`
	// Lineage lists a fork's ancestors, nearest first, when its prefix
	// was folded in (ReplayLineage); a fork replayed alone lacks it.
	Lineage []string `json:"lineage,omitempty"`

	// DispatchContext is the header's: where the execution was asked for
	// and how it runs; nil for a launch that gave none (interactive). A
	// queued or scheduled one that is still starting has not started yet.
	DispatchContext *eventstore.DispatchContext `json:"dispatchContext,omitempty"`

	// Host is the fleet host that runs or ran the agent's process (the
	// newest running change that names one); empty before it started and
	// for journals written before hosts were named.
	Host string `json:"host,omitempty"`

	// Interrupted is set when the run was cut short (interruption.go).
	Interrupted *Interrupted `json:"interrupted,omitempty"`

	// OpenToolCalls are the timeline items of the tool calls that started
	// and have not ended, oldest first: the end of one completes its item
	// in place (timeline.go).
	OpenToolCalls []TimelineItem `json:"openToolCalls,omitempty"`

	Timeline []TimelineItem `json:"timeline"`
}

// InputRequest is a question an agent asked through needs_input.
type InputRequest struct {
	RequestID string   `json:"requestId"`
	Question  string   `json:"question"`
	Choices   []string `json:"choices,omitempty"`
	// Kind is question or permission; Tool the tool call a permission
	// request waits on.
	Kind string              `json:"kind,omitempty"`
	Tool *eventstore.ToolUse `json:"tool,omitempty"`
}

// CurrentActivity is the activity to show for an execution: while it runs
// on its own (autonomous), the newest one an activity update reported (the
// tool it runs: executing, editing), else its state's. The state's activity
// moves only with state changes, which left a run idle through all its
// tools; it stays the semantic one, since activity records are
// compressible and the semantic state must not depend on them.
func CurrentActivity(lifecycle eventstore.Lifecycle, attention eventstore.Attention, activity, latest eventstore.Activity) eventstore.Activity {
	if lifecycle == eventstore.LifecycleRunning && attention == eventstore.AttentionAutonomous && latest != "" {
		return latest
	}
	return activity
}

// CurrentActivity is CurrentActivity of s.
func (s *State) CurrentActivity() eventstore.Activity {
	return CurrentActivity(s.Lifecycle, s.Attention, s.Activity, s.Latest.Activity)
}

// Choice is the choice an answer to r names: by its number as shown (1 is
// the first choice) or by its text, in any case. An answer that names none
// is returned as it was: a question takes words too, and an agent hears
// any other answer to a permission as a denial.
func (r InputRequest) Choice(answer string) string {
	a := strings.TrimSpace(answer)
	if n, err := strconv.Atoi(a); err == nil && n >= 1 && n <= len(r.Choices) {
		return r.Choices[n-1]
	}
	for _, c := range r.Choices {
		if strings.EqualFold(c, a) {
			return c
		}
	}
	return answer
}

// Blocked is what a blocked signal said.
type Blocked struct {
	Reason string `json:"reason"`
	Needs  string `json:"needs,omitempty"`
}

// Usage is token usage totals; nil counts were never reported.
type Usage struct {
	InputTokens  *int64 `json:"inputTokens,omitempty"`
	OutputTokens *int64 `json:"outputTokens,omitempty"`
	TotalTokens  *int64 `json:"totalTokens,omitempty"`
}

// IsZero reports usage never reported.
func (u Usage) IsZero() bool {
	return u.InputTokens == nil && u.OutputTokens == nil && u.TotalTokens == nil
}

// Add folds one usage signal into the totals: cumulative counts replace
// them, increments add to them. A total the signal does not give is input
// plus output when both are known.
func (u Usage) Add(s *eventstore.UsageSignal) Usage {
	fold := func(prev, v *int64) *int64 {
		switch {
		case v == nil:
			return prev
		case s.Cumulative || prev == nil:
			n := *v
			return &n
		}
		n := addSat(*prev, *v)
		return &n
	}
	out := Usage{
		InputTokens:  fold(u.InputTokens, s.InputTokens),
		OutputTokens: fold(u.OutputTokens, s.OutputTokens),
		TotalTokens:  fold(u.TotalTokens, s.TotalTokens),
	}
	if s.TotalTokens == nil && out.InputTokens != nil && out.OutputTokens != nil {
		n := addSat(*out.InputTokens, *out.OutputTokens)
		out.TotalTokens = &n
	}
	return out
}

// addSat adds two non-negative counts, saturating instead of overflowing.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// DecisionRef is a decision as the state remembers it.
type DecisionRef struct {
	DecisionID string                    `json:"decisionId"`
	Action     eventstore.DecisionAction `json:"action"`
	Reason     string                    `json:"reason,omitempty"`
	Sequence   uint64                    `json:"sequence"`
}

// Latest is the newest retained runtime activity.
type Latest struct {
	Activity      eventstore.Activity      `json:"activity,omitempty"`
	Progress      *eventstore.Progress     `json:"progress,omitempty"`
	Telemetry     *eventstore.Telemetry    `json:"telemetry,omitempty"`
	Capabilities  *eventstore.Capabilities `json:"capabilities,omitempty"`
	CurrentTarget *eventstore.Target       `json:"currentTarget,omitempty"`
	// ToolCall is the newest tool call that started or ended.
	ToolCall *eventstore.ToolCall `json:"toolCall,omitempty"`
	// Sequence is the record the newest part came from, 0 if none.
	Sequence uint64     `json:"sequence,omitempty"`
	At       *time.Time `json:"at,omitempty"`
}

// endRun clears what only a running process can be doing: the target, the
// active tool, a tool call in flight.
func (l *Latest) endRun() {
	l.CurrentTarget = nil
	if l.Telemetry != nil && l.Telemetry.ActiveToolName != "" {
		t := *l.Telemetry
		t.ActiveToolName = ""
		l.Telemetry = &t
	}
	if l.Capabilities != nil && l.Capabilities.ToolCallActive != nil && *l.Capabilities.ToolCallActive {
		c := *l.Capabilities
		c.ToolCallActive = nil
		l.Capabilities = &c
	}
}

// AwaitingInput reports an open input request: running, awaiting the
// operator, with a request id. There is no awaiting-input lifecycle.
func (s *State) AwaitingInput() bool {
	return s.Lifecycle == eventstore.LifecycleRunning && s.Attention == eventstore.AttentionAwaitingOperator && s.CurrentInputRequestID != ""
}

// Semantic returns the part of the state that replay must recover without
// activity records: lifecycle, attention, activity, the input request and
// the processed ids with their decisions.
func (s *State) Semantic() SemanticState {
	return SemanticState{
		Lifecycle: s.Lifecycle, Attention: s.Attention, Activity: s.Activity,
		CurrentInputRequestID: s.CurrentInputRequestID,
		ProcessedMessages:     keys(s.ProcessedMessages),
		ProcessedObservations: keys(s.ProcessedObservations),
		Decisions:             s.Decisions,
	}
}

// SemanticState is the comparison key of Semantic.
type SemanticState struct {
	Lifecycle             eventstore.Lifecycle
	Attention             eventstore.Attention
	Activity              eventstore.Activity
	CurrentInputRequestID string
	ProcessedMessages     []string
	ProcessedObservations []string
	Decisions             map[string]DecisionRef
}

func keys(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// MaxPromptRunes bounds State.Prompt: a list's row, not the prompt.
const MaxPromptRunes = 200
