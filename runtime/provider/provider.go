package provider

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Provider names accepted by New. They name the agent CLI whose output a
// parser reads.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Copilot    = "copilot"
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

// Bounds that keep a hostile or broken stream from growing memory or the
// journal without limit.
const (
	// MaxLineBytes is the longest line a parser reads. Claude Code puts a
	// whole tool result (a file read, a command's output) on one line, so the
	// bound is generous; a longer line becomes a line-too-long diagnostic.
	MaxLineBytes = 4 << 20
	// MaxEventsPerLine bounds the events one line can produce.
	MaxEventsPerLine = 64
	// MaxOpenToolCalls bounds the tool calls tracked as open. When a stream
	// opens more, the oldest open call is forgotten: its result, if it ever
	// arrives, is ignored.
	MaxOpenToolCalls = 1000
	// maxRemembered bounds the provider ids remembered to drop duplicates
	// (event ids, message ids whose usage was counted).
	maxRemembered = 1000
	// maxKeyBytes bounds a provider id used as a map key.
	maxKeyBytes = 256
	// maxTextBytes bounds an assistant message's text in a message signal.
	maxTextBytes = 64 << 10
	// maxSummaryBytes bounds claim summaries and reasons.
	maxSummaryBytes = 4 << 10
	// maxRawBytes bounds the rawText of a diagnostic observation.
	maxRawBytes = 2 << 10
	// maxLabelBytes bounds target labels (commands) and tool names.
	maxLabelBytes = 1 << 10
	// maxPathBytes bounds a target path.
	maxPathBytes = 4 << 10
	// maxErrorBytes bounds the error of a failed tool call.
	maxErrorBytes = 4 << 10
	// maxTypeBytes bounds a provider's type name or version in a diagnostic.
	maxTypeBytes = 100
	// maxPlanItems bounds the items of a plan signal.
	maxPlanItems = 200
	// maxPendingPlans bounds the todo lists of calls that have not ended.
	maxPendingPlans = 16
	// maxSQLCalls bounds the sql tool calls whose todos statements wait
	// for the call to end.
	maxSQLCalls = 64
	// maxChoices bounds the choices of a question.
	maxChoices = 50
	// maxToolInputBytes bounds the tool input carried by a needs-input
	// signal. A larger input (a Write of a big file) is left out, so that
	// the record stays within the store's size limit.
	maxToolInputBytes = 256 << 10
)

var (
	// ErrUnknownProvider reports a provider name New does not accept.
	ErrUnknownProvider = errors.New("provider: unknown provider")
	// ErrInvalidPrefix reports an id prefix that is empty or so long that the
	// ids built from it would exceed eventstore.MaxIDLength.
	ErrInvalidPrefix = errors.New("provider: invalid id prefix")
)

// MaxPrefixLength is the longest idPrefix New accepts: an observation id is
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

// Parser reads one agent's stdout, line by line. It keeps per-stream state
// (open tool calls, usage already counted), so it serves exactly one launch,
// and it is not safe for concurrent use.
type Parser interface {
	// Parse reads one line (one JSON value) of the agent's stdout. It never
	// fails: an unknown event type or a malformed line yields a diagnostic
	// observation, never a panic or an error. A blank line yields nothing.
	// Parse does not retain line.
	Parse(line []byte) []Event
}

var constructors = map[string]func(*stream) Parser{
	ClaudeCode: func(s *stream) Parser { return &claudeParser{stream: s} },
	Codex:      func(s *stream) Parser { return &codexParser{stream: s} },
	Copilot:    func(s *stream) Parser { return &copilotParser{stream: s, sqlCalls: newRecent[string](maxSQLCalls)} },
	ACP:        func(s *stream) Parser { return &acpParser{stream: s} },
}

// lineTypes lists, per provider, the line types its parser reads.
var lineTypes = map[string][]string{
	ClaudeCode: claudeLineTypes,
	Codex:      codexLineTypes,
	Copilot:    copilotLineTypes,
	ACP:        acpLineTypes,
}

// KnownLineTypes lists the line types (the "type" of a JSON line) that the
// named provider's parser reads, sorted; nil for a provider New does not
// accept. Any other line type becomes an unknown-event diagnostic, once per
// type and parser. The package doc says what each becomes.
func KnownLineTypes(provider string) []string {
	types, ok := lineTypes[provider]
	if !ok {
		return nil
	}
	out := slices.Clone(types)
	slices.Sort(out)
	return out
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

var (
	_ Flusher = (*codexParser)(nil)
	_ Flusher = (*copilotParser)(nil)
)

// Providers lists the provider names New accepts, sorted.
func Providers() []string {
	out := make([]string, 0, len(constructors))
	for name := range constructors {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// New returns a parser for one launch of the named provider's CLI.
//
// Ids are deterministic for the same input stream: the observation id of the
// i-th event of line n is "<idPrefix>-<n>-<i>" (lines count from 1, blank
// ones included), and an activity update's record id is
// eventstore.RecordID(idPrefix, activity.updated, "<n>-<i>"). Replaying the
// same capture through a new parser with the same prefix therefore yields the
// same ids, and the journal's duplicate detection drops a replay. The prefix
// must be unique per launch within a journal (the launch id will do).
func New(provider string, idPrefix string) (Parser, error) {
	mk, ok := constructors[provider]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of: %s)", ErrUnknownProvider, provider, strings.Join(Providers(), ", "))
	}
	if idPrefix == "" || len(idPrefix) > MaxPrefixLength {
		return nil, fmt.Errorf("%w: %d bytes (want 1 to %d)", ErrInvalidPrefix, len(idPrefix), MaxPrefixLength)
	}
	return mk(newStream(provider, idPrefix)), nil
}
