package execution

import (
	"fmt"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// The attention table: every record that may move an execution's attention,
// what it moves it to from where it stands, and what it does to the open
// input request. The policy decides by it, replay ends an execution by it,
// and docs/architecture.md shows it (TestAttentionDoc keeps the two equal).

// AttentionEvent is a kind of record that may move the attention: a row of
// the table.
type AttentionEvent int

const (
	// OnStarted: the runtime records that the process runs.
	OnStarted AttentionEvent = iota
	// OnTurnEnded: the runtime records that a conversation waits for its
	// first or next message.
	OnTurnEnded
	// OnTurnStarted: the runtime records that a message starts a
	// conversation's next turn.
	OnTurnStarted
	// OnWorking: a progress, status or plan signal: the agent is at work.
	OnWorking
	// OnBlocked: a blocked signal.
	OnBlocked
	// OnNeedsInput: a needs_input signal, a question or a permission request.
	OnNeedsInput
	// OnClaim: a ready_for_verification, completed_claim or failed_claim
	// signal, which waits for the owner's verdict.
	OnClaim
	// OnTurnResult: a conversation's turn result read from the CLI's
	// output, a claim that ends a turn rather than the work.
	OnTurnResult
	// OnAnswer: a message that answers the open input request.
	OnAnswer
	// OnMessage: any other message to the agent: a prompt, an interrupt,
	// an answer to a request that is not the open one.
	OnMessage
	// OnCompleted, OnFailed, OnCancelled, OnTerminated: the runtime
	// records how the process ended.
	OnCompleted
	OnFailed
	OnCancelled
	OnTerminated
)

// MovesState reports whether an observation of confidence c is trusted to
// move the attention: only high and authoritative ones are.
func MovesState(c eventstore.Confidence) bool {
	return c == eventstore.ConfidenceAuthoritative || c == eventstore.ConfidenceHigh
}

// EndEvent is the row of a final lifecycle; ok is false for one that is not
// final.
func EndEvent(l eventstore.Lifecycle) (on AttentionEvent, ok bool) {
	switch l {
	case eventstore.LifecycleCompleted:
		return OnCompleted, true
	case eventstore.LifecycleFailed:
		return OnFailed, true
	case eventstore.LifecycleCancelled:
		return OnCancelled, true
	case eventstore.LifecycleTerminated:
		return OnTerminated, true
	}
	return 0, false
}

// Standing is where an execution's attention stands, as the table's
// columns tell it apart: awaiting-operator is two columns, with an input
// request open and between the turns of a conversation, and an execution
// that ended is one column whatever its attention.
type Standing int

const (
	// StandingNone: attention none, before the process runs.
	StandingNone Standing = iota
	StandingAutonomous
	StandingBlocked
	// StandingRequest: awaiting-operator with an input request open.
	StandingRequest
	// StandingBetweenTurns: awaiting-operator with no request open: a
	// conversation waits for its next message.
	StandingBetweenTurns
	StandingAwaitingSystem
	// StandingEnded: the lifecycle is final.
	StandingEnded
	standings
)

var standingNames = [standings]string{
	"none (before the run)", "autonomous", "blocked", "awaiting-operator, a request open",
	"awaiting-operator, between turns", "awaiting-system", "after the end",
}

func (w Standing) String() string {
	if w < 0 || w >= standings {
		return fmt.Sprintf("standing %d", int(w))
	}
	return standingNames[w]
}

// Standing is where the state's attention stands in the table.
func (s *State) Standing() Standing {
	switch {
	case s.Lifecycle.Final():
		return StandingEnded
	case s.CurrentInputRequestID != "":
		// An open request is awaiting-operator whatever a journal written
		// otherwise says: only its answer, a new request or the end
		// closes it.
		return StandingRequest
	}
	switch s.Attention {
	case eventstore.AttentionAutonomous:
		return StandingAutonomous
	case eventstore.AttentionBlocked:
		return StandingBlocked
	case eventstore.AttentionAwaitingOperator:
		return StandingBetweenTurns
	case eventstore.AttentionAwaitingSystem:
		return StandingAwaitingSystem
	}
	return StandingNone
}

// RequestEffect is what a move does to the open input request.
type RequestEffect int

const (
	// RequestKept: the open request, if any, stays open.
	RequestKept RequestEffect = iota
	// RequestOpened: the event's request is open, in place of any other.
	RequestOpened
	// RequestClosed: no request is open any more.
	RequestClosed
)

// AttentionMove is what the table says an event does to an execution.
type AttentionMove struct {
	// Moves is false when the event leaves the attention and the input
	// request as they are; To and Request are then meaningless.
	Moves   bool
	To      eventstore.Attention
	Request RequestEffect
	// Reason is the table's words for the move.
	Reason string
}

// NextAttention is the table as a function: what event on does to the
// execution in state s. It is pure.
func NextAttention(s *State, on AttentionEvent) AttentionMove {
	row := attentionRows[on]
	to := row.to[s.Standing()]
	if to == keep || to == never {
		return AttentionMove{}
	}
	return AttentionMove{Moves: true, To: to, Request: row.request, Reason: row.reason}
}

// Cells that move nowhere.
const (
	// keep: the attention and the request stay as they are.
	keep eventstore.Attention = ""
	// never: the record does not come there; were it to, nothing moves.
	never eventstore.Attention = "n/a"
)

type attentionRow struct {
	// record names the record as the docs do.
	record string
	// by is who writes the state change.
	by      string
	to      [standings]eventstore.Attention
	request RequestEffect
	reason  string
}

const (
	byPolicy  = "policy"
	byRuntime = "runtime"
)

// attentionRows is the table, one row per AttentionEvent, columns in
// Standing order: none, autonomous, blocked, awaiting-operator with a
// request, awaiting-operator between turns, awaiting-system, after the end.
var attentionRows = func() [OnTerminated + 1]attentionRow {
	const (
		none       = eventstore.AttentionNone
		autonomous = eventstore.AttentionAutonomous
		blocked    = eventstore.AttentionBlocked
		operator   = eventstore.AttentionAwaitingOperator
		system     = eventstore.AttentionAwaitingSystem
	)
	type cells = [standings]eventstore.Attention
	// Every process end: whatever the run waited for, no one can give it
	// any more, and an open request is closed. It does not depend on what
	// was decided before the end, so an agent that claims and exits at
	// once ends as one that exits later; and nothing moves after it.
	ended := cells{none, none, none, none, none, none, keep}
	return [...]attentionRow{
		OnStarted: {record: "`state.changed` lifecycle running: the process started", by: byRuntime,
			to:     cells{autonomous, never, never, never, never, never, never},
			reason: "process started"},
		OnTurnEnded: {record: "`state.changed` awaiting-operator: a conversation waits for its first or next message", by: byRuntime,
			to:     cells{never, operator, operator, keep, keep, operator, keep},
			reason: "waiting for the next message"},
		OnTurnStarted: {record: "`state.changed` autonomous: a message starts a conversation's next turn", by: byRuntime,
			to:     cells{never, keep, autonomous, never, autonomous, autonomous, keep},
			reason: "turn started"},
		OnWorking: {record: "`progress`, `status` or `plan` signal", by: byPolicy,
			to:     cells{keep, keep, autonomous, keep, keep, keep, keep},
			reason: "the agent works again"},
		OnBlocked: {record: "`blocked` signal (its reason and needs replace any before)", by: byPolicy,
			to:     cells{blocked, blocked, blocked, keep, blocked, blocked, keep},
			reason: "agent is blocked"},
		OnNeedsInput: {record: "`needs_input` signal, a question or a permission request: opens its request, in place of an open one", by: byPolicy,
			to:      cells{operator, operator, operator, operator, operator, operator, keep},
			request: RequestOpened, reason: "needs_input"},
		OnClaim: {record: "`ready_for_verification`, `completed_claim` or `failed_claim` signal", by: byPolicy,
			to:     cells{system, system, system, keep, system, keep, keep},
			reason: "claim waits for the owner"},
		OnTurnResult: {record: "a conversation's turn result in the CLI's output (a claim): the runtime's turn end follows", by: byPolicy,
			to:     cells{keep, keep, keep, keep, keep, keep, keep},
			reason: "turn result"},
		OnAnswer: {record: "`message.accepted` answering the open request (`payload.requestId`), whatever the answer, deny included: closes it", by: byPolicy,
			to:      cells{never, never, never, autonomous, never, never, keep},
			request: RequestClosed, reason: "answered"},
		OnMessage: {record: "any other `message.accepted`: a prompt, an interrupt, an answer to a request that is not open", by: byPolicy,
			to:     cells{keep, keep, autonomous, keep, keep, autonomous, keep},
			reason: "a message to the agent"},
		OnCompleted: {record: "`state.changed` lifecycle completed", by: byRuntime, to: ended, request: RequestClosed,
			reason: "the process ended"},
		OnFailed: {record: "`state.changed` lifecycle failed", by: byRuntime, to: ended, request: RequestClosed,
			reason: "the process ended"},
		OnCancelled: {record: "`state.changed` lifecycle cancelled", by: byRuntime, to: ended, request: RequestClosed,
			reason: "the process ended"},
		OnTerminated: {record: "`state.changed` lifecycle terminated", by: byRuntime, to: ended, request: RequestClosed,
			reason: "the process ended"},
	}
}()

// attentionTable renders the table in Markdown, as docs/architecture.md
// holds it.
func attentionTable() string {
	var b strings.Builder
	b.WriteString("| record | by |")
	for w := Standing(0); w < standings; w++ {
		b.WriteString(" " + w.String() + " |")
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---|", int(standings)))
	b.WriteString("\n")
	for _, row := range attentionRows {
		b.WriteString("| " + row.record + " | " + row.by + " |")
		for _, to := range row.to {
			switch to {
			case keep:
				b.WriteString(" — |")
			case never:
				b.WriteString(" n/a |")
			default:
				b.WriteString(" " + string(to) + " |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
