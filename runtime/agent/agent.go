package agent

import (
	"errors"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Provider names: the output parser an agent's stdout is read by. They
// are written in diagnostics (adapter), so never rename one.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Copilot    = "copilot"
	ACP        = "acp"
)

// Diagnostic codes carried by the diagnostic signals the parsers emit. They
// are persisted in journals: never rename one.
const (
	// CodeMalformedLine: the line is not JSON (garbage or a truncated value).
	CodeMalformedLine = "malformed-line"
	// CodeLineTooLong: the line is longer than MaxLineBytes and was not read.
	CodeLineTooLong = "line-too-long"
	// CodeUnknownEvent: valid JSON whose event type (or content block or
	// item type) this parser does not know.
	CodeUnknownEvent = "unknown-event"
	// CodeBadEvent: a known event type whose fields have the wrong shape.
	CodeBadEvent = "bad-event"
	// CodeProviderError: the provider reported an error that is not the end
	// of the run (the end of a run is a failed_claim).
	CodeProviderError = "provider-error"
	// CodeTooManyEvents: one line produced more than MaxEventsPerLine events;
	// the rest were dropped.
	CodeTooManyEvents = "too-many-events"
)

// Bounds that keep a hostile or broken Stream from growing memory or the
// journal without limit.
const (
	// MaxLineBytes is the longest line a parser reads. Claude Code puts a
	// whole tool result (a file read, a command's output) on one line, so the
	// bound is generous; a longer line becomes a line-too-long diagnostic.
	MaxLineBytes = 4 << 20
	// MaxEventsPerLine bounds the events one line can produce.
	MaxEventsPerLine = 64
	// MaxOpenToolCalls bounds the tool calls tracked as open. When a Stream
	// opens more, the oldest open call is forgotten: its result, if it ever
	// arrives, is ignored.
	MaxOpenToolCalls = 1000
	// maxRemembered bounds the provider ids remembered to drop duplicates
	// (event ids, message ids whose usage was counted).
	maxRemembered = 1000
	// MaxKeyBytes bounds a provider id used as a map key.
	MaxKeyBytes = 256
	// MaxTextBytes bounds an assistant message's text in a message signal.
	MaxTextBytes = 64 << 10
	// MaxSummaryBytes bounds claim summaries and reasons.
	MaxSummaryBytes = 4 << 10
	// MaxRawBytes bounds the rawText of a diagnostic observation.
	MaxRawBytes = 2 << 10
	// MaxLabelBytes bounds target labels (commands) and tool names.
	MaxLabelBytes = 1 << 10
	// maxPathBytes bounds a target path.
	maxPathBytes = 4 << 10
	// MaxErrorBytes bounds the error of a failed tool call.
	MaxErrorBytes = 4 << 10
	// MaxTypeBytes bounds a provider's type name or version in a diagnostic.
	MaxTypeBytes = 100
	// MaxPlanItems bounds the items of a plan signal.
	MaxPlanItems = 200
	// maxPendingPlans bounds the todo lists of calls that have not ended.
	maxPendingPlans = 16
	// MaxToolInputBytes bounds the tool input carried by a needs-input
	// signal. A larger input (a Write of a big file) is left out, so that
	// the record stays within the store's size limit.
	MaxToolInputBytes = 256 << 10
)

// ErrInvalidPrefix reports an id prefix that is empty or so long that the
// ids built from it would exceed eventstore.MaxIDLength.
var ErrInvalidPrefix = errors.New("agent: invalid id prefix")

// MaxPrefixLength is the longest idPrefix NewStream accepts: an observation id is
// the prefix, a dash, the line number, a dash and the event index, and must
// stay within eventstore.MaxIDLength.
const MaxPrefixLength = eventstore.MaxIDLength - 42

