package commands

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/internal/oneof"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// Category is the kind of invocation a command resolves to (spec 003, "The
// parser returns one of"). Written into API answers and journal payloads:
// never rename.
type Category string

const (
	// CategoryEntityCommand is an Entity command: a checkpoint, a blocked
	// report or a verification request on the execution or its owner.
	CategoryEntityCommand Category = "entity-command"
	// CategoryAgentMessage is an AgentExecution message: one of the
	// execution's message descriptors, recorded as message.accepted.
	CategoryAgentMessage Category = "agent-message"
	// CategorySemanticOperation is an operation the daemon runs over the
	// execution's work tree, recorded as a daemon observation.
	CategorySemanticOperation Category = "semantic-operation"
	// CategoryTerminalInput is raw input for the terminal lane: transport
	// evidence in the recording, never a journal record.
	CategoryTerminalInput Category = "terminal-input"
)

// Categories lists every category, in resolution order.
var Categories = []Category{CategoryEntityCommand, CategoryAgentMessage, CategorySemanticOperation, CategoryTerminalInput}

// Focus is the lane the operator typed in.
type Focus string

const (
	// FocusPrompt is the structured prompt box (the default).
	FocusPrompt Focus = "prompt"
	// FocusTerminal is the terminal lane: the only focus under which text
	// nothing else claims becomes raw terminal input.
	FocusTerminal Focus = "terminal"
)

// Focuses lists the accepted focuses.
var Focuses = []Focus{FocusPrompt, FocusTerminal}

// ParseFocus reads a focus; "" is the prompt box.
func ParseFocus(s string) (Focus, error) {
	if s == "" {
		return FocusPrompt, nil
	}
	if f, ok := oneof.Parse(s, Focuses); ok {
		return f, nil
	}
	return "", fmt.Errorf("unknown focus %q (want one of: %s)", s, oneof.Join(Focuses))
}

// Operations of the Mission-native registry: what an invocation asks the
// daemon to do. Written into API answers: never rename.
const (
	OpCheckpoint    = "execution.checkpoint"
	OpBlocked       = "execution.blocked"
	OpVerify        = "owner.verification-request"
	OpContext       = "execution.context"
	OpSummarizeDiff = "worktree.summarize-diff"
	OpImpact        = "worktree.impact"
	OpMessage       = "execution.message"
	OpTerminalInput = "terminal.input"
)

// Limits of what a command carries.
const (
	// MaxText is the longest command text accepted, in bytes.
	MaxText = 64 << 10
	// MaxTitle is the longest /checkpoint title (runtime.MaxCheckpointTitle).
	MaxTitle = 200
	// MaxSymbol is the longest /impact symbol.
	MaxSymbol = 200
)

// View is what resolution needs to know of an execution: its posture,
// lanes and message descriptors (those of its header and those its agent
// advertised).
type View struct {
	ExecutionID string
	// AgentID is the execution's adapter id (claude-code, codex, an ACP
	// agent …): adapter-scoped descriptors of another adapter are not its.
	AgentID          string
	Posture          eventstore.Posture
	TerminalAttached bool
	Messages         []eventstore.MessageDescriptor
	// WorkingDirectory is where /read, /attach, /summarize-diff and
	// /impact look; without one they are not offered.
	WorkingDirectory string
	// CurrentInputRequestID is the open input request, which /answer
	// answers; "" for none.
	CurrentInputRequestID string
}

// Invocation is one resolved command: exactly one category, and the fields
// its target needs.
type Invocation struct {
	Category    Category               `json:"category"`
	Operation   string                 `json:"operation"`
	Command     string                 `json:"command,omitempty"`
	Portability eventstore.Portability `json:"portability"`
	AdapterID   string                 `json:"adapterId,omitempty"`
	// Text is the command as typed.
	Text string `json:"text"`
	// Records says what the daemon appends when it carries the invocation
	// out: a record kind, or "none" for terminal input.
	Records string `json:"records"`
	// Message fields: the message the execution is sent. A context message
	// (/read, /attach) gets its payload from the file when carried out.
	MessageType    string                  `json:"messageType,omitempty"`
	Payload        json.RawMessage         `json:"payload,omitempty"`
	Delivery       eventstore.DeliveryMode `json:"delivery,omitempty"`
	MutatesContext bool                    `json:"mutatesContext,omitempty"`
	// Arguments of the Mission-native commands.
	Title  string `json:"title,omitempty"`
	Reason string `json:"reason,omitempty"`
	Path   string `json:"path,omitempty"`
	Symbol string `json:"symbol,omitempty"`
	// Input is the raw terminal input (the text and a carriage return).
	Input string `json:"input,omitempty"`
}

