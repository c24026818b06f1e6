package wire

import (
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// TranscriptKind names what a transcript entry tells.
type TranscriptKind string

// The kinds of transcript entry. They are part of the API's answers: never
// rename one.
const (
	// TranscriptPrompt is a message sent to the agent that is not an
	// answer: the prompt of a turn, a follow-up.
	TranscriptPrompt TranscriptKind = "prompt"
	// TranscriptMessage is the agent's text to the operator.
	TranscriptMessage TranscriptKind = "message"
	// TranscriptTool is one tool call, told once, when it ended (or when
	// the transcript ended with the call still open).
	TranscriptTool TranscriptKind = "tool"
	// TranscriptPlan is the agent's plan as a whole, each time it changed.
	TranscriptPlan TranscriptKind = "plan"
	// TranscriptQuestion is a question or a permission request the agent
	// waits on.
	TranscriptQuestion TranscriptKind = "question"
	// TranscriptAnswer is the answer to a question, and who gave it.
	TranscriptAnswer TranscriptKind = "answer"
	// TranscriptNote is anything else the agent said about its work: that
	// it is blocked, claims completion or failure, is ready for
	// verification; or an interruption.
	TranscriptNote TranscriptKind = "note"
	// TranscriptTurn is the end of a turn, with its tokens and time.
	TranscriptTurn TranscriptKind = "turn"
	// TranscriptEnd is the end of the execution.
	TranscriptEnd TranscriptKind = "end"
)

// Transcript is GET /v1/executions/{id}/transcript with format=json: what
// the execution's journal tells a reader, entry by entry, in journal order.
type Transcript struct {
	AgentExecutionID string            `json:"agentExecutionId"`
	Entries          []TranscriptEntry `json:"entries"`
}

// TranscriptEntry is one entry of a transcript. Kind says which of the
// optional parts it has: Text for a prompt, message, answer or note; Tool,
// Plan, Question, Turn or End for the others.
type TranscriptEntry struct {
	Kind TranscriptKind `json:"kind"`
	// Sequence is the journal sequence of the record the entry stands
	// on: for a tool call, its end.
	Sequence   uint64    `json:"sequence"`
	OccurredAt time.Time `json:"occurredAt"`
	// Source is who sent a prompt or an answer (operator, owner, daemon,
	// system).
	Source eventstore.MessageSource `json:"source,omitempty"`
	// Text is a prompt's, a message's, an answer's or a note's text.
	Text string `json:"text,omitempty"`
	// Markdown is true when Text is Markdown, as the agent's messages are
	// unless they say they are plain.
	Markdown bool                     `json:"markdown,omitempty"`
	Tool     *TranscriptToolCall      `json:"tool,omitempty"`
	Plan     []eventstore.PlanItem    `json:"plan,omitempty"`
	Question *TranscriptQuestionAsked `json:"question,omitempty"`
	Turn     *TranscriptTurnEnded     `json:"turn,omitempty"`
	End      *TranscriptExecutionEnd  `json:"end,omitempty"`
}

// TranscriptToolCall is a tool call as its start and end tell it.
type TranscriptToolCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Target is what the call worked on, as its start named it: the
	// command, the file.
	Target string `json:"target,omitempty"`
	// Status is succeeded or failed; started when the transcript ended
	// before the call did.
	Status   eventstore.ToolCallStatus `json:"status"`
	Error    string                    `json:"error,omitempty"`
	ExitCode *int64                    `json:"exitCode,omitempty"`
	// Output is the excerpt of the call's output its end carries, and
	// OutputBytes the size of the whole output when the excerpt was cut.
	Output      string `json:"output,omitempty"`
	OutputBytes int64  `json:"outputBytes,omitempty"`
	// DurationMs is the time from the call's start to its end, when the
	// journal has both.
	DurationMs int64 `json:"durationMs,omitempty"`
}

// TranscriptQuestionAsked is a question the agent asked.
type TranscriptQuestionAsked struct {
	RequestID string   `json:"requestId"`
	Question  string   `json:"question"`
	Choices   []string `json:"choices,omitempty"`
	// Permission is true for a request to run a tool, whose Tool names it.
	Permission bool   `json:"permission,omitempty"`
	Tool       string `json:"tool,omitempty"`
}

// TranscriptTurnEnded is the end of a turn: its number, whether it failed
// and why, the tokens the agent reported during it and how long it took
// from its start, each when the journal has it.
type TranscriptTurnEnded struct {
	Number     int             `json:"number"`
	Failed     bool            `json:"failed,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Tokens     execution.Usage `json:"tokens,omitzero"`
	DurationMs int64           `json:"durationMs,omitempty"`
}

// TranscriptExecutionEnd is the execution's final lifecycle and why, with
// the tokens of the whole execution and its time from the launch.
type TranscriptExecutionEnd struct {
	Lifecycle  eventstore.Lifecycle `json:"lifecycle"`
	Reason     string               `json:"reason,omitempty"`
	Tokens     execution.Usage      `json:"tokens,omitzero"`
	DurationMs int64                `json:"durationMs,omitempty"`
}
