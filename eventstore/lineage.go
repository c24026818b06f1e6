package eventstore

import (
	"context"
	"errors"
	"fmt"
)

// ErrBadLink reports a journal header whose forkedFrom or resumes link
// names a journal, a sequence or an event the store does not hold.
var ErrBadLink = errors.New("eventstore: header links to a record that does not exist")

// ForkLink is a fork's link to its parent: the fork inherits the parent's
// records up to and including Sequence, which EventID pins by content, and
// its own journal holds only what happened after. A fork is a new journal,
// never a copy of the parent's records.
type ForkLink struct {
	JournalID        string `json:"journalId"`
	AgentExecutionID string `json:"agentExecutionId"`
	// Sequence is the parent record the fork branches after (≥ 1).
	Sequence uint64 `json:"sequence"`
	// EventID is that record's content-hashed id (EventID).
	EventID string `json:"eventId"`
	// History says how the fork's agent got the conversation up to the
	// fork point; absent on forks written before it existed.
	History History `json:"history,omitempty"`
}

// History says how a fork or a resumed run gave its agent the conversation
// before it. Persisted: never rename.
type History string

const (
	// HistoryNative: the agent CLI itself forked or resumed its own
	// session at the point (Claude Code's --resume, Codex's exec resume),
	// so the model sees exactly the conversation it saw then.
	HistoryNative History = "native"
	// HistoryReconstructed: the agent started a new session whose first
	// message holds the journal's conversation up to the point (prompts,
	// answers and the agent's messages, in order). The model reads it as
	// text: tool calls, their results and hidden reasoning are not in it,
	// so the history is an account, not an exact copy.
	HistoryReconstructed History = "reconstructed"
)

// Histories lists the accepted history values.
var Histories = []History{HistoryNative, HistoryReconstructed}

// ResumeLink is a resumed run's link to the execution it continues: the
// same AgentSession (the header's sessionId), a new run.
type ResumeLink struct {
	AgentExecutionID string `json:"agentExecutionId"`
	JournalID        string `json:"journalId"`
	// History says how the run got the session's conversation; absent on
	// resumes written before it existed.
	History History `json:"history,omitempty"`
}

// InterruptionReason says what cut a run short. The values are persisted
// and follow the agent DAG's InterruptionReason.
type InterruptionReason string

const (
	// InterruptCrash: the agent's process died of a signal nobody sent it
	// on purpose.
	InterruptCrash InterruptionReason = "crash"
	// InterruptShutdown: the daemon stopped and stopped its executions.
	InterruptShutdown InterruptionReason = "shutdown"
	// InterruptSystemRestart: the daemon died; recovery found the run
	// without a process.
	InterruptSystemRestart InterruptionReason = "system_restart"
	// InterruptTimeout: the run's time limit (the header's timeoutMs)
	// passed and the runtime stopped it.
	InterruptTimeout InterruptionReason = "timeout"
	// InterruptCanceled: an operator stopped the run.
	InterruptCanceled InterruptionReason = "canceled"
)

// InterruptionReasons lists the accepted interruption reasons.
var InterruptionReasons = []InterruptionReason{InterruptCrash, InterruptShutdown, InterruptSystemRestart, InterruptTimeout, InterruptCanceled}

// Interruption records that a run was ended by something other than the
// agent, and what was in flight: the turn, the message whose delivery or
// turn it cut short, and the input request left unanswered. Each is absent
// when nothing of the kind was in flight. A journal has at most one,
// appended just before the final state change.
type Interruption struct {
	Base
	Reason InterruptionReason `json:"reason"`
	// Detail is what the runtime saw, e.g. "signal: killed".
	Detail string `json:"detail,omitempty"`
	// Turn is the number of the turn that was running (1, 2 …).
	Turn uint64 `json:"turn,omitempty"`
	// MessageID is the message being delivered, or whose turn was running.
	MessageID string `json:"messageId,omitempty"`
	// InputRequestID is the input request that was open.
	InputRequestID string `json:"inputRequestId,omitempty"`
}

func (r *Interruption) validate(p *problems) {
	enum(p, "reason", r.Reason, InterruptionReasons)
	p.optionalID("messageId", r.MessageID)
	p.optionalID("inputRequestId", r.InputRequestID)
}