// Event is one thing a parser found in a line of agent output. Exactly one
// of its fields is set.
type Event struct {
	// Observation has ObservationID, Source (provider-output), Confidence
	// and a Signal; the base fields are left for the appender.
	Observation *eventstore.Observation
	// Activity has its RecordID set (activity updates have no natural key);
	// the other base fields are left for the appender.
	Activity *eventstore.ActivityUpdated
	// Session says the parser learned the CLI's session id or version. The
	// runtime resumes the session by this id; nothing is appended for it.
	Session *Session
	// TurnEnd says a turn ended (the CLI's result): the claim observation
	// that reports it comes before it, in the same line or, when Copilot's
	// session.task_complete made the claim, an earlier one. Nothing is
	// appended for it; the runtime ends a one-shot execution on it.
	TurnEnd *TurnEnd
	// Commands says the agent advertised its slash commands (Claude Code's
	// init slash_commands, ACP's available_commands_update): the whole
	// list, sent again only when it changes. The runtime records them as
	// the execution's adapter-scoped message descriptors.
	Commands *Commands
}

// Commands is the list of slash commands an agent advertised.
type Commands struct {
	List []Command
}

// Command is one slash command an agent advertised.
type Command struct {
	Name        string
	Description string
	// Hint says what input it takes, when the agent says.
	Hint string
}

// Session is what a parser knows of the CLI's own session.
type Session struct {
	// ID is the CLI's session: Claude Code's session_id, Codex's
	// thread_id, Copilot CLI's session id.
	ID string
	// AgentVersion is the CLI's version when its output says it.
	AgentVersion string
}

// TurnEnd is the end of one turn of a CLI's session.
type TurnEnd struct {
	// Failed is true when the turn ended in an error (an error result, a
	// failed turn); Reason then says why.
	Failed bool
	Reason string
}

// Parser reads one agent's stdout, line by line. It keeps per-Stream state
// (open tool calls, usage already counted), so it serves exactly one
// process, and it is not safe for concurrent use.
type Parser interface {
	// Parse reads one line (one JSON value) of the agent's stdout. It never
	// fails: an unknown event type or a malformed line yields a diagnostic
	// observation, never a panic or an error. A blank line yields nothing.
	// Parse does not retain line.
	Parse(line []byte) []Event
}

// Flusher is implemented by parsers that may hold back what a line said
// until a later line tells what it meant: Codex reports a failure that ends
// a turn both as an error event and as turn.failed, Copilot CLI a session
// error before the result that fails the run with it. Flush returns what is
// still held; the runtime calls it once the agent's stdout has ended. Its
// events take the ids of a line after the last one parsed.
type Flusher interface {
	Flush() []Event
}

// Protocol names how the runtime speaks to an agent CLI. It is listed in
// the agents catalog (GET /v1/agents, docs/agents.md).
type Protocol string

const (
	// ProtocolStdin: any program; messages are text lines on its stdin,
	// signals stdout markers.
	ProtocolStdin Protocol = "stdin"
	// ProtocolStreamJSON: JSON lines both ways on a stdin kept open
	// (Claude Code's stream-json).
	ProtocolStreamJSON Protocol = "stream-json"
	// ProtocolExec: one process per turn, the prompt on its command line,
	// JSON lines on stdout (codex exec, copilot -p).
	ProtocolExec Protocol = "exec"
	// ProtocolACP: the Agent Client Protocol, JSON-RPC on stdin and stdout.
	ProtocolACP Protocol = "acp"
	// ProtocolAppServer: Codex's app-server protocol, JSON-RPC on the stdin
	// and stdout of one process for the whole conversation.
	ProtocolAppServer Protocol = "app-server"
)

// Capabilities say how an agent CLI is driven and what it does itself.
// What it does not do itself the runtime reconstructs from the journal.
type Capabilities struct {
	Protocol Protocol
	// NativeResume: the CLI continues a session of its own (a resume
	// hands it the session id).
	NativeResume bool
	// NativeFork: the CLI branches a session of its own at a message (a
	// fork hands it the session and the message).
	NativeFork bool
	// StatePaths are where the CLI keeps its own state (sessions,
	// settings, credentials), relative to the agent's HOME; a directory
	// ends with a slash. A sandboxed launch leaves them writable.
	StatePaths []string
	// StateEnv are variables that, when set, name a state directory of
	// the CLI's instead (CODEX_HOME), writable in a sandbox too.
	StateEnv []string
}

