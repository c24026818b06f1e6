package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// Message is one line of an agent's output, read: exactly one of Update,
// Permission, File, Result and Error is set for the methods and responses
// a client knows; Method alone for a request or notification it does not.
type Message struct {
	// ID is the JSON-RPC id as its JSON text; "" for a notification.
	ID     string
	Method string
	// Update is a session/update notification.
	Update *Update
	// Permission is a session/request_permission request.
	Permission *PermissionRequest
	// File is an fs/read_text_file or fs/write_text_file request.
	File *FileRequest
	// Command is a terminal/create request: a command the agent runs.
	Command *CommandRequest
	// Result is a successful response; Error a failed one.
	Result *Result
	Error  *Error
}

// Update kinds, as ACP names them (sessionUpdate).
const (
	UpdateAgentMessage = "agent_message_chunk"
	UpdateUserMessage  = "user_message_chunk"
	UpdateThought      = "agent_thought_chunk"
	UpdateToolCall     = "tool_call"
	UpdateToolCallEdit = "tool_call_update"
	UpdatePlan         = "plan"
	UpdateUsage        = "usage_update"
	// UpdateCommands is available_commands_update: the agent's slash
	// commands, the whole list each time.
	UpdateCommands = "available_commands_update"
)

// Update is a session/update notification.
type Update struct {
	Session string
	// Kind is the update's sessionUpdate.
	Kind string
	// Text is a chunk's text (message or thought); non-text content is
	// named in brackets.
	Text string
	// MessageID groups the chunks of one message, when the agent gives it.
	MessageID string
	Tool      *ToolCall
	Plan      []PlanEntry
	// Used and Size are a usage_update's context window: tokens in it and
	// its size.
	Used, Size int
	// Commands are an available_commands_update's commands.
	Commands []Command
}

// Command is one slash command an agent advertises.
type Command struct {
	Name        string
	Description string
	// Hint says what input the command takes, when it takes any.
	Hint string
}

// ToolCall is a tool_call or tool_call_update; fields the update leaves
// out are zero.
type ToolCall struct {
	ID    string
	Title string
	// Kind is ACP's tool kind: read, edit, delete, move, search, execute,
	// think, fetch, switch_mode or other.
	Kind string
	// Status is pending, in_progress, completed or failed.
	Status string
	// Paths are the locations the call touches.
	Paths []string
	// Input is the call's raw input, as JSON.
	Input json.RawMessage
	// Output is the text of the call's content, a diff told as the path
	// it edits (an error's message for a failed call).
	Output string
}

// PlanEntry is one entry of a plan.
type PlanEntry struct {
	Content, Priority, Status string
}

// PermissionRequest is a session/request_permission.
type PermissionRequest struct {
	Session string
	Tool    ToolCall
	Options []PermissionOption
}

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	ID, Name string
	// Kind is allow_once, allow_always, reject_once or reject_always.
	Kind string
}

// Permission option kinds.
const (
	AllowOnce    = string(sdk.PermissionOptionKindAllowOnce)
	AllowAlways  = string(sdk.PermissionOptionKindAllowAlways)
	RejectOnce   = string(sdk.PermissionOptionKindRejectOnce)
	RejectAlways = string(sdk.PermissionOptionKindRejectAlways)
)

// FileRequest is an agent's request to read or write a file.
type FileRequest struct {
	Session string
	Path    string
	Write   bool
}

// CommandRequest is an agent's request to run a command in a terminal.
type CommandRequest struct {
	Session string
	// Line is the command and its arguments, space-separated.
	Line string
}

// Result is a successful response: session/new's names the session;
// session/prompt's has a stop reason and maybe the turn's usage.
type Result struct {
	Session    string
	StopReason string
	Usage      *Usage
}

// PromptResult is the end of a turn.
type PromptResult struct {
	StopReason string
	Usage      *Usage
}

// Usage is a turn's token usage as the agent reports it.
type Usage struct {
	Input, Output, Total int64
}

// Error is a JSON-RPC error response.
type Error struct {
	Code    int
	Message string
}

var (
	// ErrNotJSON reports a line that is not JSON.
	ErrNotJSON = errors.New("acp: line is not JSON")
	// ErrNotJSONRPC reports JSON that is not a JSON-RPC 2.0 message.
	ErrNotJSONRPC = errors.New("acp: not a JSON-RPC 2.0 message")
	// ErrBadParams reports a known method whose params do not fit the
	// protocol's schema.
	ErrBadParams = errors.New("acp: params do not fit the schema")
)

