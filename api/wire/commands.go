package wire

import "github.com/agentjournal/agentjournal/commands"

// CommandRequest is the body of POST /v1/executions/{id}/commands.
type CommandRequest struct {
	// Text is the command as typed: "/checkpoint before the refactor".
	Text string `json:"text"`
	// Focus is "prompt" (the default) or "terminal": only with terminal
	// focus does text nothing else claims become raw terminal input.
	Focus commands.Focus `json:"focus,omitempty"`
	// ID names the invocation, so that a retry with the same id records
	// nothing new (1 to 100 letters, digits, '.', '_', ':', '-').
	ID string `json:"id,omitempty"`
}

// CommandResult answers a command: the typed invocation and, unless it was
// a dry run, what carrying it out recorded.
type CommandResult struct {
	Invocation *commands.Invocation `json:"invocation"`
	DryRun     bool                 `json:"dryRun"`
	Result     *InvokeResult        `json:"result,omitempty"`
}

// InvokeResult is what carrying out an invocation recorded.
type InvokeResult struct {
	// Sequence is the journal sequence of the record appended; 0 for
	// terminal input, which the journal never sees.
	Sequence uint64 `json:"sequence,omitempty"`
	// RecordType is the kind of that record.
	RecordType string `json:"recordType,omitempty"`
	// ID is the checkpoint, message, observation or effect id.
	ID string `json:"id,omitempty"`
	// Message is the acknowledgement of a message invocation.
	Message *MessageAck `json:"message,omitempty"`
	// Summary says what was done in a line.
	Summary string `json:"summary"`
}

// Completions answers GET /v1/executions/{id}/commands: the slash commands
// the execution offers whose name starts with the prefix asked.
type Completions struct {
	ExecutionID string                `json:"executionId"`
	Completions []commands.Completion `json:"completions"`
}