// Agent describes one kind of agent CLI and makes the drivers of its
// launches. It translates launch intent and messages for the CLI: the
// runtime stays the owner of lifecycle and semantic state.
type Agent interface {
	// ID names the agent in headers and on the command line.
	ID() string
	// Provider names the output parser for the agent's stdout ("" for
	// none: stdout markers only).
	Provider() string
	// Capabilities say how the CLI is driven and what it does itself.
	Capabilities() Capabilities
	// Shapes lists the session shapes the agent supports, its default
	// first; none for an agent without a provider session, whose process
	// is the execution.
	Shapes() []eventstore.SessionShape
	// Messages declares the message types the agent can be delivered.
	Messages(shape eventstore.SessionShape) []eventstore.MessageDescriptor
	// Approvals says how the agent's permission requests are answered.
	Approvals() *eventstore.ApprovalPolicy
	// LineTypes lists the line types (the "type" of a JSON line, an ACP
	// method) the agent's parser reads, sorted; none for an agent whose
	// output is not parsed. Any other line type becomes an unknown-event
	// diagnostic, once per type and process.
	LineTypes() []string
	// NewDriver returns the driver of one launch. command is what the
	// user gave (may be empty for the known CLIs).
	NewDriver(command []string, shape eventstore.SessionShape) Driver
}

// Driver runs one launch of an agent: the command lines of its turns and
// its structured input. A driver serves one execution; the runtime calls
// it from several goroutines.
type Driver interface {
	// Start returns the command line of a process that starts a turn with
	// prompt: the first turn when sessionID is "", else the next turn of
	// that provider session. An agent whose CLI takes its turns on stdin
	// starts one process at launch, and prompt is then "".
	Start(prompt, sessionID string) (program string, args []string, err error)
	// TurnsOnStdin is true when the CLI reads every turn's input on a stdin
	// kept open for the life of its process; false when each turn is a
	// process of its own, whose stdin is closed (/dev/null).
	TurnsOnStdin() bool
	// Encode turns an accepted message into the bytes written to the
	// agent's stdin, or ok=false when this driver cannot deliver that
	// message while the process runs.
	Encode(m *eventstore.MessageAccepted) (data []byte, ok bool, err error)
}

// Reader is a Driver that reads its CLI's output: the driver is the
// parser, so what it must remember of the output to answer the CLI (Claude
// Code's permission requests) comes out of the one parse of each line that
// also yields its events.
//
// A launch's processes run one after another, so one driver reads one
// process at a time: Output begins the next one's reading, after the
// previous process's stdout has ended and been flushed. Parse and Flush
// are called by one goroutine at a time (the runtime serializes a
// process's stdout and side log).
type Reader interface {
	Driver
	Parser
	// Output begins the reading of a new process of the launch, with
	// fresh per-process state. Ids are deterministic for the same input
	// stream: the observation id of the i-th event of line n is
	// "<idPrefix>-<n>-<i>" (lines count from 1, blank ones included), and
	// an activity update's record id is eventstore.RecordID(idPrefix,
	// activity.updated, "<n>-<i>"). Replaying the same capture through a
	// new reader with the same prefix therefore yields the same ids, and
	// the journal's duplicate detection drops a replay. The prefix must be
	// unique per process within a journal.
	Output(idPrefix string) error
}

// Continuation makes an agent CLI continue a session of its own at launch.
type Continuation struct {
	// Session is the CLI's session (Claude Code's session_id, Codex's
	// thread id, Copilot CLI's session id).
	Session string
	// Fork branches a new session off it instead of continuing it.
	Fork bool
	// At is the CLI's id of the last message kept (Claude Code's message
	// uuid); the whole session when empty.
	At string
	// Retelling is the conversation retold from the journal (ending where
	// the prompt follows), for an agent that says only at its handshake
	// whether it can continue the session (an ACP agent without
	// session/load): it starts a new session instead and gets the
	// retelling ahead of its first prompt.
	Retelling string
}

// Conversation is what a driver that talks to its agent on its own (an
// ACP client, which runs a handshake at start and answers the agent's
// requests) gets from the runtime once the process runs.
type Conversation struct {
	// Dir is the execution's working directory.
	Dir string
	// Write writes to the agent's stdin.
	Write func([]byte) error
	// Note records a diagnostic observation: something the driver saw go
	// wrong in the exchange.
	Note func(code, message string)
	// EndTurn ends the running turn when its end will not come from the
	// agent's output (the prompt failed).
	EndTurn func(failed bool, reason string)
	// Status records a status observation of the driver's own: how the
	// session was continued.
	Status func(phase, summary string)
}