type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Decode reads one line of an agent's output. A method the client does
// not know is returned with Method set and nothing else.
func Decode(line []byte) (Message, error) {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return Message{}, fmt.Errorf("%w: %v", ErrNotJSON, err)
		}
		return Message{}, fmt.Errorf("%w: %v", ErrNotJSONRPC, err)
	}
	m := Message{Method: env.Method}
	if len(env.ID) > 0 && string(env.ID) != "null" {
		m.ID = string(env.ID)
	}
	switch {
	case env.JSONRPC != "2.0":
		return m, fmt.Errorf("%w: jsonrpc is %q", ErrNotJSONRPC, env.JSONRPC)
	case env.Method == "" && m.ID == "":
		return m, fmt.Errorf("%w: neither a method nor an id", ErrNotJSONRPC)
	case env.Method == "" && env.Error != nil:
		m.Error = &Error{Code: env.Error.Code, Message: env.Error.Message}
		return m, nil
	case env.Method == "":
		var r struct {
			SessionID  string         `json:"sessionId"`
			StopReason string         `json:"stopReason"`
			Usage      *sdk.Usage     `json:"usage"`
			Meta       map[string]any `json:"_meta"`
		}
		if len(env.Result) > 0 && env.Result[0] == '{' {
			if err := json.Unmarshal(env.Result, &r); err != nil {
				return m, fmt.Errorf("%w: result: %v", ErrBadParams, err)
			}
		}
		m.Result = &Result{Session: r.SessionID, StopReason: r.StopReason, Usage: usage(r.Usage, r.Meta)}
		return m, nil
	}
	var err error
	switch env.Method {
	case sdk.ClientMethodSessionUpdate:
		var n sdk.SessionNotification
		if err = unmarshal(env.Params, &n); err == nil {
			m.Update, err = update(n)
		}
	case sdk.ClientMethodSessionRequestPermission:
		var p sdk.RequestPermissionRequest
		if err = unmarshal(env.Params, &p); err == nil {
			pr := permissionRequest(p)
			m.Permission = &pr
		}
	case sdk.ClientMethodFsReadTextFile:
		var p sdk.ReadTextFileRequest
		if err = unmarshal(env.Params, &p); err == nil {
			m.File = &FileRequest{Session: string(p.SessionId), Path: p.Path}
		}
	case sdk.ClientMethodFsWriteTextFile:
		var p sdk.WriteTextFileRequest
		if err = unmarshal(env.Params, &p); err == nil {
			m.File = &FileRequest{Session: string(p.SessionId), Path: p.Path, Write: true}
		}
	case sdk.ClientMethodTerminalCreate:
		var p sdk.CreateTerminalRequest
		if err = unmarshal(env.Params, &p); err == nil {
			m.Command = &CommandRequest{Session: string(p.SessionId), Line: strings.Join(append([]string{p.Command}, p.Args...), " ")}
		}
	}
	return m, err
}

// validator is what the SDK's generated types check of themselves.
type validator interface{ Validate() error }

func unmarshal(raw json.RawMessage, v validator) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadParams, err)
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadParams, err)
	}
	return nil
}

// usage is the turn's usage: the response's usage, or else Gemini CLI's,
// which it sends only as _meta.quota.token_count {input_tokens,
// output_tokens} (the sum over the turn's model calls).
func usage(u *sdk.Usage, meta map[string]any) *Usage {
	if u != nil {
		return &Usage{Input: int64(u.InputTokens), Output: int64(u.OutputTokens), Total: int64(u.TotalTokens)}
	}
	quota, _ := meta["quota"].(map[string]any)
	count, _ := quota["token_count"].(map[string]any)
	in, okIn := count["input_tokens"].(float64)
	out, okOut := count["output_tokens"].(float64)
	if !okIn || !okOut {
		return nil
	}
	return &Usage{Input: int64(in), Output: int64(out), Total: int64(in) + int64(out)}
}

func promptResult(r sdk.PromptResponse) PromptResult {
	return PromptResult{StopReason: string(r.StopReason), Usage: usage(r.Usage, r.Meta)}
}

