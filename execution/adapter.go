package execution

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Adapter translates launch intent and messages for one kind of agent CLI.
// The execution stays the owner of lifecycle and semantic state; an adapter
// only shapes command lines, declares descriptors and encodes deliveries.
type Adapter interface {
	// ID names the adapter in headers and on the command line.
	ID() string
	// Command returns the program and arguments for a launch. command is
	// what the user gave (may be empty for the known CLIs).
	Command(command []string, prompt string) (string, []string, error)
	// Messages declares the message types the adapter can deliver.
	Messages() []eventstore.MessageDescriptor
	// Encode turns an accepted message into the bytes written to the
	// agent's structured input, or ok=false when this adapter cannot
	// deliver that message while the process runs.
	Encode(m *eventstore.MessageAccepted) (data []byte, ok bool, err error)
	// Provider names the output parser for the agent's stdout ("" for none:
	// stdout markers only).
	Provider() string
}

// Adapters lists the adapter ids.
func Adapters() []string { return []string{"generic", "claude-code", "codex", "copilot"} }

// NewAdapter returns the adapter with the given id.
func NewAdapter(id string) (Adapter, error) {
	switch id {
	case "generic", "":
		return genericAdapter{}, nil
	case "claude-code":
		return claudeAdapter{}, nil
	case "codex":
		return oneShotAdapter{id: "codex", program: "codex", args: []string{"exec", "--json"}, provider: "codex"}, nil
	case "copilot":
		return oneShotAdapter{id: "copilot", program: "copilot", args: []string{"--output-format", "json"}, promptFlag: "-p", provider: "copilot"}, nil
	}
	return nil, fmt.Errorf("unknown agent %q (want one of: %s)", id, strings.Join(Adapters(), ", "))
}

// messagePayload is the shape of prompt and answer payloads.
type messagePayload struct {
	Text      string `json:"text"`
	RequestID string `json:"requestId,omitempty"`
}

func payloadText(m *eventstore.MessageAccepted) (messagePayload, error) {
	var p messagePayload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return p, fmt.Errorf("message %s: payload is not {\"text\": …}: %w", m.MessageID, err)
	}
	return p, nil
}

var (
	promptMessage = eventstore.MessageDescriptor{Type: "prompt", Label: "Prompt", Description: "Instructions for the agent",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	answerMessage = eventstore.MessageDescriptor{Type: "answer", Label: "Answer", Description: "The answer to the agent's open input request (payload names requestId)",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	interruptMessage = eventstore.MessageDescriptor{Type: "interrupt", Label: "Interrupt", Description: "Interrupt the current turn (SIGINT)",
		Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityCrossAgent}
)

// genericAdapter runs any program: messages are written to stdin as text
// lines; signals come from stdout markers.
type genericAdapter struct{}

func (genericAdapter) ID() string       { return "generic" }
func (genericAdapter) Provider() string { return "" }
func (genericAdapter) Messages() []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{promptMessage, answerMessage, interruptMessage}
}
func (genericAdapter) Command(command []string, prompt string) (string, []string, error) {
	if len(command) == 0 {
		return "", nil, fmt.Errorf("the generic agent needs a command (after --)")
	}
	return command[0], slices.Clone(command[1:]), nil
}
func (genericAdapter) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := payloadText(m)
	if err != nil {
		return nil, false, err
	}
	line := p.Text
	if p.RequestID != "" {
		line = p.RequestID + ": " + p.Text
	}
	return []byte(strings.ReplaceAll(line, "\n", " ") + "\n"), true, nil
}

// claudeAdapter drives Claude Code in stream-json mode: prompts and answers
// are user messages on stdin, output is parsed as stream-json.
type claudeAdapter struct{}

func (claudeAdapter) ID() string       { return "claude-code" }
func (claudeAdapter) Provider() string { return "claude-code" }
func (claudeAdapter) Messages() []eventstore.MessageDescriptor {
	return []eventstore.MessageDescriptor{promptMessage, answerMessage, interruptMessage,
		{Type: "compact", Label: "Compact", Description: "Claude Code's /compact: summarize the conversation to free context",
			Delivery: eventstore.DeliveryBestEffort, MutatesContext: true, Portability: eventstore.PortabilityAdapterScoped, AdapterID: "claude-code"}}
}
func (claudeAdapter) Command(command []string, prompt string) (string, []string, error) {
	program := "claude"
	var extra []string
	if len(command) > 0 {
		program, extra = command[0], command[1:]
	}
	args := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, extra...)
	return program, args, nil
}
func (claudeAdapter) Encode(m *eventstore.MessageAccepted) ([]byte, bool, error) {
	p, err := payloadText(m)
	if err != nil {
		return nil, false, err
	}
	text := p.Text
	if m.MessageType == "compact" {
		text = "/compact " + text
	}
	if p.RequestID != "" {
		text = "Answer to " + p.RequestID + ": " + text
	}
	line, err := json.Marshal(map[string]any{"type": "user", "message": map[string]any{
		"role": "user", "content": []map[string]string{{"type": "text", "text": text}}}})
	return append(line, '\n'), true, err
}

// oneShotAdapter drives CLIs that take one prompt on the command line and
// accept no further input while running.
type oneShotAdapter struct {
	id, program, provider string
	args                  []string
	promptFlag            string // the flag before the prompt, "" for a bare argument
}

func (a oneShotAdapter) ID() string       { return a.id }
func (a oneShotAdapter) Provider() string { return a.provider }
func (a oneShotAdapter) Messages() []eventstore.MessageDescriptor {
	p := promptMessage
	p.Description = "The one prompt, given at launch"
	return []eventstore.MessageDescriptor{p, interruptMessage}
}
func (a oneShotAdapter) Command(command []string, prompt string) (string, []string, error) {
	program, extra := a.program, []string(nil)
	if len(command) > 0 {
		program, extra = command[0], command[1:]
	}
	args := append(slices.Clone(a.args), extra...)
	if prompt != "" {
		if a.promptFlag != "" {
			args = append(args, a.promptFlag)
		}
		args = append(args, prompt)
	}
	return program, args, nil
}
func (a oneShotAdapter) Encode(*eventstore.MessageAccepted) ([]byte, bool, error) {
	return nil, false, nil
}