// ParseError is text that resolves to no invocation: why, and the input
// shape expected.
type ParseError struct {
	Text     string `json:"text"`
	Reason   string `json:"reason"`
	Expected string `json:"expected"`
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s (want: %s)", e.Reason, e.Expected)
}

// Completion is one command offered for a prefix.
type Completion struct {
	Label          string                  `json:"label"`
	Command        string                  `json:"command"`
	Category       Category                `json:"category"`
	Portability    eventstore.Portability  `json:"portability"`
	AdapterID      string                  `json:"adapterId,omitempty"`
	InputShape     string                  `json:"inputShape"`
	Description    string                  `json:"description,omitempty"`
	Delivery       eventstore.DeliveryMode `json:"delivery,omitempty"`
	MutatesContext bool                    `json:"mutatesContext,omitempty"`
}

// arg is the argument a Mission-native command takes.
type arg int

const (
	argNone arg = iota
	argOptionalTitle
	argReason
	argPath
	argSymbol
)

// Spec is one command of the Mission-native registry.
type Spec struct {
	Name        string
	Category    Category
	Operation   string
	Shape       string
	Description string
	// Records is the record kind the command appends.
	Records string
	arg     arg
	// needsPrompt: it reaches the agent as a prompt message, so the
	// execution must declare one. needsTree: it reads the work tree.
	needsPrompt, needsTree bool
}

// Registry is the Mission-native registry, first in resolution order.
var Registry = []Spec{
	{Name: "checkpoint", Category: CategoryEntityCommand, Operation: OpCheckpoint, Shape: "/checkpoint [title]",
		Description: "Checkpoint the run as it is now (status, todos, approvals, artifacts)", Records: string(eventstore.KindCheckpoint), arg: argOptionalTitle},
	{Name: "blocked", Category: CategoryEntityCommand, Operation: OpBlocked, Shape: "/blocked <reason>",
		Description: "Report the work blocked, as the operator, with the reason", Records: string(eventstore.KindObservation), arg: argReason},
	{Name: "read", Category: CategoryAgentMessage, Operation: OpContext, Shape: "/read <path>",
		Description: "Send a work-tree file to the agent as context", Records: string(eventstore.KindMessage), arg: argPath, needsPrompt: true, needsTree: true},
	{Name: "attach", Category: CategoryAgentMessage, Operation: OpContext, Shape: "/attach <path>",
		Description: "Attach a work-tree file to the agent's context", Records: string(eventstore.KindMessage), arg: argPath, needsPrompt: true, needsTree: true},
	{Name: "verify", Category: CategoryEntityCommand, Operation: OpVerify, Shape: "/verify",
		Description: "Ask the owning Entity to verify the work", Records: string(eventstore.KindOwnerEffect)},
	{Name: "summarize-diff", Category: CategorySemanticOperation, Operation: OpSummarizeDiff, Shape: "/summarize-diff",
		Description: "Summarize the work tree's changes since the execution started", Records: string(eventstore.KindObservation), needsTree: true},
	{Name: "impact", Category: CategorySemanticOperation, Operation: OpImpact, Shape: "/impact <symbol>",
		Description: "Find where a symbol is defined and used in the work tree", Records: string(eventstore.KindObservation), arg: argSymbol, needsTree: true},
}

// Lookup returns the Mission-native command named name.
func Lookup(name string) (Spec, bool) {
	for _, s := range Registry {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$`)
	symbolPattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$.:]*$`)
)

const shapeAny = "/name [arguments], one of the commands the completions list"