func update(n sdk.SessionNotification) (*Update, error) {
	u := &Update{Session: string(n.SessionId)}
	s := n.Update
	switch {
	case s.AgentMessageChunk != nil:
		u.Kind, u.Text, u.MessageID = UpdateAgentMessage, blockText(s.AgentMessageChunk.Content), deref(s.AgentMessageChunk.MessageId)
	case s.UserMessageChunk != nil:
		u.Kind, u.Text, u.MessageID = UpdateUserMessage, blockText(s.UserMessageChunk.Content), deref(s.UserMessageChunk.MessageId)
	case s.AgentThoughtChunk != nil:
		u.Kind, u.Text, u.MessageID = UpdateThought, blockText(s.AgentThoughtChunk.Content), deref(s.AgentThoughtChunk.MessageId)
	case s.ToolCall != nil:
		t := s.ToolCall
		u.Kind = UpdateToolCall
		u.Tool = &ToolCall{ID: string(t.ToolCallId), Title: t.Title, Kind: string(t.Kind), Status: string(t.Status),
			Paths: paths(t.Locations), Input: rawJSON(t.RawInput), Output: contentText(t.Content, t.RawOutput)}
	case s.ToolCallUpdate != nil:
		t := s.ToolCallUpdate
		u.Kind = UpdateToolCallEdit
		u.Tool = &ToolCall{ID: string(t.ToolCallId), Title: deref(t.Title), Paths: paths(t.Locations),
			Input: rawJSON(t.RawInput), Output: contentText(t.Content, t.RawOutput)}
		if t.Kind != nil {
			u.Tool.Kind = string(*t.Kind)
		}
		if t.Status != nil {
			u.Tool.Status = string(*t.Status)
		}
	case s.Plan != nil:
		u.Kind = UpdatePlan
		u.Plan = make([]PlanEntry, 0, len(s.Plan.Entries))
		for _, e := range s.Plan.Entries {
			u.Plan = append(u.Plan, PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
		}
	case s.UsageUpdate != nil:
		u.Kind, u.Used, u.Size = UpdateUsage, s.UsageUpdate.Used, s.UsageUpdate.Size
	case s.AvailableCommandsUpdate != nil:
		u.Kind = UpdateCommands
		u.Commands = make([]Command, 0, len(s.AvailableCommandsUpdate.AvailableCommands))
		for _, c := range s.AvailableCommandsUpdate.AvailableCommands {
			cmd := Command{Name: c.Name, Description: c.Description}
			if c.Input != nil && c.Input.Unstructured != nil {
				cmd.Hint = c.Input.Unstructured.Hint
			}
			u.Commands = append(u.Commands, cmd)
		}
	case s.CurrentModeUpdate != nil:
		u.Kind = s.CurrentModeUpdate.SessionUpdate
	case s.ConfigOptionUpdate != nil:
		u.Kind = s.ConfigOptionUpdate.SessionUpdate
	case s.SessionInfoUpdate != nil:
		u.Kind = s.SessionInfoUpdate.SessionUpdate
	default:
		return nil, fmt.Errorf("%w: session/update of no known kind", ErrBadParams)
	}
	return u, nil
}

func permissionRequest(p sdk.RequestPermissionRequest) PermissionRequest {
	t := p.ToolCall
	r := PermissionRequest{Session: string(p.SessionId), Tool: ToolCall{ID: string(t.ToolCallId), Title: deref(t.Title),
		Paths: paths(t.Locations), Input: rawJSON(t.RawInput)}}
	if t.Kind != nil {
		r.Tool.Kind = string(*t.Kind)
	}
	for _, o := range p.Options {
		r.Options = append(r.Options, PermissionOption{ID: string(o.OptionId), Name: o.Name, Kind: string(o.Kind)})
	}
	return r
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func paths(ls []sdk.ToolCallLocation) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Path)
	}
	return out
}

// blockText is a content block's text; other content is named.
func blockText(b sdk.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return "[" + b.ResourceLink.Uri + "]"
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	case b.Resource != nil:
		return "[resource]"
	}
	return ""
}

// contentText is the text of a tool call's content, else its raw output.
func contentText(cs []sdk.ToolCallContent, raw any) string {
	var parts []string
	for _, c := range cs {
		switch {
		case c.Content != nil:
			if t := blockText(c.Content.Content); t != "" {
				parts = append(parts, t)
			}
		case c.Diff != nil && c.Diff.Path != "":
			// The change itself is in the file: its path says what the
			// call touched.
			parts = append(parts, "edited "+c.Diff.Path)
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	switch v := raw.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	return string(rawJSON(raw))
}
