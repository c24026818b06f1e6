package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
)

// The message descriptors every agent shares; an agent copies one to
// change what it says of it.
var (
	PromptMessage = eventstore.MessageDescriptor{Type: "prompt", Label: "Prompt", Description: "Instructions for the agent",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	AnswerMessage = eventstore.MessageDescriptor{Type: "answer", Label: "Answer", Description: "The answer to the agent's open input request (payload names requestId)",
		Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	InterruptMessage = eventstore.MessageDescriptor{Type: "interrupt", Label: "Interrupt", Description: "Interrupt the current turn (SIGINT)",
		Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityCrossAgent}
)

// UserCommand splits what the user gave into the program and the extra
// arguments, defaulting the program.
func UserCommand(command []string, program string) (string, []string) {
	if len(command) > 0 {
		return command[0], slices.Clone(command[1:])
	}
	return program, nil
}

// LookupEnv is the value of key in env, the last one when it is set twice
// (as exec does), "" when it is not set.
func LookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// SessionShapes are the shapes of a CLI with a session of its own: a
// conversation, its default, or one shot.
func SessionShapes() []eventstore.SessionShape {
	return []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
}

// Sorted returns a sorted copy of a parser's line types, for
// Agent.LineTypes.
func Sorted(lineTypes []string) []string {
	out := slices.Clone(lineTypes)
	slices.Sort(out)
	return out
}

// TurnAgent is the part of an Agent's method set that every CLI taking
// one prompt per process shares (Codex's exec, Copilot CLI's prompt mode).
// The CLI's Agent embeds it and adds its names, its tool policy, its line
// types and its driver.
type TurnAgent struct{}

// Capabilities: a process per turn resumes a session whole; it neither
// forks one nor cuts it at a turn.
func (TurnAgent) Capabilities() Capabilities {
	return Capabilities{Protocol: ProtocolExec, NativeResume: true}
}

// Shapes: the CLI has a session of its own.
func (TurnAgent) Shapes() []eventstore.SessionShape { return SessionShapes() }

// Messages are a prompt, which starts the next process, and an interrupt.
func (TurnAgent) Messages(shape eventstore.SessionShape) []eventstore.MessageDescriptor {
	p := PromptMessage
	p.Description = "The prompt of the next turn; it resumes the agent's session"
	if shape == eventstore.ShapeOneShot {
		p.Description = "The one prompt, given at launch"
	}
	return []eventstore.MessageDescriptor{p, InterruptMessage}
}

// AgentPolicy is the approval policy of a CLI that cannot ask for
// permission: it runs under the policy its flags set, recorded in the
// header.
func AgentPolicy(flags []string) *eventstore.ApprovalPolicy {
	return &eventstore.ApprovalPolicy{Mode: eventstore.ApprovalsAgentPolicy, Flags: slices.Clone(flags)}
}

// Turns is the driving half of a Driver for a CLI that takes one prompt
// per process: the prompt is an argument, stdin is closed, and a later turn
// resumes the session. The CLI's driver embeds it and adds the reading of
// the output.
type Turns struct {
	Command []string
	Program string
	// Args and Tail are the arguments before the user's extra ones and
	// after them, for a turn with prompt of session ("" for the first).
	Args, Tail func(prompt, session string) []string
}

// Start returns the command line of the turn's process.
func (d *Turns) Start(prompt, session string) (string, []string, error) {
	if strings.TrimSpace(prompt) == "" {
		return "", nil, fmt.Errorf("%s takes its prompt on the command line: a turn needs a prompt", d.Program)
	}
	program, extra := UserCommand(d.Command, d.Program)
	args := append(d.Args(prompt, session), extra...)
	return program, append(args, d.Tail(prompt, session)...), nil
}

// Continue accepts a session to resume: the first turn resumes it as later
// turns do. Neither Codex's exec nor Copilot CLI's prompt mode can fork a
// session or cut it at a message.
func (d *Turns) Continue(c Continuation) error {
	if c.Fork || c.At != "" {
		return fmt.Errorf("%s can only resume a session whole, not fork it at a message", d.Program)
	}
	return nil
}

// TurnsOnStdin is false: each turn is a process of its own.
func (*Turns) TurnsOnStdin() bool { return false }

// Encode delivers nothing while a turn runs: the next prompt starts the
// next process.
func (*Turns) Encode(*eventstore.MessageAccepted) ([]byte, bool, error) {
	return nil, false, nil
}