// Resolve parses text typed with focus into exactly one invocation, or
// returns a *ParseError saying what was expected.
func Resolve(v View, text string, focus Focus) (*Invocation, error) {
	perr := func(reason, expected string) error {
		return &ParseError{Text: text, Reason: reason, Expected: expected}
	}
	switch {
	case len(text) > MaxText:
		return nil, perr(fmt.Sprintf("the command is %d bytes", len(text)), fmt.Sprintf("at most %d bytes", MaxText))
	case !utf8.ValidString(text):
		return nil, perr("the command is not valid UTF-8", "UTF-8 text")
	case strings.ContainsRune(text, 0):
		return nil, perr("the command holds a NUL byte", "text without NUL bytes")
	}
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return nil, perr("the command is empty", shapeAny)
	}
	if !strings.HasPrefix(trimmed, "/") {
		if focus == FocusTerminal {
			return terminal(v, text, "", perr)
		}
		return nil, perr(fmt.Sprintf("%q does not start with /", textclip.Bytes(trimmed, maxQuoted)), shapeAny+"; plain text is a prompt message, sent as such")
	}
	name, args, _ := strings.Cut(trimmed[1:], " ")
	if i := strings.IndexAny(name, "\t\r\n"); i >= 0 {
		name, args = name[:i], name[i+1:]+" "+args
	}
	args = strings.TrimSpace(args)
	if !namePattern.MatchString(name) {
		return nil, perr(fmt.Sprintf("%q is not a command name", "/"+textclip.Bytes(name, maxQuoted)), "/name: a letter or digit, then letters, digits, '_', '.', ':' or '-'")
	}
	// 1. The Mission-native registry.
	if s, ok := Lookup(name); ok {
		return mission(v, s, text, args, perr)
	}
	// 2 and 3. The execution's descriptors: cross-agent (and Mission-native
	// ones it declares) before adapter-scoped.
	for _, pass := range [][]eventstore.Portability{
		{eventstore.PortabilityMissionNative, eventstore.PortabilityCrossAgent},
		{eventstore.PortabilityAdapterScoped},
	} {
		for _, d := range v.Messages {
			if d.Type == name && slices.Contains(pass, d.Portability) && v.offers(d) {
				return message(v, d, text, args, perr)
			}
		}
	}
	// 4. The terminal-only hint.
	if focus == FocusTerminal {
		return terminal(v, text, name, perr)
	}
	for _, d := range v.Messages {
		if d.Type == name && d.Portability == eventstore.PortabilityTerminalOnly {
			return nil, perr(fmt.Sprintf("/%s is terminal-only: it is not a Mission command", name), "type it in the terminal lane (focus terminal)")
		}
	}
	expected := "one of: " + strings.Join(v.names(), ", ")
	if v.TerminalAttached {
		expected += "; a provider command Mission does not know goes to the terminal lane (focus terminal)"
	}
	return nil, perr(fmt.Sprintf("unknown command /%s for execution %s", name, v.ExecutionID), expected)
}