func (h *Header) validateLinks(p *problems) {
	p.optionalID("sessionId", h.SessionID)
	if f := h.ForkedFrom; f != nil {
		p.id("forkedFrom.journalId", f.JournalID)
		p.id("forkedFrom.agentExecutionId", f.AgentExecutionID)
		if f.Sequence == 0 {
			p.add("forkedFrom.sequence", "required: the parent's sequence the fork branches after (1 or more)")
		}
		if !validEventID(f.EventID) {
			p.add("forkedFrom.eventId", fmt.Sprintf("%q is not an event id (want sha256:<64 lowercase hex>, eventstore.EventID of the parent record)", f.EventID))
		}
		if f.JournalID != "" && f.JournalID == h.JournalID {
			p.add("forkedFrom.journalId", "a journal cannot fork itself")
		}
		optEnum(p, "forkedFrom.history", f.History, Histories)
	}
	if r := h.Resumes; r != nil {
		p.id("resumes.agentExecutionId", r.AgentExecutionID)
		p.id("resumes.journalId", r.JournalID)
		if r.JournalID != "" && r.JournalID == h.JournalID {
			p.add("resumes.journalId", "a journal cannot resume itself")
		}
		p.required("sessionId", h.SessionID != "")
		optEnum(p, "resumes.history", r.History, Histories)
	}
	if h.ForkedFrom != nil && h.Resumes != nil {
		p.add("resumes", "a fork starts a new session and resumes none: set forkedFrom or resumes, not both")
	}
}

// Session returns the AgentSession of the journal: its sessionId, or its
// own execution id when the header names none.
func (h *Header) Session() string {
	if h.SessionID != "" {
		return h.SessionID
	}
	return h.AgentExecutionID
}

// CheckLinks checks a header's links against what the store holds: a
// fork's parent journal exists, holds the sequence, and the record there has
// the event id the link pins; a resumed journal exists and its session is
// the one the header keeps. Both stores call it in EnsureJournal before
// writing, so a header with a broken link is refused and nothing is written.
func CheckLinks(ctx context.Context, s Store, h *Header) error {
	if f := h.ForkedFrom; f != nil && f.Sequence > 0 && validEventID(f.EventID) {
		// (A link of the wrong shape is refused by the header's validation.)
		parent, err := findJournal(ctx, s, f.JournalID, f.AgentExecutionID)
		if err != nil {
			return fmt.Errorf("%w: forkedFrom: %w", ErrBadLink, err)
		}
		if f.Sequence > parent.LastSequence {
			return fmt.Errorf("%w: forkedFrom.sequence %d is past the end of %s (its last sequence is %d)", ErrBadLink, f.Sequence, parent, parent.LastSequence)
		}
		r, err := recordAt(ctx, s, parent, f.Sequence)
		if err != nil {
			return fmt.Errorf("%w: forkedFrom: %w", ErrBadLink, err)
		}
		id, err := EventID(r)
		if err != nil {
			return fmt.Errorf("forkedFrom: %w", err)
		}
		if id != f.EventID {
			return fmt.Errorf("%w: forkedFrom.eventId %s is not the event id of %s sequence %d (%s)", ErrBadLink, f.EventID, parent, f.Sequence, id)
		}
	}
	if l := h.Resumes; l != nil && l.JournalID != "" && l.AgentExecutionID != "" {
		resumed, err := findJournal(ctx, s, l.JournalID, l.AgentExecutionID)
		if err != nil {
			return fmt.Errorf("%w: resumes: %w", ErrBadLink, err)
		}
		r, err := recordAt(ctx, s, resumed, 1)
		if err != nil {
			return fmt.Errorf("%w: resumes: %w", ErrBadLink, err)
		}
		if rh, ok := r.(*Header); ok && rh.Session() != h.SessionID {
			return fmt.Errorf("%w: sessionId %q is not the session of the resumed execution %s (%q): a resumed run keeps its session", ErrBadLink, h.SessionID, l.AgentExecutionID, rh.Session())
		}
	}
	return nil
}

// findJournal finds a journal by its id and its execution's id.
func findJournal(ctx context.Context, s Store, journalID, executionID string) (Reference, error) {
	ref, err := s.Lookup(ctx, executionID)
	if err == nil && ref.JournalID == journalID {
		return ref, nil
	}
	if err != nil && errors.Is(err, ErrClosed) {
		return Reference{}, err
	}
	// Another owner's execution of the same id, or several: the journal
	// list says which, if any, is the one.
	all, lerr := s.Journals(ctx)
	if lerr != nil {
		return Reference{}, lerr
	}
	for _, r := range all {
		if r.JournalID == journalID && r.AgentExecutionID == executionID {
			return r, nil
		}
	}
	return Reference{}, fmt.Errorf("%w: no journal %s of agent execution %q", ErrJournalNotFound, journalID, executionID)
}

// recordAt reads the record at one sequence of a journal.
func recordAt(ctx context.Context, s Store, ref Reference, seq uint64) (Record, error) {
	for e, err := range s.ReadJournal(ctx, ref, seq) {
		if err != nil {
			return nil, err
		}
		if e.Record.RecordBase().Sequence != seq {
			break
		}
		return e.Record, nil
	}
	return nil, fmt.Errorf("%s has no record at sequence %d", ref, seq)
}