// mission resolves a Mission-native command.
func mission(v View, s Spec, text, args string, perr func(string, string) error) (*Invocation, error) {
	inv := &Invocation{Category: s.Category, Operation: s.Operation, Command: s.Name, Portability: eventstore.PortabilityMissionNative,
		Text: text, Records: s.Records}
	if s.needsTree && v.WorkingDirectory == "" {
		return nil, perr(fmt.Sprintf("/%s reads the work tree and execution %s has no working directory", s.Name, v.ExecutionID), "an execution launched in a working directory")
	}
	if s.needsPrompt {
		d, ok := v.prompt()
		if !ok {
			return nil, perr(fmt.Sprintf("/%s sends a prompt message and execution %s declares none", s.Name, v.ExecutionID), "an execution that takes prompt messages")
		}
		inv.MessageType, inv.Delivery, inv.MutatesContext = d.Type, d.Delivery, true
	}
	switch s.arg {
	case argNone:
		if args != "" {
			return nil, perr(fmt.Sprintf("/%s takes no arguments, got %q", s.Name, textclip.Bytes(args, maxQuoted)), s.Shape)
		}
	case argOptionalTitle:
		if strings.ContainsAny(args, "\r\n") {
			return nil, perr(fmt.Sprintf("the /%s title spans lines", s.Name), s.Shape+": a title of one line")
		}
		if len(args) > MaxTitle {
			return nil, perr(fmt.Sprintf("the /%s title is %d bytes", s.Name, len(args)), fmt.Sprintf("%s: a title of at most %d bytes", s.Shape, MaxTitle))
		}
		inv.Title = args
	case argReason:
		if args == "" {
			return nil, perr(fmt.Sprintf("/%s needs a reason", s.Name), s.Shape)
		}
		inv.Reason = args
	case argPath:
		p, err := cleanPath(args)
		if err != "" {
			return nil, perr(fmt.Sprintf("/%s %s", s.Name, err), s.Shape+": a path relative to the working directory, inside it")
		}
		inv.Path = p
	case argSymbol:
		switch {
		case args == "":
			return nil, perr(fmt.Sprintf("/%s needs a symbol", s.Name), s.Shape)
		case len(args) > MaxSymbol || !symbolPattern.MatchString(args):
			return nil, perr(fmt.Sprintf("%q is not a symbol", textclip.Bytes(args, maxQuoted)), s.Shape+": one identifier such as Runtime or eventstore.Append")
		}
		inv.Symbol = args
	}
	return inv, nil
}

// cleanPath checks a /read or /attach path without touching the disk; the
// daemon checks again where it really leads.
func cleanPath(p string) (string, string) {
	switch {
	case p == "":
		return "", "needs a path"
	case strings.ContainsAny(p, "\r\n"):
		return "", "path spans lines"
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
		return "", fmt.Sprintf("path %q is absolute", textclip.Bytes(p, maxQuoted))
	}
	c := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Sprintf("path %q leaves the working directory", textclip.Bytes(p, maxQuoted))
	}
	return c, ""
}

// message resolves a descriptor's message: the arguments are its text.
func message(v View, d eventstore.MessageDescriptor, text, args string, perr func(string, string) error) (*Invocation, error) {
	inv := &Invocation{Category: CategoryAgentMessage, Operation: OpMessage, Command: d.Type, Portability: d.Portability,
		AdapterID: d.AdapterID, Text: text, Records: string(eventstore.KindMessage), MessageType: d.Type,
		Delivery: d.Delivery, MutatesContext: d.MutatesContext}
	var payload any
	switch d.Type {
	case "prompt":
		if args == "" {
			return nil, perr("/prompt needs text", "/prompt <text>")
		}
		payload = map[string]string{"text": args}
	case "answer":
		switch {
		case v.CurrentInputRequestID == "":
			return nil, perr(fmt.Sprintf("execution %s has no open input request to answer", v.ExecutionID), "/answer <text>, while the agent waits for an answer")
		case args == "":
			return nil, perr("/answer needs text", "/answer <text>")
		}
		payload = map[string]string{"requestId": v.CurrentInputRequestID, "text": args}
	default:
		if args != "" {
			payload = map[string]string{"text": args}
		}
	}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("encode /%s payload: %w", d.Type, err)
		}
		inv.Payload = b
	}
	return inv, nil
}

// terminal resolves raw terminal input, which needs a terminal lane.
func terminal(v View, text, name string, perr func(string, string) error) (*Invocation, error) {
	if !v.TerminalAttached {
		return nil, perr(fmt.Sprintf("execution %s has no terminal lane (posture %s)", v.ExecutionID, v.Posture),
			"one of: "+strings.Join(v.names(), ", ")+" (raw input needs an execution with a terminal lane)")
	}
	return &Invocation{Category: CategoryTerminalInput, Operation: OpTerminalInput, Command: name, Portability: eventstore.PortabilityTerminalOnly,
		Text: text, Records: "none", Input: strings.TrimRight(text, "\r\n") + "\r"}, nil
}

// offers reports whether the execution offers descriptor d to an operator:
// an adapter-scoped one only when it is of the execution's own adapter, a
// terminal-only one only through the terminal lane.
func (v View) offers(d eventstore.MessageDescriptor) bool {
	switch d.Portability {
	case eventstore.PortabilityAdapterScoped:
		return d.AdapterID != "" && d.AdapterID == v.AgentID
	case eventstore.PortabilityTerminalOnly:
		return v.TerminalAttached && v.Posture != eventstore.PostureStructuredHeadless
	}
	return true
}

func (v View) prompt() (eventstore.MessageDescriptor, bool) {
	for _, d := range v.Messages {
		if d.Type == "prompt" {
			return d, true
		}
	}
	return eventstore.MessageDescriptor{}, false
}

// names lists the commands the execution offers in the prompt box.
func (v View) names() []string {
	var out []string
	for _, c := range Complete(v, "/", FocusPrompt) {
		out = append(out, c.Label)
	}
	return out
}

// Complete lists the commands the execution offers whose name starts with
// prefix (a leading / is optional; case does not matter): the Mission-native
// ones it can carry out, then its cross-agent descriptors, then its own
// adapter's adapter-scoped descriptors, and, with focus terminal on an
// execution with a terminal lane, its terminal-only ones.
func Complete(v View, prefix string, focus Focus) []Completion {
	p := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(prefix), "/"))
	match := func(name string) bool { return strings.HasPrefix(strings.ToLower(name), p) }
	var out []Completion
	taken := map[string]bool{}
	for _, s := range Registry {
		taken[s.Name] = true
		if !match(s.Name) || (s.needsTree && v.WorkingDirectory == "") {
			continue
		}
		if _, ok := v.prompt(); s.needsPrompt && !ok {
			continue
		}
		out = append(out, Completion{Label: "/" + s.Name, Command: s.Name, Category: s.Category, Portability: eventstore.PortabilityMissionNative,
			InputShape: s.Shape, Description: s.Description, MutatesContext: s.needsPrompt})
	}
	for _, pass := range []eventstore.Portability{eventstore.PortabilityCrossAgent, eventstore.PortabilityAdapterScoped, eventstore.PortabilityTerminalOnly} {
		for _, d := range v.Messages {
			port := d.Portability
			if port == eventstore.PortabilityMissionNative {
				port = eventstore.PortabilityCrossAgent
			}
			if port != pass || taken[d.Type] || !match(d.Type) || !v.offers(d) {
				continue
			}
			if pass == eventstore.PortabilityTerminalOnly && focus != FocusTerminal {
				continue
			}
			if d.Type == "answer" && v.CurrentInputRequestID == "" {
				continue
			}
			taken[d.Type] = true
			cat := CategoryAgentMessage
			if pass == eventstore.PortabilityTerminalOnly {
				cat = CategoryTerminalInput
			}
			out = append(out, Completion{Label: "/" + d.Type, Command: d.Type, Category: cat, Portability: d.Portability,
				AdapterID: d.AdapterID, InputShape: messageShape(d), Description: d.Description, Delivery: d.Delivery, MutatesContext: d.MutatesContext})
		}
	}
	return out
}

func messageShape(d eventstore.MessageDescriptor) string {
	switch d.Type {
	case "prompt", "answer":
		return "/" + d.Type + " <text>"
	}
	if d.Portability == eventstore.PortabilityTerminalOnly {
		return "/" + d.Type + " (terminal lane)"
	}
	return "/" + d.Type + " [text]"
}

// maxQuoted bounds how much of a refused text an error quotes.
const maxQuoted = 80

// ViewOf is what command resolution needs of an execution: its
// descriptors are those of its header, then those its agent advertised.
func ViewOf(s *execution.State) View {
	msgs := slices.Clone(s.ProtocolDescriptor.Messages)
	for _, m := range s.AdvertisedMessages {
		if _, ok := s.ProtocolDescriptor.Message(m.Type); !ok {
			msgs = append(msgs, m)
		}
	}
	return View{ExecutionID: s.ID, AgentID: s.AgentID, Posture: s.Posture, TerminalAttached: s.TerminalAttached,
		Messages: msgs, WorkingDirectory: s.WorkingDirectory, CurrentInputRequestID: s.CurrentInputRequestID}
}
